package weblink

import (
	"bytes"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

func testSigner() Signer {
	return Signer{Key: bytes.Repeat([]byte{7}, MinKeyBytes), BaseURL: "https://aicr.example.com/", TTL: time.Hour}
}

func parse(t *testing.T, link string) (path, exp, sig string) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path, u.Query().Get("exp"), u.Query().Get("sig")
}

func TestLinkVerifies(t *testing.T) {
	s, now := testSigner(), time.Unix(1_700_000_000, 0)
	link := s.Link(42, "false_positive", now)
	if !strings.HasPrefix(link, "https://aicr.example.com/f/42/false_positive?") {
		t.Fatalf("link = %s", link)
	}
	path, exp, sig := parse(t, link)
	if path != Path(42, "false_positive") {
		t.Errorf("path = %s", path)
	}
	if err := s.Verify(42, "false_positive", exp, sig, now.Add(59*time.Minute)); err != nil {
		t.Errorf("fresh link: %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	s, now := testSigner(), time.Unix(1_700_000_000, 0)
	_, exp, sig := parse(t, s.Link(42, "false_positive", now))
	other := s
	other.Key = bytes.Repeat([]byte{8}, MinKeyBytes)
	cases := []struct {
		name        string
		signer      Signer
		id          int64
		action, exp string
		sig         string
		at          time.Time
		want        error
	}{
		{"another finding", s, 43, "false_positive", exp, sig, now, ErrBadSignature},
		{"another action", s, 42, "useful", exp, sig, now, ErrBadSignature},
		{"a later expiry", s, 42, "false_positive", "9999999999", sig, now, ErrBadSignature},
		{"another key", other, 42, "false_positive", exp, sig, now, ErrBadSignature},
		{"expired", s, 42, "false_positive", exp, sig, now.Add(time.Hour), ErrExpired},
		{"no signature", s, 42, "false_positive", exp, "", now, ErrBadSignature},
		{"no key", Signer{}, 42, "false_positive", exp, sig, now, ErrNoKey},
	}
	for _, c := range cases {
		if err := c.signer.Verify(c.id, c.action, c.exp, c.sig, c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestDisabledSignerMakesNoLinks(t *testing.T) {
	now := time.Now()
	if l := (Signer{BaseURL: "https://x"}).Link(1, ActionView, now); l != "" {
		t.Errorf("no key: %q", l)
	}
	if l := (Signer{Key: bytes.Repeat([]byte{1}, MinKeyBytes)}).Link(1, ActionView, now); l != "" {
		t.Errorf("no base url: %q", l)
	}
	if l := (Signer{Key: []byte("short"), BaseURL: "https://x"}).Link(1, ActionView, now); l != "" {
		t.Errorf("short key: %q", l)
	}
}
