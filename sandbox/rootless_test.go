package sandbox_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/sandbox"
)

// The rootless test runs this test binary again as an unprivileged user
// (AICR_TEST_ROOTLESS_USER, default aicr-rootless, with /etc/subuid and
// /etc/subgid ranges and newuidmap installed), so the podman runner is
// rootless for real: its own storage, --userns keep-id, no root anywhere.
// The inner half checks what that user's Podman can do on this host.
const (
	rootlessInnerEnv = "AICR_TEST_ROOTLESS_INNER"
	rootlessProbeEnv = "AICR_TEST_ROOTLESS_PROBE"
	rootlessImageEnv = "AICR_TEST_ROOTLESS_IMAGE"
	rootlessUserEnv  = "AICR_TEST_ROOTLESS_USER"
)

func TestRootlessPodmanRunner(t *testing.T) {
	requirePodman(t)
	if os.Geteuid() != 0 {
		t.Skip("the suite already runs unprivileged: every podman test here is rootless")
	}
	name := os.Getenv(rootlessUserEnv)
	if name == "" {
		name = "aicr-rootless"
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("rootless Podman not set up: no user %q (as root: useradd -m %s; it gets /etc/subuid and /etc/subgid ranges; apt-get install uidmap; or set %s)", name, name, rootlessUserEnv)
	}
	for _, f := range []string{"/etc/subuid", "/etc/subgid"} {
		b, _ := os.ReadFile(f)
		if !strings.Contains("\n"+string(b), "\n"+name+":") && !strings.Contains("\n"+string(b), "\n"+u.Uid+":") {
			t.Skipf("rootless Podman not set up: %s has no range for %s (usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s)", f, name, name)
		}
	}
	if _, err := exec.LookPath("newuidmap"); err != nil {
		t.Skip("rootless Podman not set up: newuidmap missing (apt-get install uidmap)")
	}
	probe, cfg := probeSetup(t)

	// Everything the user reads is copied where it can read it.
	dir, err := os.MkdirTemp("", "aicr-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{self: "sandbox.test", probe: "probe", repoContainersConf(t): "containers.conf"} {
		if err := copyFile(src, filepath.Join(dir, dst)); err != nil {
			t.Fatal(err)
		}
	}
	// The user's Podman has its own storage: it loads the image `make
	// image` ships from an archive of root's copy.
	image := cfg.Podman.Image
	archive := filepath.Join(dir, "image.tar")
	save := exec.Command("podman", "--runtime", "runc", "save", "-q", "-o", archive, image)
	save.Env = append(os.Environ(), "CONTAINERS_CONF="+cfg.Podman.ContainersConf)
	if out, err := save.CombinedOutput(); err != nil {
		t.Fatalf("podman save %s: %v: %s", image, err, out)
	}
	if err := os.Chmod(archive, 0o644); err != nil {
		t.Fatal(err)
	}
	runtimeDir := filepath.Join("/run/user", u.Uid)
	if _, err := os.Stat(runtimeDir); err != nil {
		// What a login session would have made (systemd-logind).
		if out, err := exec.Command("install", "-d", "-m", "0700", "-o", u.Uid, "-g", u.Gid, runtimeDir).CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v: %s", runtimeDir, err, out)
		}
	}
	env := []string{"HOME=" + u.HomeDir, "XDG_RUNTIME_DIR=" + runtimeDir, "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		"CONTAINERS_CONF=" + filepath.Join(dir, "containers.conf")}
	as := func(args ...string) *exec.Cmd {
		cmd := exec.Command("runuser", append([]string{"-u", name, "--", "env", "-i"}, append(env, args...)...)...)
		cmd.Dir = dir
		return cmd
	}
	if out, err := as("podman", "--runtime", "runc", "load", "-q", "-i", archive).CombinedOutput(); err != nil {
		t.Skipf("rootless Podman does not work for %s on this host: podman load: %v: %s", name, err, out)
	}
	inner := as(rootlessInnerEnv+"=1", rootlessProbeEnv+"="+filepath.Join(dir, "probe"), rootlessImageEnv+"="+image,
		filepath.Join(dir, "sandbox.test"), "-test.run", "^TestRootlessInner$", "-test.v", "-test.count=1")
	out, err := inner.CombinedOutput()
	t.Logf("as %s:\n%s", name, out)
	if err != nil {
		t.Fatalf("the rootless half failed: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestRootlessInner") {
		t.Fatal("the rootless half did not run")
	}
}

// TestRootlessInner is the half TestRootlessPodmanRunner runs as the
// unprivileged user; on its own it skips.
func TestRootlessInner(t *testing.T) {
	if os.Getenv(rootlessInnerEnv) != "1" {
		t.Skip("run by TestRootlessPodmanRunner as an unprivileged user")
	}
	if os.Geteuid() == 0 {
		t.Fatal("the rootless half runs as root")
	}
	cfg := sandbox.Config{Kind: "podman", Network: "none", Podman: sandbox.PodmanConfig{
		Runtime: "runc", Image: os.Getenv(rootlessImageEnv), ContainersConf: os.Getenv("CONTAINERS_CONF"), Memory: "32m", PidsLimit: 32}}
	cfg.ApplyDefaults(0)
	out, err := exec.Command("podman", "--runtime", "runc", "info", "--format", "{{.Host.CgroupsVersion}} rootless={{.Host.Security.Rootless}}").CombinedOutput()
	if err != nil {
		t.Fatalf("podman info: %v: %s", err, out)
	}
	info := strings.TrimSpace(string(out))
	t.Logf("podman info: cgroups %s", info)
	probe := os.Getenv(rootlessProbeEnv)
	r, err := sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	if strings.HasPrefix(info, "v1") {
		// Podman would run the container without its limits; the runner
		// must refuse and say why.
		s := spec(t, probe, 3001, "write", "/workspace/agent/state.json", "{}")
		_, err := r.Run(ctx, s)
		if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "cgroup v1") {
			t.Fatalf("rootless on cgroup v1: %v, want ErrUnavailable naming cgroup v1", err)
		}
		t.Logf("refused as it must be: %v", err)
		return
	}
	s := spec(t, probe, 3002, "write", "/workspace/agent/state.json", "{}")
	if res, err := r.Run(ctx, s); err != nil || res.ExitCode != 0 {
		t.Fatalf("trivial rootless run: %+v %v, stderr %q", res, err, readFile(t, s.StderrPath))
	}
	if got := readFile(t, filepath.Join(s.AgentDir, "state.json")); got != "{}" {
		t.Errorf("the container did not write the agent dir: %q", got)
	}
	s = spec(t, probe, 3003, "alloc", "256")
	if res, err := r.Run(ctx, s); err != nil || !res.OOMKilled {
		t.Errorf("rootless memory limit: %+v %v, want OOMKilled", res, err)
	}
	s = spec(t, probe, 3004, "forkbomb", "200")
	if res, err := r.Run(ctx, s); err != nil || res.ExitCode != 4 {
		t.Errorf("rootless pids limit: %+v %v, want the fork refused", res, err)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
