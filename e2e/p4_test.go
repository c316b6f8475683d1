package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/internal/p4emu"
)

// newP4Env is a daemon config with one p4 repo served by the project's
// p4 emulator (built here as an executable named p4) and a file channel.
// The emulator depot holds the standard fixture plus change 6, which
// edits src/config.go from cleanFile to plantedFile under //depot/main.
func newP4Env(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	emuBin := filepath.Join(dir, "emu", "p4")
	build := exec.Command("go", "build", "-o", emuBin, "github.com/aicr-dev/aicr/internal/p4emu/p4")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build p4 emulator: %v\n%s", err, out)
	}
	d := p4emu.Fixture()
	d.Submit(&p4emu.Change{User: "carol", Client: "carol-ws", Desc: "add config\n", Files: []*p4emu.File{
		{Path: "//depot/main/svc/config.go", Action: "add", Type: "text", Content: []byte(cleanFile)},
	}})
	d.Submit(&p4emu.Change{User: "carol", Client: "carol-ws", Desc: "wire the production account\n", Files: []*p4emu.File{
		{Path: "//depot/main/svc/config.go", Action: "edit", Type: "text", Content: []byte(plantedFile)},
	}})
	depot := filepath.Join(dir, "depot.json")
	if err := d.Save(depot); err != nil {
		t.Fatal(err)
	}
	t.Setenv(p4emu.EnvDepot, depot)
	emu, err := p4emu.WriteWrapper(filepath.Join(dir, "bin"), emuBin, depot, "")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, config: filepath.Join(dir, "aicr.toml"), reports: filepath.Join(dir, "reports.jsonl"),
		spool: filepath.Join(dir, "spool"), addr: freeAddr(t)}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("e2e-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`
[daemon]
listen = %q
data_dir = "data"
workers = 1
secret_file = "secret"
spool_drain_every = "@every 1s"

[notify]
spool_dir = "spool"
timeout = "1s"

[[repo]]
name = "depot"
kind = "p4"
port = "ssl:p4.example.com:1666"
user = "aicr"
p4_path = %q
depot_paths = ["//depot/main/...", "-//depot/main/vendor/..."]
channels = ["reports"]

[[channel]]
name = "reports"
kind = "file"
path = "reports.jsonl"
`, e.addr, emu)
	if err := os.WriteFile(e.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stopDaemon)
	return e
}

// notifyP4 runs the trigger client the way p4d would: bare environment,
// no HOME, cwd /.
func (e *env) notifyP4(change string) {
	e.t.Helper()
	cmd := exec.Command(aicrBin, "notify", "p4", "--config", e.config, "--repo", "depot",
		"--change", change, "--user", "carol", "--client", "carol-ws", "--serverport", "ssl:p4.example.com:1666")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) != 0 {
		e.t.Fatalf("aicr notify p4: %v, output %q (want exit 0 and silence)", err, out)
	}
}

func TestP4SubmitReviewedEndToEnd(t *testing.T) {
	e := newP4Env(t)
	e.startDaemon()
	e.notifyP4("7")
	s := e.store()
	runs := e.waitFinished(s, 1, 60*time.Second)
	if runs[0].Revision != "7" || runs[0].Source != "trigger" {
		t.Errorf("run: %+v", runs[0])
	}
	lines := e.waitReports(60*time.Second, atLeast(1))
	if len(lines) != 1 {
		t.Fatalf("%d report lines", len(lines))
	}
	at := problemsAt(lines[0].Problems)
	if _, ok := at["depot/main/svc/config.go:5"]; !ok {
		t.Errorf("the planted password on depot/main/svc/config.go:5 was not reported: %v\n%s", at, lines[0].Text)
	}
	for k := range at {
		if !strings.HasPrefix(k, "depot/main/svc/config.go:") {
			t.Errorf("problem outside the change: %s", k)
		}
	}
}

func TestP4TriggerWhileDaemonDownIsSpooledThenReviewed(t *testing.T) {
	e := newP4Env(t)
	e.notifyP4("7")
	waitSpooled(t, e.spool, 1)
	e.startDaemon()
	s := e.store()
	runs := e.waitFinished(s, 1, 60*time.Second)
	if runs[0].Revision != "7" || runs[0].Source != "spool" || runs[0].ProblemCount == 0 {
		t.Errorf("run: %+v", runs[0])
	}
}

func TestInstallP4TriggerPrintsLines(t *testing.T) {
	e := newP4Env(t)
	cmd := exec.Command(aicrBin, "install", "p4-trigger", "--repo", "depot", "--config", e.config, "--aicr", "/opt/my tools/aicr")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	want := "\taicr-depot change-commit //depot/main/... \"%quote%/opt/my tools/aicr%quote% notify p4 --config " + e.config +
		" --repo depot --change %change% --user %user% --client %client% --serverport %serverport%\"\n" +
		"\taicr-depot change-commit -//depot/main/vendor/... \"%quote%/opt/my tools/aicr%quote% notify p4 --config " + e.config +
		" --repo depot --change %change% --user %user% --client %client% --serverport %serverport%\"\n"
	if stdout.String() != want {
		t.Errorf("lines:\n%s\nwant:\n%s", stdout.String(), want)
	}
	if !strings.Contains(stderr.String(), "p4 triggers") {
		t.Errorf("steps: %s", stderr.String())
	}
}

// A change submitted while the trigger is missing from the triggers table is
// found by the reconciler (p4 counter maxCommitChange, p4 changes after the
// mark) and reviewed once, with source reconcile.
func TestP4ReconcilerFindsChangeWhoseTriggerNeverFired(t *testing.T) {
	e := newP4Env(t)
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), `channels = ["reports"]`, "channels = [\"reports\"]\nreconcile_every = \"@every 1s\"", 1))
	os.WriteFile(e.config, cfg, 0o600)
	e.startDaemon()
	s := e.store()
	// The first tick records the head, so history is not reviewed.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, ok, _ := s.RepoMark(t.Context(), "depot"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reconciler never recorded the head")
		}
		time.Sleep(20 * time.Millisecond)
	}

	depotPath := os.Getenv(p4emu.EnvDepot)
	d, err := p4emu.Load(depotPath)
	if err != nil {
		t.Fatal(err)
	}
	c := d.Submit(&p4emu.Change{User: "dave", Client: "dave-ws", Desc: "no trigger fired for this one\n", Files: []*p4emu.File{
		{Path: "//depot/main/svc/keys.go", Action: "add", Type: "text", Content: []byte("package svc\n\nconst key = \"AKIAQWERTYUIOPASDFGH\"\n")},
	}})
	if err := d.Save(depotPath); err != nil {
		t.Fatal(err)
	}
	runs := e.waitFinished(s, 1, 60*time.Second)
	if len(runs) != 1 || runs[0].Revision != fmt.Sprint(c.Num) || runs[0].Source != "reconcile" || runs[0].ProblemCount != 1 {
		t.Fatalf("want one reconciled run for change %d with its finding, got %+v", c.Num, runs)
	}
}

func TestReviewP4DryRunJSON(t *testing.T) {
	e := newP4Env(t)
	out := e.aicr("review", "p4", "--repo", "depot", "--change", "7", "--config", e.config, "--dry-run", "--format", "json")
	var res struct {
		Status   string `json:"status"`
		Revision string `json:"revision"`
		Problems []struct {
			File string `json:"file"`
			Line int    `json:"line"`
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	found := false
	for _, p := range res.Problems {
		found = found || (p.File == "depot/main/svc/config.go" && p.Line == 5)
	}
	if res.Status != "succeeded" || res.Revision != "7" || !found {
		t.Fatalf("review p4: %+v", res)
	}
	// The wrong kind of repo says which command to use.
	cmd := exec.Command(aicrBin, "review", "svn", "--repo", "depot", "--rev", "7", "--config", e.config)
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "use aicr review p4") {
		t.Fatalf("want a pointer to review p4, got %v: %s", err, msg)
	}
}
