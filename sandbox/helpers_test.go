package sandbox_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aicr-dev/aicr/sandbox"
)

var (
	probeOnce  sync.Once
	probePath  string
	probeImage string
	probeErr   error
)

// repoContainersConf is the repo's containers.conf, the one `make test`
// exports: runc and no default ulimits (see configs/containers.conf).
func repoContainersConf(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "configs", "containers.conf")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("configs/containers.conf: %v", err)
	}
	return p
}

// requirePodman fails (never skips) without podman: `make test` installs
// it, and a sandbox suite that silently skips proves nothing.
func requirePodman(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		if os.Getenv("AICR_TEST_NO_PODMAN") == "1" {
			t.Skip("podman not installed and AICR_TEST_NO_PODMAN=1")
		}
		t.Fatal("podman is not installed: run `make test`, which installs podman and runc (or set AICR_TEST_NO_PODMAN=1 to skip the sandbox tests explicitly)")
	}
}

// probeSetup builds the probe (testdata/probe) statically and an image
// FROM scratch holding it, tagged by the probe's hash so it is built once
// per probe version and reused across runs.
func probeSetup(t testing.TB) (binary string, cfg sandbox.Config) {
	t.Helper()
	requirePodman(t)
	conf := repoContainersConf(t)
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
			probeErr = fmt.Errorf("build probe: %v: %s", err, out)
			return
		}
		data, err := os.ReadFile(probePath)
		if err != nil {
			probeErr = err
			return
		}
		sum := sha256.Sum256(data)
		probeImage = "localhost/aicr-sandbox-probe:" + hex.EncodeToString(sum[:6])
		podman := func(args ...string) ([]byte, error) {
			cmd := exec.Command("podman", append([]string{"--runtime", "runc"}, args...)...)
			cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
			return cmd.CombinedOutput()
		}
		if _, err := podman("image", "exists", probeImage); err == nil {
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "Containerfile"), []byte("FROM scratch\nCOPY probe /probe\n"), 0o644); err != nil {
			probeErr = err
			return
		}
		if out, err := podman("build", "-q", "-t", probeImage, "-f", filepath.Join(dir, "Containerfile"), dir); err != nil {
			probeErr = fmt.Errorf("podman build: %v: %s", err, out)
		}
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	cfg = sandbox.Config{Kind: "podman", Network: "none", Podman: sandbox.PodmanConfig{
		Runtime: "runc", Image: probeImage, ContainersConf: conf,
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
