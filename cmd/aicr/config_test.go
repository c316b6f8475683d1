package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// Issue 22 C11: a secret_file that is a FIFO made config check (and the
// daemon) block for ever in open(2); it is now refused at once, naming
// the file and what it is.
func TestConfigCheckRefusesAFIFOSecretAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "trigger-secret")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `[daemon]
data_dir = "data"
secret_file = "trigger-secret"

[[repo]]
name = "main"
kind = "svn"
url = "file:///nonexistent"
`
	path := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, code := runCLI(t, "config", "check", path)
		done <- result{out, errOut, code}
	}()
	select {
	case r := <-done:
		if r.code == 0 || !strings.Contains(r.out+r.errOut, fifo+": not a regular file (it is a named pipe (FIFO))") {
			t.Fatalf("exit %d:\n%s\n%s", r.code, r.out, r.errOut)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("config check still blocked on the FIFO after 20s")
	}
}
