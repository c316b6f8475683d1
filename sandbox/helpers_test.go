package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aicr-dev/aicr/internal/testimage"
	"github.com/aicr-dev/aicr/sandbox"
)

var (
	probeOnce sync.Once
	probePath string
	probeErr  error
)

// repoContainersConf is the repo's containers.conf, the one `make test`
// exports: runc and no default ulimits (see configs/containers.conf).
func repoContainersConf(t testing.TB) string { return testimage.ContainersConf(t) }

// requirePodman fails (never skips) without podman: `make test` installs
// it, and a sandbox suite that silently skips proves nothing.
func requirePodman(t testing.TB) { testimage.RequirePodman(t) }

// probeSetup builds the probe (testdata/probe) statically and returns a
// config running the image `make image` ships. spec mounts the probe
// where the runner mounts the daemon's binary (/opt/aicr/aicr), so these
// tests run the shipped image exactly as a review does, the image's
// ENTRYPOINT included.
func probeSetup(t testing.TB) (binary string, cfg sandbox.Config) {
	t.Helper()
	requirePodman(t)
	conf := repoContainersConf(t)
	image := testimage.Agent(t)
	probeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "aicr-probe-")
		if err != nil {
			probeErr = err
			return
		}
		probePath = filepath.Join(dir, "probe")
		build := exec.Command("go", "build", "-trimpath", "-o", probePath, "./testdata/probe")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			probeErr = fmt.Errorf("build probe: %w: %s", err, out)
		}
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	cfg = sandbox.Config{Kind: "podman", Network: "none", Podman: sandbox.PodmanConfig{
		Runtime: "runc", Image: image, ContainersConf: conf,
	}}
	cfg.ApplyDefaults(0)
	return probePath, cfg
}

// spec is a run of the probe with verb args, fresh dirs under t.TempDir.
func spec(t testing.TB, binary string, id int64, args ...string) sandbox.Spec {
	t.Helper()
	dir := t.TempDir()
	s := sandbox.Spec{
		RunID: id, Pass: 1,
		AgentDir:   filepath.Join(dir, "agent"),
		SrcDir:     filepath.Join(dir, "src"),
		Binary:     binary,
		Args:       append([]string{sandbox.BinaryMount}, args...),
		StdoutPath: filepath.Join(dir, "stdout"),
		StderrPath: filepath.Join(dir, "stderr"),
	}
	for _, d := range []string{s.AgentDir, s.SrcDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func run(t testing.TB, cfg sandbox.Config, s sandbox.Spec) sandbox.Result {
	t.Helper()
	r, err := sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), s)
	if err != nil {
		t.Fatalf("run %v: %v", s.Args, err)
	}
	return res
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// containersNamed lists containers (any state) whose name starts with prefix.
func containersNamed(t testing.TB, cfg sandbox.Config, prefix string) []string {
	t.Helper()
	cmd := exec.Command("podman", "--runtime", "runc", "ps", "-a", "--filter", "name=^"+prefix, "--format", "{{.Names}}")
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+cfg.Podman.ContainersConf)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("podman ps: %v", err)
	}
	return strings.Fields(string(out))
}
