package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aicr-dev/aicr/childenv"
	"github.com/aicr-dev/aicr/internal/tailbuf"
)

// nobody is the container user when the agent dir belongs to root: the
// agent never runs as root, not even root in a user namespace.
const nobody = 65534

const containerPrefix = "aicr-run-"

// podmanEnv is podman's own environment: what it needs to find its
// storage and runtime, nothing else. The daemon's secrets stay out of it,
// so `-e NAME` (take the value from podman's env) or the proxy variables
// podman copies by default can never carry them into a container.
func podmanEnv(containersConf string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	// runc and conmon live in sbin on Debian; podman finds them via PATH.
	set := []string{"PATH=" + path + ":/usr/local/sbin:/usr/sbin:/sbin"}
	if containersConf != "" {
		set = append(set, "CONTAINERS_CONF="+containersConf)
	}
	return childenv.Build([]string{"HOME", "USER", "LOGNAME", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS",
		"CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF", "CONTAINERS_REGISTRIES_CONF", "CONTAINER_HOST"}, set...)
}

type podmanRunner struct{ cfg Config }

func (r *podmanRunner) command(ctx context.Context, args ...string) *exec.Cmd {
	return podmanCommand(ctx, r.cfg.Podman, args...)
}

func podmanCommand(ctx context.Context, p PodmanConfig, args ...string) *exec.Cmd {
	var global []string
	if p.Runtime != "" {
		global = append(global, "--runtime", p.Runtime)
	}
	cmd := exec.CommandContext(ctx, p.Binary, append(global, args...)...)
	cmd.Env = podmanEnv(p.ContainersConf)
	return cmd
}

const remedyInstall = "install Podman and runc (as root: apt-get install -y podman runc; `make test` does it) or set [sandbox.podman] binary"

// available checks podman and the image before anything is created, so a
// broken setup fails the run with the remedy instead of an exit code.
func available(ctx context.Context, p PodmanConfig) error {
	if _, err := exec.LookPath(p.Binary); err != nil {
		return fmt.Errorf("%w: podman binary %q not found: %s", ErrUnavailable, p.Binary, remedyInstall)
	}
	if p.ContainersConf != "" {
		if _, err := os.Stat(p.ContainersConf); err != nil {
			return fmt.Errorf("%w: [sandbox.podman] containers_conf: %w", ErrUnavailable, err)
		}
	}
	var stderr bytes.Buffer
	cmd := podmanCommand(ctx, p, "image", "exists", p.Image)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 1 && stderr.Len() == 0:
		return fmt.Errorf("%w: image %s not found: build it with `make image` (no registry is used; or set [sandbox.podman] image)", ErrUnavailable, p.Image)
	default:
		return fmt.Errorf("%w: podman does not work: %w: %s; check `podman info`, set [sandbox.podman] runtime = \"runc\" and containers_conf (see README, Sandbox)", ErrUnavailable, err, strings.TrimSpace(stderr.String()))
	}
}

// Run checks that podman can run, creates the container (its env file
// read and removed at create), runs it attached under the pass's time
// limit and reads from inspect how it ended.
func (r *podmanRunner) Run(ctx context.Context, s Spec) (Result, error) {
	if err := s.validate(); err != nil {
		return Result{}, err
	}
	p := r.cfg.Podman
	if err := available(ctx, p); err != nil {
		return Result{}, err
	}
	if err := checkRootlessLimits(ctx, p); err != nil {
		return Result{}, err
	}
	network := s.Network
	if network == "" {
		network = r.cfg.Network
	}
	user, err := prepareAgentDir(s.AgentDir)
	if err != nil {
		return Result{}, err
	}
	name := containerName(s)
	args, cleanupEnv, err := createArgs(p, s, name, user, network)
	if err != nil {
		return Result{}, err
	}
	defer cleanupEnv()

	start := time.Now()
	// podman create + start rather than run: the env file is read at
	// create, so it is gone before the agent's first instruction, and the
	// container outlives its exit until inspect has read OOMKilled.
	err = r.create(ctx, name, args)
	cleanupEnv()
	// Removed on every path, including a cancelled ctx; a daemon killed
	// here leaves it to RemoveOrphans at the next start.
	defer r.remove(ctx, name)
	if err != nil {
		return Result{}, err
	}
	res, podmanErr, err := r.attach(ctx, name, s, r.timeout(s))
	if err != nil {
		return Result{}, err
	}
	res.Duration = time.Since(start)
	return r.outcome(ctx, name, res, podmanErr)
}

