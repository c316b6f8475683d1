package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/svntest"
)

// Issue 15 item 8: two p4 repos on one server get distinct trigger names
// by default, so their lines are told apart (and one's removal does not
// take the other's) in the triggers table.
func TestP4TriggerNamesDifferPerRepo(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AICR_CLI_TEST_SECRET", "s")
	cfg := filepath.Join(dir, "aicr.toml")
	body := "[daemon]\ndata_dir = \"data\"\nsecret_env = \"AICR_CLI_TEST_SECRET\"\n"
	for _, r := range []string{"depot", "game.assets"} {
		body += "\n[[repo]]\nname = \"" + r + "\"\nkind = \"p4\"\nport = \"ssl:p4:1666\"\nuser = \"aicr\"\ndepot_paths = [\"//" + r + "/...\"]\n"
	}
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, r := range []string{"depot", "game.assets"} {
		out, errOut, code := runCLI(t, "install", "p4-trigger", "--repo", r, "--config", cfg, "--aicr", "/usr/local/bin/aicr-notify")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		names[r] = strings.Fields(out)[0]
	}
	if names["depot"] != "aicr-depot" || names["game.assets"] != "aicr-game_assets" {
		t.Fatalf("trigger names %v, want aicr-depot and aicr-game_assets", names)
	}
	out, _, _ := runCLI(t, "install", "p4-trigger", "--repo", "depot", "--config", cfg, "--aicr", "/x", "--name", "mine")
	if !strings.HasPrefix(out, "\tmine change-commit") {
		t.Fatalf("--name: %q", out)
	}
}

