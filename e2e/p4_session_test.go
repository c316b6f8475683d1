package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/internal/p4emu"
)

const e2eFingerprint = "A0:B1:C2:D3:E4:F5:6A:7B:8C:9D:E0:F1:2A:3B:4C:5D:6E:7F:A1:B2"

// p4SessionEnv is newP4Env whose ssl: server presents e2eFingerprint and
// whose tickets file holds a ticket p4d has expired; repoKeys are added
// to the [[repo]]. It returns the trust and tickets files.
func p4SessionEnv(t *testing.T, repoKeys func(trust, tickets, password string) string) (*env, string, string) {
	e := newP4Env(t)
	depot := os.Getenv(p4emu.EnvDepot)
	d, err := p4emu.Load(depot)
	if err != nil {
		t.Fatal(err)
	}
	d.SSLFingerprint, d.Password, d.Ticket, d.ExpiredTickets = e2eFingerprint, "p4-pass", "T2-FRESH", []string{"T1-STALE"}
	if err := d.Save(depot); err != nil {
		t.Fatal(err)
	}
	trust := filepath.Join(e.dir, "p4trust")
	tickets := filepath.Join(e.dir, "p4tickets")
	password := filepath.Join(e.dir, "p4-password")
	if err := os.WriteFile(tickets, []byte("ssl:p4.example.com:1666=aicr:T1-STALE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(password, []byte("p4-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	anchor := `depot_paths = ["//depot/main/...", "-//depot/main/vendor/..."]` + "\n"
	out := strings.Replace(string(cfg), anchor, anchor+repoKeys(trust, tickets, password), 1)
	if out == string(cfg) {
		t.Fatal("the p4 env's config changed shape")
	}
	if err := os.WriteFile(e.config, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return e, trust, tickets
}

// Issue 15 item 8, through the config file and a real daemon: the ssl:
// server's key is pinned with ssl_fingerprint (aicr writes p4trust_file),
// and the expired ticket is renewed with password_file; the change is
// reviewed.
func TestP4OverSSLWithExpiredTicketIsReviewed(t *testing.T) {
	e, trust, tickets := p4SessionEnv(t, func(trust, tickets, password string) string {
		return "p4trust_file = \"" + trust + "\"\nssl_fingerprint = \"" + e2eFingerprint + "\"\n" +
			"ticket_file = \"" + tickets + "\"\npassword_file = \"" + password + "\"\n"
	})
	e.startDaemon()
	e.notifyP4("7")
	runs := e.waitFinished(e.store(), 1, 60*time.Second)
	if runs[0].Status != "succeeded" || runs[0].ProblemCount == 0 {
		log, _ := os.ReadFile(e.daemonLog)
		t.Fatalf("run: %+v\ndaemon log:\n%s", runs[0], log)
	}
	// The reconciler's first p4 call, which met the untrusted key and the
	// expired ticket together, was cured as well.
	if log, _ := os.ReadFile(e.daemonLog); strings.Contains(string(log), "login required") || strings.Contains(string(log), "not trusted") {
		t.Errorf("a p4 call failed although both cures were configured:\n%s", log)
	}
	if b, _ := os.ReadFile(trust); !strings.Contains(string(b), "p4.example.com:1666 "+e2eFingerprint) {
		t.Errorf("trust file:\n%s", b)
	}
	if b, _ := os.ReadFile(tickets); !strings.Contains(string(b), "aicr:T2-FRESH") {
		t.Errorf("tickets file:\n%s", b)
	}
}

// Without a pinned key the review fails with the fingerprint and the
// command that trusts it, and nothing is trusted behind the operator's back.
func TestP4UntrustedSSLServerSaysHowToTrustIt(t *testing.T) {
	e, trust, _ := p4SessionEnv(t, func(trust, tickets, password string) string {
		return "p4trust_file = \"" + trust + "\"\n"
	})
	cmd := exec.Command(aicrBin, "review", "p4", "--repo", "depot", "--change", "7", "--config", e.config, "--format", "json")
	cmd.Dir = e.dir
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("aicr review p4: %v, want exit 1\n%s", err, out)
	}
	var res struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	for _, want := range []string{e2eFingerprint, "p4 -p ssl:p4.example.com:1666 trust -i " + e2eFingerprint, "P4TRUST=" + trust} {
		if !strings.Contains(res.Error, want) {
			t.Errorf("error does not say %q:\n%s", want, res.Error)
		}
	}
	if _, err := os.Stat(trust); err == nil {
		t.Error("a trust file was written without ssl_fingerprint")
	}
}
