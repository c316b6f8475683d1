package p4emu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrustFlowOnSSLPort(t *testing.T) {
	d := Fixture()
	d.SSLFingerprint = "A0:B1:C2:D3:E4:F5:6A:7B:8C:9D:E0:F1:2A:3B:4C:5D:6E:7F:A1:B2"
	trust := filepath.Join(t.TempDir(), "p4trust")
	env := map[string]string{"P4TRUST": trust}
	_, stderr, code := run(t, d, env, "-p", "ssl:p4.example.com:1666", "-G", "changes")
	if code != 1 || !strings.Contains(stderr, "The authenticity of 'p4.example.com:1666' can't be established") ||
		!strings.Contains(stderr, d.SSLFingerprint+"\nTo allow connection use the 'p4 trust' command.") {
		t.Fatalf("untrusted: exit %d, stderr %q", code, stderr)
	}
	// A tcp port is never checked.
	if _, stderr, code := run(t, d, env, "-p", "tcp:p4.example.com:1666", "changes"); code != 0 {
		t.Fatalf("tcp: exit %d %s", code, stderr)
	}
	if out, stderr, code := run(t, d, env, "-p", "ssl:p4.example.com:1666", "trust", "-y"); code != 0 || !strings.Contains(out, "Added trust for P4PORT 'ssl:p4.example.com:1666'") {
		t.Fatalf("trust -y: exit %d %q %q", code, out, stderr)
	}
	if _, stderr, code := run(t, d, env, "-p", "ssl:p4.example.com:1666", "changes"); code != 0 {
		t.Fatalf("after trust: exit %d %s", code, stderr)
	}
	// Another key for the same port is a changed identity.
	os.WriteFile(trust, []byte("p4.example.com:1666 11:22:33:44:55:66:77:88:99:00:11:22:33:44:55:66:77:88:99:00\n"), 0o600)
	if _, stderr, code := run(t, d, env, "-p", "ssl:p4.example.com:1666", "changes"); code != 1 || !strings.Contains(stderr, "WARNING P4PORT IDENTIFICATION HAS CHANGED!") {
		t.Fatalf("changed key: exit %d %q", code, stderr)
	}
}

func TestLoginWithPasswordRenewsAnExpiredTicket(t *testing.T) {
	d := Fixture()
	d.Password, d.Ticket, d.ExpiredTickets = "pw", "T2", []string{"T1"}
	tickets := filepath.Join(t.TempDir(), "tickets")
	os.WriteFile(tickets, []byte("localhost:1666=aicr:T1\n"), 0o600)
	env := map[string]string{"P4TICKETS": tickets}
	if _, stderr, code := run(t, d, env, "-p", "localhost:1666", "-u", "aicr", "changes"); code != 1 || !strings.Contains(stderr, msgExpired) {
		t.Fatalf("stale ticket: exit %d %q", code, stderr)
	}
	if _, stderr, code := runIn(t, d, env, "wrong\n", "-p", "localhost:1666", "-u", "aicr", "login"); code != 1 || !strings.Contains(stderr, "Password invalid.") {
		t.Fatalf("wrong password: exit %d %q", code, stderr)
	}
	if out, stderr, code := runIn(t, d, env, "pw\n", "-p", "localhost:1666", "-u", "aicr", "login"); code != 0 || !strings.Contains(out, "User aicr logged in.") {
		t.Fatalf("login: exit %d %q %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(tickets); string(b) != "localhost:1666=aicr:T2\n" {
		t.Fatalf("tickets file %q", b)
	}
	if _, stderr, code := run(t, d, env, "-p", "localhost:1666", "-u", "aicr", "changes"); code != 0 {
		t.Fatalf("fresh ticket: exit %d %q", code, stderr)
	}
}

// runIn is run with stdin.
func runIn(t *testing.T, d *Depot, env map[string]string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "depot.json")
	if err := d.Save(path); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == EnvDepot {
			return path
		}
		return env[k]
	}
	var out, errb strings.Builder
	code = Main(args, getenv, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}
