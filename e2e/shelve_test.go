package e2e

// Shelved Perforce changes: reviewed in a session through the p4
// emulator (p4-shelf:<change>), and by the daemon through the
// shelve-commit trigger line `aicr install p4-trigger --shelve` prints,
// run as p4d would run it, published to the repo's shelve_channels.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/session"
)

// newP4ShelfEnv is newP4Env with a shelf (pending change 8: the planted
// password shelved in a new svc/prod.go) and a "shelves" file channel named
// by the repo's shelve_channels; e.reports is that channel's file.
func newP4ShelfEnv(t *testing.T) (*env, int) {
	t.Helper()
	e := newP4Env(t)
	path := os.Getenv(p4emu.EnvDepot)
	d, err := p4emu.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	shelf := d.Shelve(&p4emu.Change{User: "dave", Client: "dave-ws", Desc: "try the production account\n", Files: []*p4emu.File{
		{Path: "//depot/main/svc/prod.go", Action: "add", Type: "text", Content: []byte(plantedFile)},
	}})
	if err := d.Save(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), "channels = [\"reports\"]\n", "channels = [\"reports\"]\nshelve_channels = [\"shelves\"]\n", 1)
	text += "\n[[channel]]\nname = \"shelves\"\nkind = \"file\"\npath = \"shelves.jsonl\"\n"
	if err := os.WriteFile(e.config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	e.reports = filepath.Join(e.dir, "shelves.jsonl")
	return e, shelf.Num
}

// The shelf reviewed in a session (the builtin agent finds the planted
// password at its line of the shelved content).
func TestReviewSessionOfP4Shelf(t *testing.T) {
	e, shelf := newP4ShelfEnv(t)
	out := aicrStdout(t, e, "session", "begin", "p4-shelf:"+strconv.Itoa(shelf), "--config", e.config, "--format", "json")
	var began session.Started
	if err := json.Unmarshal([]byte(out), &began); err != nil {
		t.Fatalf("begin: %v: %s", err, out)
	}
	out = aicrStdout(t, e, "session", "wait", began.SessionID, "--max-wait-seconds", "120", "--config", e.config, "--format", "json")
	var w session.Waited
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatalf("wait: %v: %s", err, out)
	}
	if w.Status != audit.RoundCompleted || w.Next != session.NextRespond {
		t.Fatalf("shelf round: %+v", w)
	}
	if _, ok := problemsAt(w.Problems)["depot/main/svc/prod.go:5"]; !ok {
		t.Errorf("the shelved password at depot/main/svc/prod.go:5 was not reported: %+v", w.Problems)
	}
	// A submitted change is not a shelf: the round fails saying so.
	out = aicrStdout(t, e, "session", "begin", "p4-shelf:7", "--config", e.config, "--format", "json")
	if err := json.Unmarshal([]byte(out), &began); err != nil {
		t.Fatalf("begin: %v: %s", err, out)
	}
	out = aicrStdout(t, e, "session", "wait", began.SessionID, "--max-wait-seconds", "120", "--config", e.config, "--format", "json")
	w = session.Waited{}
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatalf("wait: %v: %s", err, out)
	}
	if w.Status != audit.RoundFailed || w.NextReason != session.ReasonFetchFailed || !strings.Contains(w.Error, "p4-change:7") {
		t.Errorf("a submitted change as a shelf: %+v", w)
	}
	// ... and as what it is, through the repo's adapter.
	out = aicrStdout(t, e, "session", "begin", "p4-change:7", "--config", e.config, "--format", "json")
	if err := json.Unmarshal([]byte(out), &began); err != nil {
		t.Fatalf("begin: %v: %s", err, out)
	}
	out = aicrStdout(t, e, "session", "wait", began.SessionID, "--max-wait-seconds", "120", "--config", e.config, "--format", "json")
	w = session.Waited{}
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatalf("wait: %v: %s", err, out)
	}
	if _, ok := problemsAt(w.Problems)["depot/main/svc/config.go:5"]; w.Status != audit.RoundCompleted || !ok {
		t.Errorf("p4-change:7: %+v", w)
	}
}

