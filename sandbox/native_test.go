package sandbox_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/sandbox"
)

func nativeProbe(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "probe")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/probe").CombinedOutput(); err != nil {
		t.Fatalf("build probe: %v: %s", err, out)
	}
	return bin
}

func TestNoneRunnerEnvIsOnlyTheSpec(t *testing.T) {
	bin := nativeProbe(t)
	t.Setenv("AICR_TEST_DAEMON_SECRET", "daemon-secret-value")
	cfg := sandbox.Config{Kind: "none"}
	cfg.ApplyDefaults(0)
	s := spec(t, bin, 1, "env")
	s.Args[0] = bin
	s.Env = []string{"AICR_RUN=42"}
	s.SecretEnv = []string{"AICR_API_KEY=sk-test"}
	if res := run(t, cfg, s); res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	env := readFile(t, s.StdoutPath)
	for _, want := range []string{"AICR_RUN=42\n", "AICR_API_KEY=sk-test\n", "HOME=" + s.AgentDir + "\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	for _, leak := range []string{"AICR_TEST_DAEMON_SECRET", "PATH="} {
		if strings.Contains(env, leak) {
			t.Errorf("env has the daemon's %s:\n%s", leak, env)
		}
	}
}

func TestNoneRunnerTimeout(t *testing.T) {
	bin := nativeProbe(t)
	cfg := sandbox.Config{Kind: "none"}
	cfg.ApplyDefaults(0)
	s := spec(t, bin, 1, "sleep", "300s")
	s.Args[0] = bin
	s.Timeout = time.Second
	if res := run(t, cfg, s); !res.TimedOut {
		t.Fatalf("result %+v, want TimedOut", res)
	}
}

func TestConfigDefaultsAndValidate(t *testing.T) {
	c := sandbox.Config{Kind: "podman"}
	c.ApplyDefaults(3 * time.Minute)
	p := c.Podman
	if c.Network != "none" || p.Binary != "podman" || p.Image != sandbox.DefaultImage() || p.Memory != "1g" || p.CPUs != "1" || p.PidsLimit != 256 || p.Timeout != 3*time.Minute {
		t.Errorf("defaults %+v", c)
	}
	c2 := sandbox.Config{Kind: "podman"}
	c2.ApplyDefaults(0)
	if c2.Podman.Timeout != sandbox.DefaultTimeout {
		t.Errorf("timeout without an agent timeout = %s", c2.Podman.Timeout)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	bad := c
	bad.Kind, bad.Network = "docker", "internet"
	bad.Podman.Memory, bad.Podman.CPUs, bad.Podman.PidsLimit = "lots", "0", 2
	err := bad.Validate()
	for _, key := range []string{"sandbox.kind:", "sandbox.network:"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
	bad.Kind = "podman"
	err = bad.Validate()
	for _, key := range []string{"sandbox.podman.memory:", "sandbox.podman.cpus:", "sandbox.podman.pids_limit:"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
	empty := sandbox.Config{}
	empty.ApplyDefaults(0)
	if err := empty.Validate(); err == nil || !strings.Contains(err.Error(), "sandbox.kind: missing") {
		t.Errorf("kind unset: %v", err)
	}
}
