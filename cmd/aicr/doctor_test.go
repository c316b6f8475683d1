package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aicr-dev/aicr/triggers"
)

// The inspector reads back exactly what the installer wrote, quotes and
// all, for both hook flavours.
func TestInspectSVNHookReadsInstalledBlock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "it's a dir")
	repos := filepath.Join(dir, "repo")
	for _, d := range []string{filepath.Join(repos, "hooks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(repos, "format"), []byte("5\n"), 0o644)
	config := filepath.Join(dir, "100% aicr.toml")
	aicrPath := executable(t)
	os.WriteFile(config, []byte("x"), 0o644)
	for _, windows := range []bool{false, true} {
		opts := triggers.SVNHookOptions{ReposPath: repos, AicrPath: aicrPath, ConfigPath: config, RepoName: "main",
			SpoolDir: filepath.Join(dir, "spool"), Windows: windows}
		path, err := triggers.InstallSVNHook(opts)
		if err != nil {
			t.Fatal(err)
		}
		script, _ := os.ReadFile(path)
		info, err := triggers.InspectSVNHook(script, windows)
		if err != nil {
			t.Fatalf("windows=%v: %v", windows, err)
		}
		want := triggers.SVNHookInfo{HasBlock: true, AicrPath: aicrPath, ConfigPath: config, RepoName: "main",
			LogFile: filepath.Join(dir, "spool", "notify.log"), Block: info.Block}
		if info != want || info.OtherCommands {
			t.Errorf("windows=%v: got %+v, want %+v", windows, info, want)
		}
	}
	withOther := "#!/bin/sh\n# a comment\n/usr/bin/mailer \"$1\" \"$2\"\n"
	if err := os.WriteFile(triggers.SVNHookPath(repos, false), []byte(withOther), 0o755); err != nil {
		t.Fatal(err)
	}
	path, err := triggers.InstallSVNHook(triggers.SVNHookOptions{ReposPath: repos, AicrPath: aicrPath, ConfigPath: config, RepoName: "main", SpoolDir: filepath.Join(dir, "spool")})
	if err != nil {
		t.Fatal(err)
	}
	script, _ := os.ReadFile(path)
	if info, err := triggers.InspectSVNHook(script, false); err != nil || !info.OtherCommands {
		t.Errorf("hook with a mailer: OtherCommands = %v (err %v), want true", info.OtherCommands, err)
	}
	if info, err := triggers.InspectSVNHook([]byte("#!/bin/sh\nexit 0\n"), false); err != nil || info.HasBlock {
		t.Errorf("hook without aicr: %+v, %v", info, err)
	}
}