// The steps printed with --shelve test the shelve-commit line by
// shelving, not by submitting (which never fires it).
func TestP4ShelveTriggerStepsTestByShelving(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AICR_CLI_TEST_SECRET", "s")
	cfg := filepath.Join(dir, "aicr.toml")
	body := "[daemon]\ndata_dir = \"data\"\nsecret_env = \"AICR_CLI_TEST_SECRET\"\n\n[[repo]]\nname = \"depot\"\nkind = \"p4\"\nport = \"ssl:p4:1666\"\nuser = \"aicr\"\ndepot_paths = [\"//depot/...\"]\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "install", "p4-trigger", "--shelve", "--repo", "depot", "--config", cfg, "--aicr", "/x")
	if code != 0 || !strings.HasPrefix(out, "\taicr-depot-shelve shelve-commit //depot/...") {
		t.Fatalf("exit %d: %q %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "Test: shelve a small change under //depot/... (p4 shelve -c N)") || strings.Contains(errOut, "submit a small change") {
		t.Errorf("--shelve steps:\n%s", errOut)
	}
	_, errOut, _ = runCLI(t, "install", "p4-trigger", "--repo", "depot", "--config", cfg, "--aicr", "/x")
	if !strings.Contains(errOut, "Test: submit a small change under //depot/...") {
		t.Errorf("change-commit steps:\n%s", errOut)
	}
}

// executable is this test binary: a file install svn-hook accepts as the
// aicr the hook runs, for the tests that read the hook and never run it
// (e2e runs the shipped binary through the hook).
func executable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// Issue 15 item 8: --all --parent installs into every repository of an
// SVNParentPath and reports each: installed, a python hook left alone
// with the line to paste, a repository with no [[repo]] skipped, a
// symlinked hook failed, a plain directory skipped.
func TestInstallSVNHookAllUnderParent(t *testing.T) {
	svntest.Require(t)
	dir := t.TempDir()
	parent := filepath.Join(dir, "svn")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"alpha", "beta", "gamma", "linked"} {
		svntest.Run(t, dir, "svnadmin", "create", filepath.Join(parent, r))
	}
	if err := os.MkdirAll(filepath.Join(parent, "not-a-repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	py := "#!/usr/bin/python3\nimport sys\n"
	if err := os.WriteFile(filepath.Join(parent, "beta", "hooks", "post-commit"), []byte(py), 0o755); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "shared-hook")
	if err := os.WriteFile(shared, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(shared, filepath.Join(parent, "linked", "hooks", "post-commit")); err != nil {
		t.Fatal(err)
	}
	// gamma has no [[repo]].
	cfg := svntest.HookConfig(t, dir, filepath.Join(parent, "alpha"), filepath.Join(parent, "beta"), filepath.Join(parent, "linked"))

	out, errOut, code := runCLI(t, "install", "svn-hook", "--all", "--parent", parent, "--config", cfg, "--aicr", executable(t), "--format", "json")
	if code != exitError {
		t.Fatalf("exit %d, want 1 (linked failed):\n%s\n%s", code, out, errOut)
	}
	var got installAllOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	status := map[string]installAllRepo{}
	for _, r := range got.Repos {
		status[filepath.Base(r.Path)] = r
	}
	want := map[string]string{"alpha": hookInstalled, "beta": hookPaste, "gamma": hookSkipped, "linked": hookFailed, "not-a-repo": hookSkipped}
	for name, st := range want {
		if status[name].Status != st {
			t.Errorf("%s: %+v, want %s", name, status[name], st)
		}
	}
	if r := status["alpha"]; r.Repo != "main" || r.Hook != filepath.Join(parent, "alpha", "hooks", "post-commit") {
		t.Errorf("alpha: %+v", r)
	}
	if r := status["beta"]; !strings.Contains(r.PasteLine, filepath.Join(parent, "beta", "hooks", "post-commit.aicr")) {
		t.Errorf("beta: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(parent, "beta", "hooks", "post-commit")); string(b) != py {
		t.Errorf("beta's python hook was edited:\n%s", b)
	}
	if r := status["gamma"]; !strings.Contains(r.Detail, "no [[repo]]") {
		t.Errorf("gamma: %+v", r)
	}
	if r := status["linked"]; !strings.Contains(r.Detail, "symlink") || !strings.Contains(r.Detail, "--force") {
		t.Errorf("linked: %+v", r)
	}

	// Text, and --force for the linked one: everything but the skips is done.
	out, errOut, code = runCLI(t, "install", "svn-hook", "--all", "--parent", parent, "--config", cfg, "--aicr", executable(t), "--force")
	if code != 0 || !strings.Contains(out, "installed alpha") && !strings.Contains(out, "installed  alpha") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "2 installed, 1 need a line pasted, 2 skipped, 0 failed") {
		t.Errorf("summary:\n%s", out)
	}
}

// A python hook is left alone: install prints the line to paste, and
// uninstall, while the hook still calls the helper, says which line to
// remove.
func TestInstallAndUninstallAroundAPythonHook(t *testing.T) {
	svntest.Require(t)
	dir := t.TempDir()
	repos := filepath.Join(dir, "main")
	svntest.Run(t, dir, "svnadmin", "create", repos)
	cfg := svntest.HookConfig(t, dir, repos)
	hook := filepath.Join(repos, "hooks", "post-commit")
	py := "#!/usr/bin/python3\nimport sys\n"
	if err := os.WriteFile(hook, []byte(py), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "install", "svn-hook", "--repo", repos, "--config", cfg, "--aicr", executable(t))
	line := `import subprocess, sys; subprocess.call(["` + filepath.Join(repos, "hooks", "post-commit.aicr") + `"] + sys.argv[1:])`
	if code != 0 || !strings.Contains(out, "is a python3 hook, so aicr did not edit it") || !strings.Contains(out, "\n    "+line+"\n") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	if err := os.WriteFile(hook, []byte(py+line+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCLI(t, "uninstall", "svn-hook", "--repo", repos, "--format", "json")
	var res uninstallOutput
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.StillCalledFrom != hook {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(hook); string(b) != py+line+"\n" {
		t.Fatalf("uninstall edited the python hook:\n%s", b)
	}
}
