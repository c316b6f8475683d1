package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/sandbox"
)

func TestPodmanRunWritesAgentDirAndReadsSrc(t *testing.T) {
	bin, cfg := probeSetup(t)
	s := spec(t, bin, 1001, "write", "/workspace/agent/state.json", `{"ok":true}`)
	if res := run(t, cfg, s); res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, readFile(t, s.StderrPath))
	}
	if got := readFile(t, filepath.Join(s.AgentDir, "state.json")); got != `{"ok":true}` {
		t.Errorf("state file on the host = %q", got)
	}
	if err := os.WriteFile(filepath.Join(s.SrcDir, "main.c"), []byte("int main;"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Args = []string{sandbox.BinaryMount, "cat", "/workspace/src/main.c"}
	if res := run(t, cfg, s); res.ExitCode != 0 || readFile(t, s.StdoutPath) != "int main;" {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, readFile(t, s.StdoutPath), readFile(t, s.StderrPath))
	}
}

func TestPodmanCannotWriteSrcOrRoot(t *testing.T) {
	bin, cfg := probeSetup(t)
	for _, target := range []string{"/workspace/src/evil.c", "/evil", "/opt/aicr/aicr"} {
		s := spec(t, bin, 1002, "write", target, "x")
		res := run(t, cfg, s)
		if res.ExitCode != 3 || !strings.Contains(readFile(t, s.StderrPath), "write failed") {
			t.Errorf("writing %s: exit %d, stderr %q; want the write refused", target, res.ExitCode, readFile(t, s.StderrPath))
		}
	}
	s := spec(t, bin, 1002, "write", "/tmp/scratch", "x")
	if res := run(t, cfg, s); res.ExitCode != 0 {
		t.Errorf("/tmp must be writable (tmpfs): exit %d %s", res.ExitCode, readFile(t, s.StderrPath))
	}
}

func TestPodmanEnvIsOnlyTheSpec(t *testing.T) {
	bin, cfg := probeSetup(t)
	t.Setenv("AICR_TEST_DAEMON_SECRET", "daemon-secret-value")
	t.Setenv("https_proxy", "http://proxy.invalid:3128")
	s := spec(t, bin, 1003, "env")
	s.Env = []string{"AICR_RUN=42"}
	s.SecretEnv = []string{"AICR_API_KEY=sk-test-secret"}
	if res := run(t, cfg, s); res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, readFile(t, s.StderrPath))
	}
	env := readFile(t, s.StdoutPath)
	for _, want := range []string{"AICR_RUN=42", "AICR_API_KEY=sk-test-secret", "HOME=/workspace/agent", "XDG_CONFIG_HOME=/workspace/agent/.config", "XDG_CACHE_HOME=/workspace/agent/.cache", "XDG_DATA_HOME=/workspace/agent/.local/share"} {
		if !strings.Contains(env, want+"\n") {
			t.Errorf("container env lacks %s:\n%s", want, env)
		}
	}
	for _, leak := range []string{"AICR_TEST_DAEMON_SECRET", "daemon-secret-value", "proxy.invalid", "GOPATH", "CONTAINERS_CONF"} {
		if strings.Contains(env, leak) {
			t.Errorf("container env has the test process's %s:\n%s", leak, env)
		}
	}
}