// timeout is the pass's own limit, else [sandbox.podman] timeout, else
// DefaultTimeout.
func (r *podmanRunner) timeout(s Spec) time.Duration {
	switch {
	case s.Timeout > 0:
		return s.Timeout
	case r.cfg.Podman.Timeout > 0:
		return r.cfg.Podman.Timeout
	}
	return DefaultTimeout
}

// containerName names the container after its run and pass. Run ids are
// unique per data_dir, not per host: two daemons (or aicr agent test,
// doctor, a test suite) on one host number their runs alike, so the name
// ends in a random part.
func containerName(s Spec) string {
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	return fmt.Sprintf("%s%d-%d-%s", containerPrefix, s.RunID, s.Pass, hex.EncodeToString(suffix[:]))
}

// create runs podman create with args, naming the remedy when the OCI
// runtime is the cause.
func (r *podmanRunner) create(ctx context.Context, name string, args []string) error {
	var createErr bytes.Buffer
	create := r.command(ctx, args...)
	create.Stderr = &createErr
	err := create.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := strings.TrimSpace(createErr.String())
	if strings.Contains(msg, "runtime") {
		return fmt.Errorf("%w: podman create: %s; set [sandbox.podman] runtime = \"runc\" (crun fails on cgroup v1 hybrid hosts) and install runc", ErrUnavailable, msg)
	}
	return fmt.Errorf("sandbox: podman create %s: %w: %s", name, err, msg)
}

// attach starts the container attached, its output into the pass's
// capped files, and waits for it to end, killing it past timeout or when
// ctx ends. It returns podman's own stderr tail, which is the only
// explanation while the container never ran.
func (r *podmanRunner) attach(ctx context.Context, name string, s Spec, timeout time.Duration) (Result, *tailbuf.Buffer, error) {
	stdout, err := openCapped(s.StdoutPath)
	if err != nil {
		return Result{}, nil, err
	}
	defer stdout.Close()
	stderr, err := openCapped(s.StderrPath)
	if err != nil {
		return Result{}, nil, err
	}
	defer stderr.Close()

	startCmd := r.command(context.WithoutCancel(ctx), "start", "--attach", name)
	// While the container never ran, its stderr is podman's own: kept
	// (bounded) for the error when the runtime fails to start it.
	podmanErr := tailbuf.New(4096)
	startCmd.Stdout, startCmd.Stderr = stdout, io.MultiWriter(stderr, podmanErr)
	if err := startCmd.Start(); err != nil {
		return Result{}, nil, fmt.Errorf("%w: podman start: %w; %s", ErrUnavailable, err, remedyInstall)
	}
	done := make(chan error, 1)
	go func() { done <- startCmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var res Result
	select {
	case <-done:
	case <-timer.C:
		res.TimedOut = true
		r.kill(ctx, name, startCmd, done)
	case <-ctx.Done():
		r.kill(ctx, name, startCmd, done)
	}
	return res, podmanErr, nil
}

// outcome reads from inspect how the container ended: its exit code,
// whether the memory limit killed it, and whether the runtime never
// started it.
func (r *podmanRunner) outcome(ctx context.Context, name string, res Result, podmanErr *tailbuf.Buffer) (Result, error) {
	st, err := r.inspect(ctx, name)
	if err != nil {
		return res, err
	}
	res.ExitCode = st.ExitCode
	// conmon reports OOMKilled on cgroup v2; on cgroup v1 hosts (these
	// build machines) it stays false and the only trace is SIGKILL. The
	// container cannot be sent SIGKILL by anyone but the kernel and us
	// (we only kill on timeout or cancel), so an unexplained 137 is the
	// memory limit.
	res.OOMKilled = st.OOMKilled || (st.ExitCode == 128+9 && !res.TimedOut && ctx.Err() == nil)
	if ctx.Err() != nil && !res.TimedOut {
		return res, ctx.Err()
	}
	if (st.Error != "" || st.Status == "created") && !res.TimedOut {
		why := st.Error
		if why == "" {
			why = strings.TrimSpace(podmanErr.String())
		}
		return res, fmt.Errorf("%w: the OCI runtime could not start the container: %s; set [sandbox.podman] runtime = \"runc\" and containers_conf with `[containers] default_ulimits = []` (see README, Sandbox)", ErrUnavailable, why)
	}
	return res, nil
}

// kill stops a container past its time: podman kill, then wait for the
// attached start to return (it does once the container is gone).
func (r *podmanRunner) kill(ctx context.Context, name string, startCmd *exec.Cmd, done <-chan error) {
	// Without ctx's cancel: the kill is what a cancelled run needs.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = r.command(ctx, "kill", name).Run()
	select {
	case <-done:
	case <-ctx.Done():
		_ = startCmd.Process.Kill()
		<-done
	}
}

func (r *podmanRunner) remove(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = r.command(ctx, "rm", "-f", "--time", "0", name).Run()
}

type containerState struct {
	Status    string `json:"Status"`
	ExitCode  int    `json:"ExitCode"`
	OOMKilled bool   `json:"OOMKilled"`
	Error     string `json:"Error"`
}

func (r *podmanRunner) inspect(ctx context.Context, name string) (containerState, error) {
	// Without ctx's cancel: a cancelled run's exit code and OOM kill are still read.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := r.command(ctx, "inspect", "--type", "container", "--format", "json", name)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return containerState{}, fmt.Errorf("sandbox: podman inspect %s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	var got []struct{ State containerState }
	if err := json.Unmarshal(out, &got); err != nil {
		return containerState{}, fmt.Errorf("sandbox: podman inspect %s: unexpected output: %w", name, err)
	}
	if len(got) != 1 {
		return containerState{}, fmt.Errorf("sandbox: podman inspect %s: unexpected output: %d containers", name, len(got))
	}
	return got[0].State, nil
}

// prepareAgentDir picks the container user and makes the agent dir (and
// its HOME/XDG dirs) writable for it. The agent runs as the dir's owner;
// a root-owned dir is handed to nobody, since the agent never runs as root.
func prepareAgentDir(dir string) (string, error) {
	for _, d := range xdgDirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return "", fmt.Errorf("sandbox: agent dir: %w", err)
		}
	}
	info, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox: agent dir: %w", err)
	}
	uid, gid, ok := ownerOf(info)
	if ok && uid != 0 {
		return strconv.Itoa(uid) + ":" + strconv.Itoa(gid), nil
	}
	err = filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, nobody, nobody)
	})
	if err != nil {
		return "", fmt.Errorf("sandbox: hand the agent dir to uid %d: %w", nobody, err)
	}
	return fmt.Sprintf("%d:%d", nobody, nobody), nil
}

