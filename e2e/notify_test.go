package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/internal/svntest"
)

// waitFile waits (bounded) for path to exist, for the detached hook.
func waitFile(t *testing.T, path string, logPath string) []byte {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil {
			return b
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("%s never appeared; hook log:\n%s", path, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Issue 10 item 1: a config the daemon refuses (unknown key, channel
// missing its token) used to make every commit print "not sent" with
// nothing spooled. The hook reads only its own settings; the event is
// spooled, signed, and reviewed once the daemon runs.
func TestHookSpoolsWhenTheDaemonWouldRefuseTheConfig(t *testing.T) {
	e := newEnv(t, 1)
	good, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(good), "[daemon]\n", "[daemon]\nsetting_from_a_newer_aicr = true\n", 1) +
		"\n[[channel]]\nname = \"team\"\nkind = \"slack\"\n"
	if err := os.WriteFile(e.config, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	e.commit("one", map[string]string{"a.txt": "hello\n"})
	waitSpooled(t, e.spool, 1)
	log, _ := os.ReadFile(filepath.Join(e.spool, "notify.log"))
	if strings.Contains(string(log), "not sent") || strings.Contains(string(log), "unknown key") {
		t.Fatalf("hook complained about keys it does not use:\n%s", log)
	}
	if err := os.WriteFile(e.config, good, 0o600); err != nil {
		t.Fatal(err)
	}
	e.startDaemon()
	runs := e.waitFinished(e.store(), 1, 60*time.Second)
	if runs[0].Revision != "1" || runs[0].Source != "spool" {
		t.Fatalf("runs %+v, want r1 drained from the spool", runs)
	}
}

// Issue 10 item 1: the detached p4 child starts in /, so a relative
// --config lost the event.
func TestNotifyP4WithRelativeConfigSpools(t *testing.T) {
	e := newEnv(t, 1)
	cmd := exec.Command(aicrBin, "notify", "p4", "--config", filepath.Base(e.config), "--repo", "depot", "--change", "00042", "--user", "bob")
	cmd.Dir = e.dir
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("aicr notify p4: %v %q", err, out)
	}
	waitSpooled(t, e.spool, 1)
	entries, _ := os.ReadDir(e.spool)
	for _, en := range entries {
		if strings.HasSuffix(en.Name(), ".json") && !strings.Contains(en.Name(), "-depot-42.json") {
			t.Fatalf("spool file %s, want depot change 42 (canonical)", en.Name())
		}
	}
}

// Issue 10 item 6: a hook installed on repository A with --name B had A's
// commits reviewed as B's revisions. Install warns; the hook refuses and
// keeps the event in rejected/ with the reason.
func TestHookOnTheWrongRepositoryIsRefused(t *testing.T) {
	e := newEnv(t, 1)
	other := filepath.Join(e.dir, "repos", "other")
	svntest.Run(t, e.dir, "svnadmin", "create", other)
	out := e.aicr("install", "svn-hook", "--repo", other, "--name", "main", "--config", e.config)
	if !strings.Contains(out, "warning") || !strings.Contains(out, e.repos) {
		t.Fatalf("install on %s as main gave no warning naming main's local_path:\n%s", other, out)
	}
	wc := filepath.Join(e.dir, "wc-other")
	svntest.Run(t, e.dir, "svn", "checkout", "-q", "file://"+other, wc)
	if err := os.WriteFile(filepath.Join(wc, "x.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	svntest.Run(t, wc, "svn", "add", "-q", "x.txt")
	svntest.Run(t, wc, "svn", "commit", "-q", "-m", "in other", "--username", "alice")

	rejected := filepath.Join(e.spool, "rejected")
	deadline := time.Now().Add(60 * time.Second)
	var reason []byte
	for reason == nil && time.Now().Before(deadline) {
		entries, _ := os.ReadDir(rejected)
		for _, en := range entries {
			if strings.HasSuffix(en.Name(), ".reason") {
				reason, _ = os.ReadFile(filepath.Join(rejected, en.Name()))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(string(reason), other) || !strings.Contains(string(reason), e.repos) {
		log, _ := os.ReadFile(filepath.Join(e.spool, "notify.log"))
		t.Fatalf("reason %q does not name both paths; hook log:\n%s", reason, log)
	}
	if names, _ := filepath.Glob(filepath.Join(e.spool, "*.json")); len(names) != 0 {
		t.Fatalf("mismatched event left to be sent: %v", names)
	}
	log, _ := os.ReadFile(filepath.Join(e.spool, "notify.log"))
	if !strings.Contains(string(log), "wrong repository") {
		t.Fatalf("hook log does not explain:\n%s", log)
	}
	// svn appended the hook's stderr to the log: every line says when.
	stamped := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ aicr notify: `)
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		if !stamped.MatchString(line) {
			t.Errorf("notify.log line without its time: %q", line)
		}
	}
}
