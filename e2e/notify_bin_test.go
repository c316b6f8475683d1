package e2e

// aicr-notify, the hook client alone (cmd/aicr-notify), on real parts: a
// real svn repository whose post-commit hook `aicr install svn-hook`
// wrote, a real daemon, aicr doctor running the hook.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/doctor"
)

var (
	notifyBinOnce sync.Once
	notifyBinDir  string
	notifyBinErr  error
)

// installedPair is a directory holding aicr and aicr-notify side by side,
// as `make build` leaves them in bin/.
func installedPair(t *testing.T) (aicr, notify string) {
	t.Helper()
	notifyBinOnce.Do(func() {
		notifyBinDir = filepath.Join(filepath.Dir(aicrBin), "pair")
		if notifyBinErr = os.MkdirAll(notifyBinDir, 0o755); notifyBinErr != nil {
			return
		}
		if notifyBinErr = os.Link(aicrBin, filepath.Join(notifyBinDir, "aicr")); notifyBinErr != nil {
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(notifyBinDir, "aicr-notify"), notifyPkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			notifyBinErr = &buildError{err: err, out: string(out)}
		}
	})
	if notifyBinErr != nil {
		t.Fatal(notifyBinErr)
	}
	return filepath.Join(notifyBinDir, "aicr"), filepath.Join(notifyBinDir, "aicr-notify")
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "build aicr-notify: " + e.err.Error() + "\n" + e.out }

// installWith runs `install svn-hook` with the given aicr binary and
// returns the hook's text.
func installWith(t *testing.T, e *env, aicr string) string {
	t.Helper()
	cmd := exec.Command(aicr, "install", "svn-hook", "--repo", e.repos, "--config", e.config)
	cmd.Dir = e.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install svn-hook: %v\n%s", err, out)
	}
	hook, err := os.ReadFile(filepath.Join(e.repos, "hooks", "post-commit"))
	if err != nil {
		t.Fatal(err)
	}
	return string(hook)
}

// Issue 14 goal 1: with aicr-notify beside aicr the hook runs it; commits
// are spooled while the daemon is down and delivered once it is up, as
// with aicr notify svn.
func TestHookRunsAicrNotifyWhenInstalledBesideAicr(t *testing.T) {
	aicr, notify := installedPair(t)
	e := newEnv(t, 1)
	hook := installWith(t, e, aicr)
	if !strings.Contains(hook, "exec '"+notify+"' svn --config ") {
		t.Fatalf("hook does not run %s svn:\n%s", notify, hook)
	}
	if strings.Contains(hook, "notify svn") {
		t.Fatalf("hook still runs aicr notify svn:\n%s", hook)
	}

	e.commit("one", map[string]string{"a.txt": "hello\n"})
	waitSpooled(t, e.spool, 1)
	e.startDaemon()
	e.commit("two", map[string]string{"b.txt": "world\n"})
	runs := e.waitFinished(e.store(), 2, 90*time.Second)
	got := map[string]string{}
	for _, r := range runs {
		got[r.Revision] = string(r.Source)
	}
	if _, ok := got["1"]; !ok || got["2"] != "trigger" {
		log, _ := os.ReadFile(filepath.Join(e.spool, "notify.log"))
		t.Fatalf("runs by revision %v, want r1 (spooled) and r2 from the hook; hook log:\n%s", got, log)
	}
}

// aicr doctor runs the installed hook in dry-run mode; aicr-notify hands
// the checks to the aicr beside it, so doctor still sees them.
func TestDoctorRunsAnAicrNotifyHook(t *testing.T) {
	aicr, notify := installedPair(t)
	e := newEnv(t, 1)
	installWith(t, e, aicr)
	e.startDaemon()
	rep, out, code := runDoctor(t, e)
	if code != 0 || !rep.OK {
		t.Fatalf("exit %d, want 0; report:\n%s", code, out)
	}
	if c := findCheck(t, rep, doctor.CheckHook); !strings.Contains(c.Detail, notify) {
		t.Fatalf("hook check does not name %s: %s", notify, c.Detail)
	}
	if c := findCheck(t, rep, doctor.CheckHookRun); c.Status != doctor.StatusOK || !strings.Contains(c.Detail, "reported back") {
		t.Fatalf("hook run check: %+v", c)
	}
}

// The p4 trigger line names aicr-notify p4, and aicr-notify's detached
// child gets an absolute --config (the child starts in /).
func TestP4TriggerRunsAicrNotify(t *testing.T) {
	aicr, notify := installedPair(t)
	e := newEnv(t, 1)
	if err := os.WriteFile(e.config, append(mustRead(t, e.config), []byte(`
[[repo]]
name = "depot"
kind = "p4"
port = "localhost:1666"
user = "aicr"
depot_paths = ["//depot/main/..."]
`)...), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(aicr, "install", "p4-trigger", "--repo", "depot", "--config", e.config)
	cmd.Dir = e.dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("install p4-trigger: %v", err)
	}
	if !strings.Contains(string(out), notify+" p4 --config ") {
		t.Fatalf("trigger line does not run %s p4:\n%s", notify, out)
	}

	cmd = exec.Command(notify, "p4", "--config", filepath.Base(e.config), "--repo", "depot", "--change", "00042", "--user", "bob")
	cmd.Dir = e.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("aicr-notify p4: %v %q", err, out)
	}
	waitSpooled(t, e.spool, 1)
	names, _ := filepath.Glob(filepath.Join(e.spool, "[^.]*.json"))
	if len(names) != 1 || !strings.HasSuffix(names[0], "-depot-42.json") {
		log, _ := os.ReadFile(filepath.Join(e.spool, "notify.log"))
		t.Fatalf("spooled %v, want depot change 42; log:\n%s", names, log)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