// createArgs is the podman create command line. Secrets never appear on
// it: they go through an env file in a private temp dir outside every
// mount, which cleanup removes (idempotently).
func createArgs(p PodmanConfig, s Spec, name, user, network string) (args []string, cleanup func(), err error) {
	cleanup = func() {}
	args = []string{"create",
		"--init",
		"--name", name,
		"--label", OwnerLabel + "=" + ownerID(os.Getpid()),
		"--pull", "never",
		"--user", user,
		"-w", AgentMount,
		"--read-only",
		"--tmpfs", "/tmp",
		"--cap-drop", "ALL",
		"--security-opt", "no-new-privileges",
		"--memory", p.Memory,
		// Without this podman allows as much swap again, and an agent
		// past its memory limit would swap instead of being stopped.
		"--memory-swap", p.Memory,
		"--pids-limit", strconv.Itoa(p.PidsLimit),
		"--cpus", p.CPUs,
		// Podman copies the host's proxy variables by default.
		"--http-proxy=false",
		"-v", s.AgentDir + ":" + AgentMount + ":rw",
	}
	if rootless() {
		// Rootless: keep the user's own uid inside, so the agent dir's
		// owner can write it (otherwise uid N maps to a subordinate uid).
		args = append(args, "--userns", "keep-id")
	}
	if network == "host" {
		args = append(args, "--network", "host")
	} else {
		// "llm-only" is no network plus the egress socket the caller mounts.
		args = append(args, "--network", "none")
	}
	hostPaths := []string{s.AgentDir}
	if s.SrcDir != "" {
		args = append(args, "-v", s.SrcDir+":"+SrcMount+":ro")
		hostPaths = append(hostPaths, s.SrcDir)
	}
	if s.Binary != "" {
		args = append(args, "-v", s.Binary+":"+BinaryMount+":ro")
		hostPaths = append(hostPaths, s.Binary)
	}
	for _, m := range s.Mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		args = append(args, "-v", m.Host+":"+m.Container+":"+mode)
		hostPaths = append(hostPaths, m.Host)
	}
	for _, kv := range homeEnv(AgentMount) {
		args = append(args, "-e", kv)
	}
	for _, kv := range s.Env {
		args = append(args, "-e", kv)
	}
	if len(s.SecretEnv) > 0 {
		file, clean, err := writeEnvFile(s.SecretEnv, hostPaths)
		if err != nil {
			return nil, cleanup, err
		}
		cleanup = clean
		args = append(args, "--env-file", file)
	}
	args = append(args, p.ExtraArgs...)
	// Spec.Args is the whole command line, so the image's own ENTRYPOINT
	// must not run in front of it: the shipped image has
	// ENTRYPOINT ["/opt/aicr/aicr"] (so `podman run IMAGE version` works)
	// and an operator's image may have any other (docker-entrypoint.sh).
	// The JSON form keeps Args[0] one word whatever it contains. Last, so
	// no extra_args can put another entrypoint in front of the agent.
	entrypoint, err := json.Marshal(s.Args[:1])
	if err != nil {
		cleanup()
		return nil, func() {}, fmt.Errorf("sandbox: entrypoint: %w", err)
	}
	args = append(args, "--entrypoint", string(entrypoint), p.Image)
	args = append(args, s.Args[1:]...)
	return args, cleanup, nil
}

