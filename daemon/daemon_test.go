package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// runningDaemon is daemon.Serve in-process against a real svnadmin
// repository and a real SQLite file.
type runningDaemon struct {
	cfg    *config.Config
	addr   string
	repos  string
	cancel context.CancelFunc
	done   chan error
}

func requireSVN(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("svnadmin"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("svnadmin missing on CI")
		}
		t.Skip("svnadmin not installed")
	}
}

func newSVNConfig(t *testing.T) (*config.Config, string) {
	t.Helper()
	requireSVN(t)
	dir := t.TempDir()
	repos := filepath.Join(dir, "repo")
	if out, err := exec.Command("svnadmin", "create", repos).CombinedOutput(); err != nil {
		t.Fatalf("svnadmin: %v %s", err, out)
	}
	t.Setenv("AICR_TEST_DAEMON_SECRET", string(testSecret))
	path := filepath.Join(dir, "aicr.toml")
	os.WriteFile(path, []byte(fmt.Sprintf(`
[daemon]
listen = "127.0.0.1:0"
data_dir = "data"
secret_env = "AICR_TEST_DAEMON_SECRET"
[[repo]]
name = "main"
kind = "svn"
local_path = %q
reconcile_every = "off"
`, repos)), 0o600)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// These tests end before the agent runs; end-to-end reviews with the
	// real binary are in cmd/aicr.
	cfg.Daemon.AicrBinary = "/bin/true"
	return cfg, repos
}

func startDaemon(t *testing.T, cfg *config.Config) *runningDaemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &runningDaemon{cfg: cfg, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		d.done <- Serve(ctx, Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard,
			Ready: func(a string) { ready <- a }, IdlePoll: 50 * time.Millisecond})
	}()
	select {
	case d.addr = <-ready:
	case err := <-d.done:
		t.Fatalf("daemon did not start: %v", err)
	}
	t.Cleanup(d.stop)
	return d
}

func (d *runningDaemon) stop() {
	if d.cancel != nil {
		d.cancel()
		<-d.done
		d.cancel = nil
	}
}

func (d *runningDaemon) send(t *testing.T, rev string) {
	t.Helper()
	ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: rev}
	req, err := triggers.NewSignedRequest(context.Background(), "http://"+d.addr, testSecret, ev, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("event r%s: HTTP %d", rev, resp.StatusCode)
	}
}

func waitRun(t *testing.T, cfg *config.Config, done func(audit.RunSummary) bool) audit.RunSummary {
	t.Helper()
	store, err := audit.Open(context.Background(), config.DBPath(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		runs, err := store.ListRuns(context.Background(), audit.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) > 0 && done(runs[0]) {
			return runs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("run did not reach the expected state: %+v", runs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An accepted event for a revision that does not exist is not lost: once
// the missing-revision grace has passed it ends as a failed run that says
// why, and is not retried.
func TestAcceptedEventForMissingRevisionEndsFailedWithReason(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	cfg.Daemon.MissingRevisionGrace = time.Nanosecond
	d := startDaemon(t, cfg)
	d.send(t, "42")
	run := waitRun(t, cfg, func(r audit.RunSummary) bool { return r.Status.Final() })
	if run.Status != audit.RunFailed || !strings.Contains(run.Error, "no such revision") || run.Attempts != 1 {
		t.Fatalf("want a failed run naming the missing revision after one attempt, got %+v", run)
	}
}

// Within the grace window "no such revision" is retried: a p4 replica or
// an edge server may not have the change yet.
func TestMissingRevisionIsRetriedWithinGrace(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	d := startDaemon(t, cfg)
	d.send(t, "42")
	run := waitRun(t, cfg, func(r audit.RunSummary) bool { return r.Attempts == 1 && r.Status != audit.RunRunning })
	if run.Status != audit.RunQueued || !run.Retrying() || !strings.Contains(run.Error, "no such revision") || run.NotBefore.IsZero() {
		t.Fatalf("want the run queued for a retry, got %+v", run)
	}
}

// svn failing for a reason that may pass (here: the repository vanished)
// keeps the run queued for a later attempt, with the reason recorded.
func TestTransientFetchFailureIsRetriedLater(t *testing.T) {
	cfg, repos := newSVNConfig(t)
	os.RemoveAll(repos)
	d := startDaemon(t, cfg)
	d.send(t, "1")
	run := waitRun(t, cfg, func(r audit.RunSummary) bool { return r.Attempts == 1 && r.Status == audit.RunQueued })
	if !strings.Contains(run.Error, "fetch main r1") {
		t.Fatalf("the queued run should keep svn's error, got %+v", run)
	}
}

func TestSecondDaemonOnSameDataDirRefuses(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	startDaemon(t, cfg)
	err := Serve(context.Background(), Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard})
	if !errors.Is(err, ErrDataDirLocked) {
		t.Fatalf("want ErrDataDirLocked, got %v", err)
	}
}

func TestDaemonWithoutSvnSaysWhatToInstall(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	t.Setenv("PATH", t.TempDir())
	err := Serve(context.Background(), Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "apt-get install subversion") {
		t.Fatalf("want an install hint, got %v", err)
	}
}
