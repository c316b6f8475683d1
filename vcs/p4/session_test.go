package p4_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
	. "github.com/aicr-dev/aicr/vcs/p4"
)

// countCalls counts the logged invocations that run the p4 command cmd.
func countCalls(e *emuEnv, cmd string) int {
	n := 0
	for _, c := range e.calls() {
		for _, f := range strings.Fields(c) {
			if f == cmd {
				n++
				break
			}
		}
	}
	return n
}

// expiredTicketEnv: p4d issued T1 (expired) and now T2; the tickets file
// still holds T1; password_file holds pw.
func expiredTicketEnv(t *testing.T, pw string) (*emuEnv, string) {
	d := p4emu.Fixture()
	d.Password, d.Ticket, d.ExpiredTickets = "pw-right", "T2-FRESH", []string{"T1-STALE"}
	e := newEmu(t, d)
	dir := t.TempDir()
	tf := filepath.Join(dir, "tickets")
	if err := os.WriteFile(tf, []byte("localhost:1666=aicr:T1-STALE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pwFile := filepath.Join(dir, "p4.pass")
	if err := os.WriteFile(pwFile, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.cfg.TicketFile, e.cfg.PasswordFile = tf, pwFile
	return e, tf
}

// Issue 15 item 8: with password_file and ticket_file, a ticket that has
// expired is renewed by `p4 login` (the password on stdin, never argv)
// and the fetch goes on, logging in once.
func TestExpiredTicketLogsInAgainWithPasswordFile(t *testing.T) {
	e, tf := expiredTicketEnv(t, "pw-right")
	a := e.adapter(t)
	c, _ := fetch(t, a, "4")
	if c.Revision != "4" {
		t.Fatalf("fetched %+v", c)
	}
	if n := countCalls(e, "login"); n != 1 {
		t.Fatalf("%d p4 login calls, want 1:\n%s", n, strings.Join(e.calls(), "\n"))
	}
	if b, _ := os.ReadFile(tf); !strings.Contains(string(b), "aicr:T2-FRESH") || strings.Contains(string(b), "T1-STALE") {
		t.Fatalf("tickets file after login:\n%s", b)
	}
	for _, call := range e.calls() {
		if strings.Contains(call, "pw-right") {
			t.Errorf("password on argv: %s", call)
		}
	}
	// The fresh ticket serves the next fetch without another login.
	fetch(t, a, "4")
	if n := countCalls(e, "login"); n != 1 {
		t.Fatalf("%d p4 login calls after a second fetch, want still 1", n)
	}
}

func TestExpiredTicketWithWrongPasswordSaysWhy(t *testing.T) {
	e, _ := expiredTicketEnv(t, "pw-wrong")
	_, err := e.adapter(t).Fetch(context.Background(), "4", rundir.New(t.TempDir()))
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "Your session has expired") ||
		!strings.Contains(err.Error(), "p4 login with "+e.cfg.PasswordFile+" failed") || !strings.Contains(err.Error(), "Password invalid.") {
		t.Fatalf("err = %v, want ErrAuth naming the expiry, the password file and p4's answer", err)
	}
	if strings.Contains(err.Error(), "pw-wrong") {
		t.Error("the password is in the error")
	}
	if n := countCalls(e, "login"); n != 1 {
		t.Fatalf("%d p4 login calls, want exactly 1", n)
	}
}

// Without a password aicr cannot log in: the error says how to.
func TestExpiredTicketWithoutPasswordIsNotRetried(t *testing.T) {
	e, _ := expiredTicketEnv(t, "x")
	e.cfg.PasswordFile = ""
	_, err := e.adapter(t).Fetch(context.Background(), "4", rundir.New(t.TempDir()))
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "login` as the service user") {
		t.Fatalf("err = %v", err)
	}
	if n := countCalls(e, "login"); n != 0 {
		t.Fatalf("%d p4 login calls without a password", n)
	}
}

const testFingerprint = "A0:B1:C2:D3:E4:F5:6A:7B:8C:9D:E0:F1:2A:3B:4C:5D:6E:7F:A1:B2"

func sslEnv(t *testing.T) *emuEnv {
	d := p4emu.Fixture()
	d.SSLFingerprint = testFingerprint
	e := newEmu(t, d)
	e.cfg.Port = "ssl:localhost:1666"
	e.cfg.P4TrustFile = filepath.Join(t.TempDir(), "p4trust")
	return e
}

// Issue 15 item 8: an ssl: server the trust file does not know is a
// clear, permanent error with the fingerprint and the command to run.
func TestUntrustedSSLServerSaysHowToTrustIt(t *testing.T) {
	e := sslEnv(t)
	_, err := e.adapter(t).Fetch(context.Background(), "4", rundir.New(t.TempDir()))
	if !errors.Is(err, ErrUntrusted) || vcs.IsTransient(err) {
		t.Fatalf("err = %v, want a permanent ErrUntrusted", err)
	}
	for _, want := range []string{testFingerprint, "ssl_fingerprint = \"" + testFingerprint + "\"",
		"P4TRUST=" + e.cfg.P4TrustFile + " p4 -p ssl:localhost:1666 trust -i " + testFingerprint, "p4d -Gf"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	// Trusted by hand as the error says, the fetch works.
	if err := os.WriteFile(e.cfg.P4TrustFile, []byte("localhost:1666 "+testFingerprint+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fetch(t, e.adapter(t), "4")
}

// ssl_fingerprint pins the key: aicr installs it and goes on; a server
// presenting another key is refused as a changed identity.
func TestPinnedSSLFingerprint(t *testing.T) {
	e := sslEnv(t)
	e.cfg.SSLFingerprint = strings.ToLower(testFingerprint)
	fetch(t, e.adapter(t), "4")
	if b, _ := os.ReadFile(e.cfg.P4TrustFile); !strings.Contains(string(b), testFingerprint) {
		t.Fatalf("trust file:\n%s", b)
	}
	if n := countCalls(e, "trust"); n != 1 {
		t.Fatalf("%d p4 trust calls, want 1", n)
	}

	other := sslEnv(t)
	other.cfg.SSLFingerprint = "11:22:33:44:55:66:77:88:99:00:11:22:33:44:55:66:77:88:99:00"
	_, err := other.adapter(t).Fetch(context.Background(), "4", rundir.New(t.TempDir()))
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "CHANGED") || !strings.Contains(err.Error(), testFingerprint) {
		t.Fatalf("err = %v, want a changed-key ErrUntrusted naming the presented key", err)
	}
}

func TestSSLFingerprintValidation(t *testing.T) {
	base := Config{Port: "ssl:p4:1666", User: "aicr", DepotPaths: []string{"//depot/..."}}
	for fp, ok := range map[string]bool{
		testFingerprint: true,
		"":              true,
		"A0:B1":         false,
		strings.ReplaceAll(testFingerprint, ":", ""): false,
	} {
		c := base
		c.SSLFingerprint = fp
		if err := c.Validate(); (err == nil) != ok {
			t.Errorf("ssl_fingerprint %q: %v", fp, err)
		}
	}
	c := base
	c.Port, c.SSLFingerprint = "tcp:p4:1666", testFingerprint
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "not an ssl: port") {
		t.Errorf("tcp port with a fingerprint: %v", err)
	}
}

// A new ssl: server with an expired ticket needs both cures in one fetch:
// the pinned key first (p4 refuses before the server speaks), then a login.
func TestPinnedFingerprintAndExpiredTicketTogether(t *testing.T) {
	e, tf := expiredTicketEnv(t, "pw-right")
	d, err := p4emu.Load(os.Getenv(p4emu.EnvDepot))
	if err != nil {
		t.Fatal(err)
	}
	d.SSLFingerprint = testFingerprint
	if err := d.Save(os.Getenv(p4emu.EnvDepot)); err != nil {
		t.Fatal(err)
	}
	e.cfg.Port = "ssl:localhost:1666"
	e.cfg.P4TrustFile = filepath.Join(t.TempDir(), "p4trust")
	e.cfg.SSLFingerprint = testFingerprint
	if err := os.WriteFile(tf, []byte("ssl:localhost:1666=aicr:T1-STALE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fetch(t, e.adapter(t), "4")
	if countCalls(e, "trust") != 1 || countCalls(e, "login") != 1 {
		t.Fatalf("want one trust and one login:\n%s", strings.Join(e.calls(), "\n"))
	}
}
