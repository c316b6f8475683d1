package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// A VCS host whose daemon runs elsewhere: its spool is not drained by
// the daemon. `aicr spool list` shows what the hook spooled with repo,
// revision, age and the hook's reason; `aicr spool requeue` posts it to
// the real daemon now (reviews arrive in the file channel), moves a
// forged file to rejected/ and exits 1 for it; a forged file cannot be
// brought back from rejected/.
func TestSpoolListAndRequeueWithARealDaemon(t *testing.T) {
	e := newEnv(t, 1)
	e.commit("one", map[string]string{"src/config.go": cleanFile})
	e.commit("two", map[string]string{"src/config.go": plantedFile})
	waitSpooled(t, e.spool, 2)
	forged := "00000000000000000001-main-99.json"
	if err := os.WriteFile(filepath.Join(e.spool, forged),
		[]byte(`{"timestamp":1,"signature":"sha256=00","event":{"v":1,"vcs":"svn","repo":"main","revision":"99"}}`), 0o640); err != nil {
		t.Fatal(err)
	}

	// What spool list and spool requeue print, as far as this test reads it.
	type spoolItem struct {
		triggers.SpoolEntry
		State   string `json:"state"`
		LastLog string `json:"last_log"`
	}
	type requeueResult struct {
		File    string `json:"file"`
		Outcome string `json:"outcome"`
		EventID int64  `json:"event_id"`
	}
	var listed []spoolItem
	if err := json.Unmarshal([]byte(e.aicr("spool", "list", "--config", e.config, "--format", "json")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 3 {
		t.Fatalf("spool list: %d entries, want 3: %+v", len(listed), listed)
	}
	revs := map[string]spoolItem{}
	for _, it := range listed {
		if it.Name == forged {
			revs["forged"] = it
			continue
		}
		revs[it.Revision] = it
	}
	for _, rev := range []string{"1", "2"} {
		it := revs[rev]
		if it.State != "pending" || it.Repo != "main" || it.Problem != "" || it.SpooledAt.IsZero() {
			t.Errorf("r%s listed as %+v, want a pending, verified event of main", rev, it)
		}
		if !strings.Contains(it.LastLog, "not delivered") {
			t.Errorf("r%s: reason %q, want the hook's notify.log line", rev, it.LastLog)
		}
	}
	if p := revs["forged"].Problem; !strings.Contains(p, "signature does not match") {
		t.Errorf("forged file's problem = %q", p)
	}
	text := e.aicr("spool", "list", "--config", e.config)
	if !strings.Contains(text, "STATE") || !strings.Contains(text, forged) {
		t.Errorf("text list:\n%s", text)
	}

	// The daemon's own config spools elsewhere, so only requeue moves
	// these files.
	hookConfig := e.config
	cfg, err := os.ReadFile(hookConfig)
	if err != nil {
		t.Fatal(err)
	}
	daemonConfig := filepath.Join(e.dir, "daemon.toml")
	if err := os.WriteFile(daemonConfig, []byte(strings.Replace(string(cfg), `spool_dir = "spool"`, `spool_dir = "daemon-spool"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.config = daemonConfig
	e.startDaemon()
	e.config = hookConfig

	out, err := e.aicrFails("spool", "requeue", "--config", hookConfig, "--format", "json")
	if err == nil {
		t.Fatalf("requeue with a forged file exited 0:\n%s", out)
	}
	var results []requeueResult
	if err := json.Unmarshal([]byte(out[strings.Index(out, "["):]), &results); err != nil {
		t.Fatalf("requeue output: %v\n%s", err, out)
	}
	outcomes := map[string]string{}
	for _, r := range results {
		outcomes[filepath.Base(r.File)] = r.Outcome
		if r.Outcome == "delivered" && r.EventID == 0 {
			t.Errorf("%s delivered without an event id", r.File)
		}
	}
	if len(results) != 3 || outcomes[forged] != "rejected" {
		t.Fatalf("requeue results %+v: want 2 delivered and the forged file rejected", results)
	}
	lines := e.waitReports(60*time.Second, atLeast(2))
	if len(lines) != 2 {
		t.Fatalf("want 2 reports after requeue, got %d", len(lines))
	}
	names, err := triggers.Spool{Dir: e.spool}.List()
	if err != nil || len(names) != 0 {
		t.Fatalf("spool still holds %v (err %v)", names, err)
	}
	if _, err := os.Stat(filepath.Join(e.spool, triggers.RejectedDir, forged)); err != nil {
		t.Fatalf("forged file not in rejected/: %v", err)
	}

	// Re-sending from rejected/ verifies the signature first.
	out, err = e.aicrFails("spool", "requeue", "--rejected", forged, "--config", hookConfig)
	if err == nil || !strings.Contains(out, "stays where it is") {
		t.Fatalf("forged file brought back from rejected/: err %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(e.spool, triggers.RejectedDir, forged)); err != nil {
		t.Fatalf("forged file moved: %v", err)
	}
	// Nothing pending: requeue says so and succeeds.
	if out := e.aicr("spool", "requeue", "--config", hookConfig); !strings.Contains(out, "no spooled events") {
		t.Errorf("empty requeue said:\n%s", out)
	}
}
