package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A real daemon with the deprecated [daemon] keep_runs_for says so in its
// log and still starts; once a review is delivered its src/ copies (here
// holding a planted key) are removed by the daemon's sweep, the rest of
// the run dir stays, and audit show says when.
func TestDaemonDropsDeliveredSources(t *testing.T) {
	e := newEnv(t, 1)
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "[notify]", "keep_runs_for = \"720h\"\n\n[notify]", 1))
	if err := os.WriteFile(e.config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	e.startDaemon()
	e.commit("plant", map[string]string{"src/config.go": plantedFile})
	runs := e.waitFinished(e.store(), 1, 60*time.Second)
	e.waitReports(60*time.Second, atLeast(1))
	runDir := filepath.Join(e.dir, "data", "runs", strconv.FormatInt(runs[0].ID, 10))
	if _, err := os.Stat(filepath.Join(runDir, "change.json")); err != nil {
		t.Fatalf("run dir: %v", err)
	}
	// The sweep runs every minute and at start: a restart runs it now.
	e.stopDaemon()
	log, _ := os.ReadFile(e.daemonLog)
	if !strings.Contains(string(log), "keep_runs_for is deprecated") {
		t.Errorf("daemon log does not warn about keep_runs_for:\n%s", log)
	}
	e.startDaemon()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := e.store().GetRun(context.Background(), runs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if !d.SourcesDroppedAt.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(e.daemonLog)
			t.Fatalf("sources of run %d not dropped; daemon log:\n%s", runs[0].ID, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(runDir, "src")); !os.IsNotExist(err) {
		t.Errorf("src/ still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(runDir, "change.json")); err != nil {
		t.Errorf("change.json went with src/: %v", err)
	}
	if out := e.aicr("audit", "show", strconv.FormatInt(runs[0].ID, 10), "--config", e.config); !strings.Contains(out, "sources (src/, diff.patch, agent/) removed on") {
		t.Errorf("audit show:\n%s", out)
	}
}
