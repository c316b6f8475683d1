package doctor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// A python post-commit that calls the helper aicr install wrote (the
// pasted line) is an installed hook: doctor reads the block in the helper.
func TestInspectHookReadsTheHelperAForeignHookCalls(t *testing.T) {
	if _, err := exec.LookPath("svnadmin"); err != nil {
		t.Skip("svnadmin not installed")
	}
	base := t.TempDir()
	repos := filepath.Join(base, "repos")
	if out, err := exec.Command("svnadmin", "create", repos).CombinedOutput(); err != nil {
		t.Fatalf("svnadmin create: %v\n%s", err, out)
	}
	configPath := filepath.Join(base, "aicr.toml")
	if err := os.WriteFile(configPath, []byte("# test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hook := triggers.SVNHookPath(repos, false)
	foreign := "#!/usr/bin/python3\nimport sys\n"
	if err := os.WriteFile(hook, []byte(foreign), 0o755); err != nil {
		t.Fatal(err)
	}
	notifier := filepath.Join(base, "aicr-notify")
	if err := os.WriteFile(notifier, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := triggers.InstallSVNHookOrHelper(triggers.SVNHookOptions{ReposPath: repos, AicrPath: notifier,
		ConfigPath: configPath, RepoName: "main", SpoolDir: filepath.Join(base, "spool")})
	if err != nil {
		t.Fatal(err)
	}
	if res.PasteLine == "" {
		t.Fatalf("no paste line for a python hook: %+v", res)
	}
	cfg := &config.Config{Path: configPath}
	owner := ownerOf(repos)
	if c, _, _, _ := inspectHook(cfg, "main", repos, owner); !strings.Contains(c.Detail, "no aicr block") {
		t.Fatalf("before the line is pasted the hook calls nothing, doctor said %+v", c)
	}
	if err := os.WriteFile(hook, []byte(foreign+res.PasteLine+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, info, path, _ := inspectHook(cfg, "main", repos, owner)
	if path != triggers.SVNHelperPath(repos) || !info.HasBlock || strings.Contains(c.Detail, "no aicr block") {
		t.Fatalf("inspectHook read %s (block %v): %+v; want the helper %s", path, info.HasBlock, c, triggers.SVNHelperPath(repos))
	}
	// It describes the hook as it is: aicr-notify takes "svn", not "notify svn".
	if !strings.Contains(c.Detail, notifier+" svn --config") || strings.Contains(c.Detail, notifier+" notify svn") {
		t.Errorf("doctor describes the hook as %q; want %s svn --config ...", c.Detail, notifier)
	}
}
