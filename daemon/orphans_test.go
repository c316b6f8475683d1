package daemon

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/testimage"
)

// A daemon killed mid-run leaves its aicr-run-* container; the next start
// with [sandbox] kind = "podman" removes it.
func TestDaemonStartRemovesOrphanedContainers(t *testing.T) {
	image := testimage.Agent(t)
	conf := testimage.ContainersConf(t)
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
	// The container is only created, never started; it is of the image
	// the daemon runs, the one `make image` ships.
	podman("create", "--name", "aicr-run-777777-2", image, "version")

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