// The env file must be gone while the container still runs, and must
// never be created inside a mounted dir.
func TestPodmanEnvFileGoneAfterStartAndOutsideMounts(t *testing.T) {
	bin, cfg := probeSetup(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s := spec(t, bin, 1004, "sleep", "60s")
	s.SecretEnv = []string{"AICR_API_KEY=sk-test-secret"}
	r, _ := sandbox.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { _, err := r.Run(ctx, s); errc <- err }()
	running := false
	for i := 0; i < 600 && !running; i++ {
		cmd := exec.Command("podman", "--runtime", "runc", "ps", "--filter", "name=^aicr-run-1004-1-", "--filter", "status=running", "--format", "{{.Names}}")
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+cfg.Podman.ContainersConf)
		out, _ := cmd.Output()
		running = strings.HasPrefix(strings.TrimSpace(string(out)), "aicr-run-1004-1-")
		if !running {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !running {
		t.Fatal("container never reached running")
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "aicr-env-*")); len(left) != 0 {
		t.Errorf("env file still present while the container runs: %v", left)
	}
	// A daemon starting next to this live run must not remove it.
	if _, err := sandbox.RemoveOrphans(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if left := containersNamed(t, cfg, "aicr-run-1004-"); len(left) != 1 {
		t.Errorf("RemoveOrphans removed a live run's container: %v", left)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: err = %v, want context.Canceled", err)
	}
	if left := containersNamed(t, cfg, "aicr-run-1004-"); len(left) != 0 {
		t.Errorf("cancelled run left containers: %v", left)
	}

	// TMPDIR inside the agent dir: the env file would be visible to the
	// agent, so the run is refused before anything is written.
	s2 := spec(t, bin, 1005, "env")
	s2.SecretEnv = s.SecretEnv
	t.Setenv("TMPDIR", s2.AgentDir)
	_, err := r.Run(context.Background(), s2)
	if err == nil || !strings.Contains(err.Error(), "inside the mount") {
		t.Fatalf("TMPDIR inside the agent dir: err = %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(s2.AgentDir, "aicr-env-*")); len(left) != 0 {
		t.Errorf("env dir left in the mount: %v", left)
	}
}

func TestPodmanTimeoutKillsAndRemoves(t *testing.T) {
	bin, cfg := probeSetup(t)
	s := spec(t, bin, 1006, "sleep", "300s")
	s.Timeout = 2 * time.Second
	res := run(t, cfg, s)
	if !res.TimedOut {
		t.Fatalf("result %+v, want TimedOut", res)
	}
	if left := containersNamed(t, cfg, "aicr-run-1006-"); len(left) != 0 {
		t.Errorf("timed-out container not removed: %v", left)
	}
}

func TestPodmanMemoryLimitOOMKills(t *testing.T) {
	bin, cfg := probeSetup(t)
	cfg.Podman.Memory = "32m"
	s := spec(t, bin, 1007, "alloc", "512")
	res := run(t, cfg, s)
	if !res.OOMKilled || res.ExitCode == 0 {
		t.Fatalf("result %+v, stdout %q; want OOMKilled", res, readFile(t, s.StdoutPath))
	}
}

func TestPodmanPidsLimitStopsForkBomb(t *testing.T) {
	bin, cfg := probeSetup(t)
	cfg.Podman.PidsLimit = 32
	s := spec(t, bin, 1008, "forkbomb", "200")
	res := run(t, cfg, s)
	if res.ExitCode != 4 || !strings.Contains(readFile(t, s.StdoutPath), "fork refused") {
		t.Fatalf("result %+v, stdout %q, stderr %q; want the fork refused", res, readFile(t, s.StdoutPath), readFile(t, s.StderrPath))
	}
}

func TestPodmanOutputCapped(t *testing.T) {
	bin, cfg := probeSetup(t)
	s := spec(t, bin, 1009, "spew", "3000000")
	if res := run(t, cfg, s); res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	out := readFile(t, s.StdoutPath)
	if len(out) > sandbox.OutputCap+200 || !strings.Contains(out, "output truncated") {
		t.Errorf("stdout is %d bytes, want capped at %d with a note", len(out), sandbox.OutputCap)
	}
}

func TestPodmanUnavailable(t *testing.T) {
	bin, good := probeSetup(t)
	cases := []struct {
		name   string
		mutate func(*sandbox.Config)
		remedy string
	}{
		{"missing binary", func(c *sandbox.Config) { c.Podman.Binary = "/nonexistent/podman" }, "apt-get install -y podman runc"},
		{"missing image", func(c *sandbox.Config) { c.Podman.Image = "localhost/aicr-no-such-image:0" }, "make image"},
		{"broken runtime", func(c *sandbox.Config) { c.Podman.Runtime = "no-such-runtime" }, `runtime = "runc"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mutate(&cfg)
			s := spec(t, bin, 1010, "write", "/workspace/agent/ran", "yes")
			r, _ := sandbox.New(cfg)
			_, err := r.Run(context.Background(), s)
			if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), tc.remedy) {
				t.Fatalf("err = %v; want ErrUnavailable naming %q", err, tc.remedy)
			}
			if _, err := os.Stat(filepath.Join(s.AgentDir, "ran")); err == nil {
				t.Error("the command ran anyway")
			}
		})
	}
}

func TestRemoveOrphans(t *testing.T) {
	bin, cfg := probeSetup(t)
	podman := func(args ...string) {
		t.Helper()
		cmd := exec.Command("podman", append([]string{"--runtime", "runc"}, args...)...)
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+cfg.Podman.ContainersConf)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("podman %v: %v: %s", args, err, out)
		}
	}
	leftover := func(name string, label ...string) {
		podman(append(append([]string{"create", "--name", name}, label...), "-v", bin+":/opt/aicr/aicr:ro", cfg.Podman.Image, "/opt/aicr/aicr", "sleep", "1s")...)
	}
	// Unlabelled (no owner) and owned by a process that is gone: orphans.
	// Owned by this live test process: another daemon's run, kept.
	leftover("aicr-run-999999-1")
	leftover("aicr-run-999999-2", "--label", sandbox.OwnerLabel+"=999999999:1")
	leftover("aicr-run-999999-3", "--label", fmt.Sprintf("%s=%d:%s", sandbox.OwnerLabel, os.Getpid(), procStartOf(t, os.Getpid())))
	t.Cleanup(func() { podman("rm", "-f", "aicr-run-999999-3") })
	n, err := sandbox.RemoveOrphans(context.Background(), cfg)
	if err != nil || n < 2 {
		t.Fatalf("RemoveOrphans = %d, %v", n, err)
	}
	if left := containersNamed(t, cfg, "aicr-run-999999-"); len(left) != 1 || left[0] != "aicr-run-999999-3" {
		t.Errorf("after RemoveOrphans: %v; want only the live owner's container", left)
	}
	if n, err := sandbox.RemoveOrphans(context.Background(), sandbox.Config{Kind: "none"}); n != 0 || err != nil {
		t.Errorf("kind none: %d, %v", n, err)
	}
}

func procStartOf(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[19]
}

// A runtime that exists but fails when the container starts (as crun
// does on cgroup v1 hybrid hosts), after create succeeded: still
// ErrUnavailable with the remedy, and nothing left behind.
func TestPodmanRuntimeFailingAtStart(t *testing.T) {
	bin, cfg := probeSetup(t)
	fake := filepath.Join(t.TempDir(), "broken-runtime")
	script := "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'broken-runtime version 1'; exit 0; }\necho 'cgroups in hybrid mode not supported' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Podman.Runtime = fake
	s := spec(t, bin, 1011, "write", "/workspace/agent/ran", "yes")
	r, _ := sandbox.New(cfg)
	_, err := r.Run(context.Background(), s)
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), `runtime = "runc"`) {
		t.Fatalf("err = %v; want ErrUnavailable naming the runc remedy", err)
	}
	if _, err := os.Stat(filepath.Join(s.AgentDir, "ran")); err == nil {
		t.Error("the command ran anyway")
	}
	if left := containersNamed(t, cfg, "aicr-run-1011-"); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}
