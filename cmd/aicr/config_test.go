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
