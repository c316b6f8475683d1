package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/internal/svntest"
)

// One daemon serves two repositories, each with its own hook, filters and
// channel: a change in one never reaches the other's channel, and each
// repo's exclude applies only to it.
func TestOneDaemonManyRepositories(t *testing.T) {
	svntest.Require(t)
	dir := t.TempDir()
	e := &env{t: t, dir: dir, config: filepath.Join(dir, "aicr.toml"), spool: filepath.Join(dir, "spool"), addr: freeAddr(t)}
	os.WriteFile(filepath.Join(dir, "secret"), []byte("multi-secret\n"), 0o600)
	repos := map[string]string{"alpha": filepath.Join(dir, "repos", "alpha"), "beta": filepath.Join(dir, "repos", "beta")}
	os.MkdirAll(filepath.Join(dir, "repos"), 0o755)
	for _, p := range repos {
		svntest.Run(t, dir, "svnadmin", "create", p)
	}
	cfg := fmt.Sprintf(`
[daemon]
listen = %q
data_dir = "data"
workers = 2
secret_file = "secret"
[notify]
spool_dir = "spool"
timeout = "1s"

[[repo]]
name = "alpha"
kind = "svn"
local_path = %q
exclude = ["vendor/**"]
channels = ["alpha-reports"]

[[repo]]
name = "beta"
kind = "svn"
local_path = %q
channels = ["beta-reports"]

[[channel]]
name = "alpha-reports"
kind = "file"
path = "alpha.jsonl"

[[channel]]
name = "beta-reports"
kind = "file"
path = "beta.jsonl"
`, e.addr, repos["alpha"], repos["beta"])
	os.WriteFile(e.config, []byte(cfg), 0o600)
	for name, p := range repos {
		out := e.aicr("install", "svn-hook", "--repo", p, "--config", e.config)
		if !strings.Contains(out, fmt.Sprintf("repo %q", name)) {
			t.Fatalf("hook for %s: %s", name, out)
		}
	}
	t.Cleanup(e.stopDaemon)
	e.startDaemon()

	commitTo := func(repo string, files map[string]string) {
		wc := filepath.Join(dir, "wc-"+repo)
		if _, err := os.Stat(wc); err != nil {
			svntest.Run(t, dir, "svn", "checkout", "-q", "file://"+repos[repo], wc)
		}
		e.wc = wc
		e.commit("change in "+repo, files)
	}
	leak := "password = \"n0t-a-placeholder\"\n"
	commitTo("alpha", map[string]string{"app/a.py": leak, "vendor/lib.py": leak})
	commitTo("beta", map[string]string{"vendor/lib.py": leak})

	s := e.store()
	e.waitFinished(s, 2, 60*time.Second)

	for repo, want := range map[string]string{"alpha": "app/a.py:1", "beta": "vendor/lib.py:1"} {
		e.reports = filepath.Join(dir, repo+".jsonl")
		lines := e.waitReports(60*time.Second, atLeast(1))
		if len(lines) != 1 || lines[0].Repo != repo {
			t.Fatalf("%s.jsonl: want one report of %s, got %+v", repo, repo, lines)
		}
		got := problemsAt(lines[0].Problems)
		if len(got) != 1 || got[want] == "" {
			t.Errorf("%s: want exactly the finding at %s (alpha excludes vendor/**, beta does not), got %v", repo, want, got)
		}
	}
}
