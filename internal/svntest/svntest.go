// Package svntest is what tests need from a real Subversion: the tools
// present, a way to run them, and an aicr config naming repositories to
// install the hook into. The whole-product tests (e2e) and the CLI's unit
// tests that install hooks into real repositories share it.
package svntest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Require fails on CI (make test installs subversion) and skips elsewhere
// when svn or svnadmin is missing.
func Require(tb testing.TB) {
	tb.Helper()
	for _, tool := range []string{"svn", "svnadmin"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				tb.Fatalf("%s missing on CI: make test installs subversion", tool)
			}
			tb.Skipf("%s not installed", tool)
		}
	}
}

// Run runs name (svn, svnadmin) in dir and returns its output, failing
// the test when it fails. The C.UTF-8 locale keeps svn's messages and
// its handling of non-ASCII paths the same on every machine.
func Run(tb testing.TB, dir, name string, args ...string) string {
	tb.Helper()
	// Not tb.Context(): it ends before tb's Cleanup, which may run svn too.
	cmd := exec.CommandContext(context.Background(), name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// HookConfig writes dir/aicr.toml (and the secret file it names) whose
// [[repo]] "main" is the first of repos, each further one named by its
// directory, with its local_path set so that install svn-hook finds it.
func HookConfig(tb testing.TB, dir string, repos ...string) string {
	tb.Helper()
	body := "[daemon]\ndata_dir = \"data\"\nsecret_file = \"secret\"\n\n[notify]\nspool_dir = \"spool\"\nsecret_file = \"secret\"\n"
	for i, r := range repos {
		name := "main"
		if i > 0 {
			name = filepath.Base(r)
		}
		body += "\n[[repo]]\nname = \"" + name + "\"\nkind = \"svn\"\nurl = \"file://" + r + "\"\nlocal_path = \"" + r + "\"\n"
	}
	cfg := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s3cret\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
	return cfg
}