func writeEnvFile(kvs []string, mounted []string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "aicr-env-")
	if err != nil {
		return "", func() {}, fmt.Errorf("sandbox: env file: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	for _, m := range mounted {
		if within(dir, m) {
			cleanup()
			return "", func() {}, fmt.Errorf("sandbox: the temp dir %s is inside the mount %s; set TMPDIR elsewhere so secrets never land in the container's files", dir, m)
		}
	}
	file := filepath.Join(dir, "env")
	var b strings.Builder
	for _, kv := range kvs {
		b.WriteString(kv)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		cleanup()
		return "", func() {}, fmt.Errorf("sandbox: env file: %w", err)
	}
	return file, cleanup, nil
}

// within reports whether path is mount or below it, after symlinks.
func within(path, mount string) bool {
	resolve := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	rel, err := filepath.Rel(resolve(mount), resolve(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// OwnerLabel marks a container with the process that runs it
// ("pid:start-time"), so one daemon's start never removes the running
// containers of another daemon (or test) on the same host.
const OwnerLabel = "io.aicr.owner"

// ownerID is pid plus the process's start time where /proc has it, so a
// reused pid does not make a dead owner look alive.
func ownerID(pid int) string {
	return strconv.Itoa(pid) + ":" + procStart(pid)
}

func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields after it are
	// fixed, and starttime is field 22.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// ownerAlive reports whether the labelled owner still runs; an unlabelled
// container (none of ours names it) has no owner.
func ownerAlive(owner string) bool {
	pidText, start, ok := strings.Cut(owner, ":")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 {
		return false
	}
	if start != "" {
		return procStart(pid) == start
	}
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

// RemoveOrphans removes aicr-run-* containers whose owner is gone: left by
// a daemon killed mid-run. Containers of a live process (another daemon on
// this host) are left alone. It does nothing unless Kind is "podman".
func RemoveOrphans(ctx context.Context, cfg Config) (int, error) {
	if cfg.Kind != "podman" {
		return 0, nil
	}
	p := cfg.Podman
	if _, err := exec.LookPath(p.Binary); err != nil {
		return 0, fmt.Errorf("%w: podman binary %q not found: %s", ErrUnavailable, p.Binary, remedyInstall)
	}
	var stderr bytes.Buffer
	list := podmanCommand(ctx, p, "ps", "-a", "--filter", "name=^"+containerPrefix,
		"--format", `{{.Names}} {{index .Labels "`+OwnerLabel+`"}}`)
	list.Stderr = &stderr
	out, err := list.Output()
	if err != nil {
		return 0, fmt.Errorf("sandbox: list orphaned containers: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	removed := 0
	var errs []error
	for _, line := range strings.Split(string(out), "\n") {
		name, owner, _ := strings.Cut(strings.TrimSpace(line), " ")
		if !strings.HasPrefix(name, containerPrefix) || ownerAlive(strings.TrimSpace(owner)) {
			continue
		}
		stderr.Reset()
		rm := podmanCommand(ctx, p, "rm", "-f", "--time", "0", name)
		rm.Stderr = &stderr
		if err := rm.Run(); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w: %s", name, err, strings.TrimSpace(stderr.String())))
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
