package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A config the account may not read says how to get access (the README
// installs it root:aicr 0640), run as an account that lacks it.
func TestConfigPermissionDeniedHints(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run aicr as nobody")
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		t.Skip("needs runuser")
	}
	dir, err := os.MkdirTemp("", "aicr-perm-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "aicr")
	data, err := os.ReadFile(aicrBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(cfg, []byte("[daemon]\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("runuser", "-u", "nobody", "--", bin, "config", "check", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "permission denied") || !strings.Contains(string(out), "usermod -a -G aicr") {
		t.Errorf("config check as nobody: %v\n%s\nwant permission denied with how to get access", err, out)
	}
}
