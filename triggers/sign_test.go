package triggers

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/hmacsig"
)

func TestSignKnownVector(t *testing.T) {
	// Computed independently: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac s3cret
	got := Sign([]byte("s3cret"), 1700000000, []byte(`{"a":1}`))
	want := "sha256=1698a50bc74d1ff1db85c4e0a5297c2ad9fdba245d5737cdb789e4cc6e098940"
	if got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	secret := []byte("s3cret")
	body := []byte(`{"v":1,"repo":"main","revision":"42"}`)
	now := time.Unix(1_700_000_000, 0)
	ts := now.Unix()
	at := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	signAt := func(d time.Duration) string { return Sign(secret, now.Add(d).Unix(), body) }

	tests := []struct {
		name      string
		secret    []byte
		timestamp string
		signature string
		body      []byte
		want      error
	}{
		{"good", secret, at(0), Sign(secret, ts, body), body, nil},
		{"wrong secret", secret, at(0), Sign([]byte("other"), ts, body), body, ErrBadSignature},
		{"tampered body", secret, at(0), Sign(secret, ts, body), []byte(`{"v":1,"repo":"main","revision":"43"}`), ErrBadSignature},
		{"timestamp not the signed one", secret, at(time.Second), Sign(secret, ts, body), body, ErrBadSignature},
		{"missing timestamp", secret, "", Sign(secret, ts, body), body, ErrMissingSignature},
		{"missing signature", secret, at(0), "", body, ErrMissingSignature},
		{"non-numeric timestamp", secret, "yesterday", Sign(secret, ts, body), body, ErrBadTimestamp},
		{"fractional timestamp", secret, at(0) + ".5", Sign(secret, ts, body), body, ErrBadTimestamp},
		{"six minutes old", secret, at(-6 * time.Minute), signAt(-6 * time.Minute), body, ErrStaleTimestamp},
		{"six minutes ahead", secret, at(6 * time.Minute), signAt(6 * time.Minute), body, ErrStaleTimestamp},
		{"exactly max skew old", secret, at(-MaxSkew), signAt(-MaxSkew), body, nil},
		{"exactly max skew ahead", secret, at(MaxSkew), signAt(MaxSkew), body, nil},
		{"one second past max skew", secret, at(-MaxSkew - time.Second), signAt(-MaxSkew - time.Second), body, ErrStaleTimestamp},
		{"no sha256 prefix", secret, at(0), Sign(secret, ts, body)[len("sha256="):], body, ErrBadSignature},
		{"not hex", secret, at(0), "sha256=zz", body, ErrBadSignature},
		{"empty secret on receiver", nil, at(0), Sign(nil, ts, body), body, ErrNoSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.secret, tt.timestamp, tt.signature, tt.body, now)
			if tt.want == nil && err != nil {
				t.Fatalf("Verify: %v, want nil", err)
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestVerifyErrorsDoNotLeakSecret(t *testing.T) {
	secret := []byte("hunter2-very-secret")
	body := []byte("x")
	now := time.Now()
	for _, sig := range []string{"sha256=00", Sign([]byte("nope"), now.Unix(), body)} {
		err := Verify(secret, strconv.FormatInt(now.Add(-time.Hour).Unix(), 10), sig, body, now)
		assertNoSecret(t, err.Error(), secret)
	}
}

func TestReplayGuard(t *testing.T) {
	var g ReplayGuard // zero value must work
	now := time.Unix(1_700_000_000, 0)
	if err := g.Check("sha256=aa", now); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := g.Check("sha256=AA", now.Add(time.Second)); !errors.Is(err, ErrReplayed) {
		t.Fatalf("second use: %v, want ErrReplayed", err)
	}
	if err := g.Check("sha256=bb", now.Add(time.Second)); err != nil {
		t.Fatalf("other signature: %v", err)
	}
	if err := g.Check("sha256=aa", now.Add(2*MaxSkew)); !errors.Is(err, ErrReplayed) {
		t.Fatalf("replay at the window's edge: %v, want ErrReplayed", err)
	}
	// Past the window the signature's timestamp would fail Verify anyway,
	// so the guard forgets it and memory stays bounded.
	later := now.Add(2*MaxSkew + 2*time.Minute)
	if err := g.Check("sha256=cc", later); err != nil {
		t.Fatalf("new signature later: %v", err)
	}
	if n := g.Len(); n != 1 {
		t.Fatalf("guard remembers %d signatures after expiry, want 1", n)
	}
}

func TestReplayGuardConcurrent(t *testing.T) {
	g := NewReplayGuard()
	now := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if g.Check("sha256=same", now) == nil {
				mu.Lock()
				accepted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if accepted != 1 {
		t.Fatalf("%d concurrent uses accepted, want exactly 1", accepted)
	}
}

func TestNewSignedRequestVerifies(t *testing.T) {
	secret := []byte("s3cret")
	now := time.Now()
	req, err := NewSignedRequest(context.Background(), "http://127.0.0.1:7878/", secret, Event{VCS: "svn", Repo: "main", Revision: "7"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != "POST" || req.URL.String() != "http://127.0.0.1:7878/v1/events" {
		t.Fatalf("request %s %s", req.Method, req.URL)
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(secret, req.Header.Get(HeaderTimestamp), req.Header.Get(HeaderSignature), body, now); err != nil {
		t.Fatalf("Verify of NewSignedRequest: %v", err)
	}
	if _, err := NewSignedRequest(context.Background(), "http://x", nil, Event{}, now); !errors.Is(err, ErrNoSecret) {
		t.Fatalf("no secret: %v, want ErrNoSecret", err)
	}
}

// The trigger protocol and the webhook channel share one scheme: what
// hmacsig signs, Verify accepts, and its rejection is hmacsig's error.
func TestVerifyIsTheHmacsigScheme(t *testing.T) {
	secret, body := []byte("s3cret"), []byte(`{"a":1}`)
	now := time.Unix(1_700_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	if err := Verify(secret, ts, hmacsig.Sign(secret, now.Unix(), body), body, now); err != nil {
		t.Fatalf("hmacsig signature rejected: %v", err)
	}
	err := Verify(secret, ts, hmacsig.Sign([]byte("other"), now.Unix(), body), body, now)
	if !errors.Is(err, hmacsig.ErrBadSignature) {
		t.Fatalf("wrong secret: %v, want hmacsig.ErrBadSignature", err)
	}
}
