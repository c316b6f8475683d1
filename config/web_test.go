package config

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLinkSignerGeneratesOneKeyAndKeepsIt(t *testing.T) {
	dir := t.TempDir()
	w := Web{Listen: "127.0.0.1:0", BaseURL: "https://aicr.example.com/"}
	s1, err := w.LinkSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := w.LinkSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !s1.Enabled() || !bytes.Equal(s1.Key, s2.Key) || s1.BaseURL != "https://aicr.example.com" {
		t.Fatalf("signers differ or are off: %+v %+v", s1.Enabled(), s2.Enabled())
	}
	fi, err := os.Stat(filepath.Join(dir, LinkKeyFileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	link := s1.Link(3, "view", time.Now())
	if link == "" {
		t.Fatal("no link")
	}
}

func TestLinkSignerWithoutBaseURLSignsNothing(t *testing.T) {
	s, err := Web{Listen: "127.0.0.1:0"}.LinkSigner(t.TempDir())
	if err != nil || s.Enabled() {
		t.Fatalf("signer = %+v, %v", s.Enabled(), err)
	}
}

func TestLinkSignerRefusesShortKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Web{BaseURL: "https://x", LinkKeyFile: path}).LinkSigner(t.TempDir()); err == nil {
		t.Fatal("a short key file was accepted")
	}
}
