package doctor

// The test binary stands in for the programs doctor starts, so the
// checks run on the real code paths without a go build: as `aicr notify
// svn` in dry run (what an installed hook starts), as `aicr doctor
// --daemon-side` (what doctor starts as the daemon's account) and, under
// the name p4, as the Perforce emulator. Each role runs the same code the
// real binary does for it.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/triggers"
)

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "p4" {
		os.Exit(p4emu.Main(os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 2 && os.Args[1] == "notify" && os.Args[2] == "svn" {
		os.Exit(fakeNotifySVN(os.Args[3:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "doctor" {
		os.Exit(fakeDoctorDaemonSide(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// flagValues reads --name VALUE pairs and the positional arguments.
func flagValues(args []string) (map[string]string, []string) {
	flags := map[string]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		if name, ok := strings.CutPrefix(args[i], "--"); ok && i+1 < len(args) {
			flags[name] = args[i+1]
			i++
			continue
		}
		rest = append(rest, args[i])
	}
	return flags, rest
}

// fakeNotifySVN is what `aicr notify svn` does in doctor's dry run
// (cmd/aicr notifySVNCheck): check, hand the result back, write nothing
// to stderr, which in the hook is notify.log. Without the dry run's
// variable it is a notify that fails loudly, since a test never means to
// send an event.
func fakeNotifySVN(args []string) int {
	result := os.Getenv(triggers.NotifyCheckEnv)
	if result == "" {
		fmt.Fprintln(os.Stderr, "aicr notify: the test binary only does dry runs")
		return 1
	}
	flags, rest := flagValues(args)
	repos := ""
	if len(rest) > 0 {
		repos = rest[0]
	}
	checks := CheckNotify(context.Background(), NotifyCheckOptions{ConfigPath: flags["config"], RepoName: flags["repo"], ReposPath: repos, Stderr: os.Stderr})
	if err := WriteResult(result, checks); err != nil {
		fmt.Fprintln(os.Stderr, "aicr notify: dry run for aicr doctor: cannot hand back the result:", err)
	}
	return 0
}

// fakeDoctorDaemonSide is `aicr doctor --config FILE --daemon-side RESULT
// [--repo NAME]`.
func fakeDoctorDaemonSide(args []string) int {
	flags, _ := flagValues(args)
	if err := RunDaemonSide(context.Background(), flags["config"], flags["repo"], flags["daemon-side"]); err != nil {
		fmt.Fprintln(os.Stderr, "aicr doctor:", err)
		return 1
	}
	return 0
}

var (
	exeOnce sync.Once
	exePath string
	exeErr  error
)

// aicrExe is a copy of the test binary in a directory every account can
// reach: the hook's and the daemon's accounts run it, and go test's own
// build directory is root's alone.
func aicrExe(t *testing.T) string {
	t.Helper()
	exeOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			exeErr = err
			return
		}
		dir, err := os.MkdirTemp("", "aicr-doctor-exe-")
		if err != nil {
			exeErr = err
			return
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			exeErr = err
			return
		}
		b, err := os.ReadFile(self)
		if err != nil {
			exeErr = err
			return
		}
		exePath = filepath.Join(dir, "aicr")
		exeErr = os.WriteFile(exePath, b, 0o755)
	})
	if exeErr != nil {
		t.Fatal(exeErr)
	}
	return exePath
}

func requireTool(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing on CI", n)
			}
			t.Skipf("%s not installed", n)
		}
	}
}

// svnRepo creates a repository with svnadmin.
func svnRepo(t *testing.T, path string) string {
	t.Helper()
	requireTool(t, "svnadmin", "svn")
	if out, err := exec.Command("svnadmin", "create", path).CombinedOutput(); err != nil {
		t.Fatalf("svnadmin create: %v\n%s", err, out)
	}
	return path
}

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func loadConfig(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// install is an svn server's installation on one host: a repository, a
// config whose daemon listens on a free loopback port, its secret and
// spool.
type install struct {
	dir, repos, config, secret, spool, addr string
}

// newInstall writes the installation; extra is appended to the config
// (inside the [[repo]] table unless it opens another).
func newInstall(t *testing.T, extra string) *install {
	t.Helper()
	dir := t.TempDir()
	in := &install{dir: dir, config: filepath.Join(dir, "aicr.toml"), secret: filepath.Join(dir, "secret"),
		spool: filepath.Join(dir, "spool"), addr: freeAddr(t)}
	in.repos = svnRepo(t, filepath.Join(dir, "repos"))
	writeFile(t, in.secret, "doctor-test-secret\n", 0o600)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(in.spool, 0o770); err != nil {
		t.Fatal(err)
	}
	in.writeConfig(t, extra)
	return in
}

func (in *install) writeConfig(t *testing.T, extra string) {
	t.Helper()
	writeFile(t, in.config, fmt.Sprintf(`[daemon]
listen = %q
data_dir = "data"
secret_file = "secret"

[notify]
spool_dir = "spool"
timeout = "2s"

[[repo]]
name = "main"
kind = "svn"
local_path = %q
reconcile_every = "off"
%s`, in.addr, in.repos, extra), 0o644)
}

// startDaemon runs the real daemon (daemon.Serve) on in's config and
// address until the test ends.
func startDaemon(t *testing.T, cfgPath, version string) {
	t.Helper()
	cfg := loadConfig(t, cfgPath)
	// No review runs in these tests; the agent's binary is never started.
	cfg.Daemon.AicrBinary = "/bin/true"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		done <- daemon.Serve(ctx, daemon.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard,
			Ready: func(a string) { ready <- a }, IdlePoll: 50 * time.Millisecond, Version: version})
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("daemon did not start: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("daemon did not start within 60s")
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
}

// expect asserts a check's status and that its detail and fix hold the
// given words: the thing it is about and what to do about it.
func expect(t *testing.T, c Check, status Status, detail []string, fix []string) {
	t.Helper()
	// A failing check may leave its status unset: settle (and Failed)
	// count that as failed, so a forgotten branch cannot pass.
	if got := c.Status; got != status && (status != StatusFail || !c.Failed()) {
		t.Errorf("%s: status %q, want %q: %+v", c.Name, got, status, c)
	}
	for _, w := range detail {
		if !strings.Contains(c.Detail, w) {
			t.Errorf("%s: detail %q lacks %q", c.Name, c.Detail, w)
		}
	}
	for _, w := range fix {
		if !strings.Contains(c.Fix, w) {
			t.Errorf("%s: fix %q lacks %q", c.Name, c.Fix, w)
		}
	}
	if status != StatusOK && len(fix) > 0 && c.Fix == "" {
		t.Errorf("%s: %s without a fix: %+v", c.Name, status, c)
	}
}
