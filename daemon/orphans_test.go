package daemon

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A daemon killed mid-run leaves its aicr-run-* container; the next start
// with [sandbox] kind = "podman" removes it.
func TestDaemonStartRemovesOrphanedContainers(t *testing.T) {
	if _, err := exec.LookPath("podman"); err != nil {
		if os.Getenv("AICR_TEST_NO_PODMAN") == "1" {
			t.Skip("podman not installed and AICR_TEST_NO_PODMAN=1")
		}
		t.Fatal("podman is not installed: run `make test`, which installs podman and runc")
	}
	_, file, _, _ := runtime.Caller(0)
	conf := filepath.Join(filepath.Dir(file), "..", "configs", "containers.conf")
	podman := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("podman", args...)
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("podman %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	// The container is only created, never started: any image will do.
	const image = "localhost/aicr-daemon-orphan-test:1"
	if exec.Command("podman", "image", "exists", image).Run() != nil {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "marker"), []byte("x"), 0o644)
		os.WriteFile(filepath.Join(dir, "Containerfile"), []byte("FROM scratch\nCOPY marker /marker\n"), 0o644)
		podman("build", "-q", "-t", image, "-f", filepath.Join(dir, "Containerfile"), dir)
	}
	podman("create", "--name", "aicr-run-777777-2", image, "/marker")

	cfg, _ := newSVNConfig(t)
	cfg.Sandbox.Kind = "podman"
	cfg.Sandbox.Podman.ContainersConf = conf
	cfg.Sandbox.Podman.Image = image
	d := startDaemon(t, cfg)
	d.stop()
	if left := podman("ps", "-a", "--filter", "name=^aicr-run-777777-", "--format", "{{.Names}}"); strings.TrimSpace(left) != "" {
		t.Fatalf("orphan survived the daemon's start: %s", left)
	}
}
