package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 10 #14: a channel secret that cannot be read is a warning from
// config check (deliveries fail until it is fixed), not a load failure
// that would also stop the daemon from starting.
func TestConfigCheckWarnsAboutUnreadableChannelSecret(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AICR_CLI_TEST_SECRET", "s")
	cfg := `[daemon]
data_dir = "data"
secret_env = "AICR_CLI_TEST_SECRET"

[[repo]]
name = "main"
kind = "svn"
url = "file:///nonexistent"
channels = ["team"]

[[channel]]
name = "team"
kind = "dingtalk"
webhook_url_file = "dingtalk.url"
`
	path := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "config", "check", path)
	if code != 0 || !strings.Contains(out, ": ok") {
		t.Fatalf("exit %d, want 0 (a warning, not an error):\n%s\n%s", code, out, errOut)
	}
	want := `warning: channel "team": webhook_url: file ` + filepath.Join(dir, "dingtalk.url")
	if !strings.Contains(errOut, want) {
		t.Fatalf("stderr = %q, want it to contain %q", errOut, want)
	}
}

// Issue 15 item 7: `config check` finds its file like every other
// command: FILE, else --config, else $AICR_CONFIG.
func TestConfigCheckHonoursConfigFlagAndEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AICR_CLI_TEST_SECRET", "s")
	good := filepath.Join(dir, "good.toml")
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(good, []byte("[daemon]\ndata_dir = \"data\"\nsecret_env = \"AICR_CLI_TEST_SECRET\"\n\n[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///nonexistent\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("[daemon]\nlisten = 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AICR_CONFIG", good)
	if out, errOut, code := runCLI(t, "config", "check"); code != 0 || !strings.Contains(out, good+": ok") {
		t.Fatalf("$AICR_CONFIG: exit %d:\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, "config", "check", "--config", bad); code != exitUsage || !strings.Contains(errOut, bad) {
		t.Fatalf("--config over $AICR_CONFIG: exit %d, want 2 naming %s:\n%s\n%s", code, bad, out, errOut)
	}
	if out, errOut, code := runCLI(t, "config", "check", good); code != 0 || !strings.Contains(out, good+": ok") {
		t.Fatalf("FILE: exit %d:\n%s\n%s", code, out, errOut)
	}
}
