package hmacsig

import (
	"errors"
	"testing"
)

// The vector was computed independently (Python's hmac module):
// hmac.new(b"aicr-test-secret", b'1700000000.{"hello":"world"}', sha256).
const (
	vectorSecret = "aicr-test-secret"
	vectorTS     = 1700000000
	vectorBody   = `{"hello":"world"}`
	vectorSig    = "sha256=4439163e4214b1ad886b0af963aa21c8f85fd194820148b26ef716e1f0ea3c35"
)

func TestSignKnownAnswer(t *testing.T) {
	if got := Sign([]byte(vectorSecret), vectorTS, []byte(vectorBody)); got != vectorSig {
		t.Fatalf("Sign = %s, want %s", got, vectorSig)
	}
}

func TestVerify(t *testing.T) {
	secret, body := []byte(vectorSecret), []byte(vectorBody)
	if err := Verify(secret, vectorTS, body, vectorSig); err != nil {
		t.Fatalf("valid signature: %v", err)
	}
	bad := []struct {
		name   string
		secret []byte
		ts     int64
		body   string
		sig    string
		want   error
	}{
		{"other body", secret, vectorTS, `{"hello":"there"}`, vectorSig, ErrBadSignature},
		{"other timestamp", secret, vectorTS + 1, vectorBody, vectorSig, ErrBadSignature},
		{"other secret", []byte("x"), vectorTS, vectorBody, vectorSig, ErrBadSignature},
		{"no prefix", secret, vectorTS, vectorBody, vectorSig[len(Prefix):], ErrBadSignature},
		{"not hex", secret, vectorTS, vectorBody, "sha256=zz", ErrBadSignature},
		{"empty secret", nil, vectorTS, vectorBody, vectorSig, ErrNoSecret},
	}
	for _, c := range bad {
		if err := Verify(c.secret, c.ts, []byte(c.body), c.sig); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}
