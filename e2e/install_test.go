package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/svntest"
)

// Issue 15 item 8: the hook runs the binary by the path the operator ran
// it as. A symlink such as /usr/local/bin/aicr → /opt/aicr-1.2/aicr is
// kept, so the next release only moves the link and the hook follows.
func TestInstalledHookKeepsTheInvokedBinaryPath(t *testing.T) {
	svntest.Require(t)
	dir := t.TempDir()
	release := filepath.Join(dir, "opt", "aicr-1.2")
	links := filepath.Join(dir, "usr-local-bin")
	for _, d := range []string{release, links} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(aicrBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(release, "aicr"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(links, "aicr")
	if err := os.Symlink(filepath.Join(release, "aicr"), link); err != nil {
		t.Fatal(err)
	}
	repos := filepath.Join(dir, "main")
	svntest.Run(t, dir, "svnadmin", "create", repos)
	cfg := svntest.HookConfig(t, dir, repos)

	// Run by its path, then by its name through PATH.
	for _, argv0 := range []string{link, "aicr"} {
		// argv[0] as a shell would pass it; the kernel runs the link.
		cmd := &exec.Cmd{Path: link, Args: []string{argv0, "install", "svn-hook", "--repo", repos, "--config", cfg}}
		cmd.Env = append(os.Environ(), "PATH="+links+":/usr/bin:/bin")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s install svn-hook: %v\n%s", argv0, err, out)
		}
		hook, _ := os.ReadFile(filepath.Join(repos, "hooks", "post-commit"))
		if !strings.Contains(string(hook), "exec '"+link+"' notify svn") || strings.Contains(string(hook), release) {
			t.Fatalf("run as %s, the hook does not run %s:\n%s", argv0, link, hook)
		}
	}
}