// The daemon reviews every shelving through the shelve-commit trigger
// and publishes it to shelve_channels only; shelving again is reviewed
// again, and the submitted changes keep their own channel.
func TestP4ShelveTriggerReviewedEndToEnd(t *testing.T) {
	e, shelf := newP4ShelfEnv(t)
	out := e.aicr("install", "p4-trigger", "--shelve", "--repo", "depot", "--config", e.config, "--format", "json")
	var lines struct {
		Lines []string `json:"lines"`
	}
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &lines); err != nil {
		t.Fatalf("install p4-trigger --shelve: %v: %s", err, out)
	}
	if len(lines.Lines) != 2 || !strings.Contains(lines.Lines[0], "aicr-depot-shelve shelve-commit //depot/main/... ") ||
		!strings.Contains(lines.Lines[0], " --shelve --change %change%") || !strings.Contains(lines.Lines[1], "shelve-commit -//depot/main/vendor/...") {
		t.Fatalf("trigger lines: %q", lines.Lines)
	}
	e.startDaemon()
	fire := func() {
		t.Helper()
		// What p4d runs: the quoted command with the %vars% filled in, a
		// bare environment, cwd /.
		line := lines.Lines[0]
		command := line[strings.Index(line, `"`)+1 : strings.LastIndex(line, `"`)]
		command = strings.NewReplacer("%change%", strconv.Itoa(shelf), "%user%", "dave", "%client%", "dave-ws",
			"%serverport%", "ssl:p4.example.com:1666").Replace(command)
		argv := strings.Fields(command)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
			t.Fatalf("%s: %v, output %q (want exit 0 and silence)", command, err, out)
		}
	}
	fire()
	s := e.store()
	runs := e.waitFinished(s, 1, 60*time.Second)
	prefix := "shelf-" + strconv.Itoa(shelf) + "-"
	if !strings.HasPrefix(runs[0].Revision, prefix) || runs[0].Status != audit.RunSucceeded {
		log, _ := os.ReadFile(e.daemonLog)
		t.Fatalf("shelf run: %+v\ndaemon log:\n%s", runs[0], log)
	}
	reports := e.waitReports(60*time.Second, atLeast(1))
	if len(reports) != 1 || reports[0].Channel != "shelves" {
		t.Fatalf("shelves channel: %+v", reports)
	}
	if _, ok := problemsAt(reports[0].Problems)["depot/main/svc/prod.go:5"]; !ok {
		t.Errorf("the shelved password was not reported: %v\n%s", problemsAt(reports[0].Problems), reports[0].Text)
	}
	// The report names the shelf as Perforce does and shows the author's
	// description, not a sentence of aicr's in its place (issue 27).
	if lines := strings.Split(reports[0].Text, "\n"); len(lines) < 2 ||
		!strings.HasSuffix(lines[0], " shelved change "+strconv.Itoa(shelf)+" by dave") || lines[1] != "try the production account" {
		t.Errorf("shelf report's title and description:\n%s", reports[0].Text)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "reports.jsonl")); err == nil {
		t.Errorf("the shelf review also went to the repo's channels")
	}
	// Shelved again after a fix: a new review, not a duplicate.
	time.Sleep(2 * time.Millisecond) // a later sent_at, in milliseconds
	fire()
	runs = e.waitFinished(s, 2, 60*time.Second)
	if len(runs) != 2 || runs[0].Revision == runs[1].Revision {
		t.Errorf("re-shelving: %+v", runs)
	}
}

// The shelve-commit line runs the aicr-notify beside aicr with --shelve;
// with the daemon down the shelve event is spooled as kind shelve, and
// the daemon's drain reviews the shelf.
func TestShelveTriggerRunsAicrNotifyAndSpools(t *testing.T) {
	aicr, notify := installedPair(t)
	e, shelf := newP4ShelfEnv(t)
	out, err := exec.Command(aicr, "install", "p4-trigger", "--shelve", "--repo", "depot", "--config", e.config).Output()
	if err != nil {
		t.Fatalf("install p4-trigger --shelve: %v", err)
	}
	line := strings.SplitN(string(out), "\n", 2)[0]
	if !strings.Contains(line, notify+" p4 --config ") || !strings.Contains(line, " --shelve ") {
		t.Fatalf("shelve-commit line does not run %s p4 --shelve:\n%s", notify, out)
	}
	cmd := exec.Command(notify, "p4", "--config", e.config, "--repo", "depot", "--shelve", "--change", strconv.Itoa(shelf), "--user", "dave")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("aicr-notify p4 --shelve: %v %q", err, out)
	}
	waitSpooled(t, e.spool, 1)
	names, _ := filepath.Glob(filepath.Join(e.spool, "[^.]*.json"))
	if len(names) != 1 || !strings.Contains(string(mustRead(t, names[0])), `"kind":"shelve"`) {
		t.Fatalf("spooled %v, want one shelve event", names)
	}
	e.startDaemon()
	runs := e.waitFinished(e.store(), 1, 60*time.Second)
	if !strings.HasPrefix(runs[0].Revision, "shelf-"+strconv.Itoa(shelf)+"-") || runs[0].Source != "spool" || runs[0].ProblemCount == 0 {
		t.Errorf("drained shelf run: %+v", runs[0])
	}
}
