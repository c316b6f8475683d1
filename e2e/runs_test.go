package e2e

// Real-process tests of the daemon's lifecycle and the database: a taken
// listen port, config check against the daemon's own checks, the audit
// database deleted under a running daemon, commands run as another user.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/triggers"
)

// A daemon that cannot listen exits at once, non-zero, with the reason;
// it does not stay alive holding the data_dir lock.
func TestDaemonExitsWhenListenAddressIsTaken(t *testing.T) {
	e := newEnv(t, 1)
	ln, err := net.Listen("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(aicrBin, "daemon", "--config", e.config)
	cmd.Dir = e.dir
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the daemon kept running with its port taken; output:\n%s", out.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("want a non-zero exit, got %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "listen on "+e.addr) || !strings.Contains(out.String(), "address already in use") {
		t.Fatalf("the error should name the address and the reason:\n%s", out.String())
	}
	// The lock was released: a daemon on a free port starts.
	ln.Close()
	e.startDaemon()
}

// config check fails on whatever the daemon would refuse at start, and
// warns about a secret file every user can read.
func TestConfigCheckRunsTheDaemonsChecks(t *testing.T) {
	e := newEnv(t, 1)
	base, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"port out of range", `listen = "` + e.addr + `"`, `listen = "127.0.0.1:99999"`, "[daemon] listen"},
		{"not host:port", `listen = "` + e.addr + `"`, `listen = "localhost"`, "is not host:port"},
		{"missing secret file", `secret_file = "secret"`, `secret_file = "no-such-secret"`, "[daemon] secret_file"},
		{"bad spool schedule", `spool_drain_every = "@every 1s"`, `spool_drain_every = "every second"`, "[daemon] spool_drain_every"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(e.dir, "check.toml")
			if err := os.WriteFile(path, []byte(strings.Replace(string(base), tc.old, tc.new, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(aicrBin, "config", "check", path)
			cmd.Dir = e.dir
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Fatalf("config check: %v\n%s\nwant exit 2 naming %q", err, out, tc.want)
			}
		})
	}
	if err := os.Chmod(filepath.Join(e.dir, "secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := e.aicr("config", "check", e.config)
	if !strings.Contains(out, "ok") || !strings.Contains(out, "readable by every user") {
		t.Fatalf("want ok with a warning about the secret's mode:\n%s", out)
	}
}

// Deleting the audit database under a running daemon makes /healthz fail
// with the reason and logs an error, instead of reviews silently going
// into an unlinked file.
func TestDeletedAuditDatabaseFailsHealth(t *testing.T) {
	e := newEnv(t, 1)
	e.startDaemon()
	if err := os.Remove(filepath.Join(e.dir, "data", "aicr.db")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + e.addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			if !strings.Contains(string(body), "deleted or moved") {
				t.Fatalf("503 without the reason: %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz still %d after the database was deleted: %s", resp.StatusCode, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	log, _ := os.ReadFile(e.daemonLog)
	if !strings.Contains(string(log), "audit database lost") || !strings.Contains(string(log), "ERROR") {
		t.Fatalf("no error logged:\n%s", log)
	}
}

// Run as root on a data_dir another user owns, a command that writes
// refuses and says how to run it; a read-only command on a fresh data_dir
// says the daemon has not run and creates nothing.
func TestCommandsAsAnotherUserLeaveNoForeignFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown the data_dir to another user")
	}
	e := newEnv(t, 1)
	e.commit("one", map[string]string{"a.txt": "a\n"})
	data := filepath.Join(e.dir, "data")
	if err := os.MkdirAll(data, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"audit", "list", "--config", e.config},
		{"audit", "show", "1", "--config", e.config},
	} {
		out, err := e.aicrFails(args...)
		if err == nil || !strings.Contains(out, "no database") || !strings.Contains(out, "daemon has not run") {
			t.Fatalf("aicr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, args := range [][]string{
		{"review", "svn", "--repo", "main", "--rev", "1", "--dry-run", "--config", e.config},
		{"run", "retry", "1", "--config", e.config},
		{"daemon", "--config", e.config},
	} {
		out, err := e.aicrFails(args...)
		if err == nil || !strings.Contains(out, "runuser -u") {
			t.Fatalf("aicr %s as root on a data_dir owned by uid 4242: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	entries, _ := os.ReadDir(data)
	if len(entries) != 0 {
		t.Fatalf("commands left files in data_dir: %v", entries)
	}
}

func (e *env) aicrFails(args ...string) (string, error) {
	cmd := exec.Command(aicrBin, args...)
	cmd.Dir = e.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// An `aicr review --dry-run` killed mid-review is never resumed (and so
// never published) by the next daemon start: its run ends failed.
func TestKilledDryRunIsNotResumedByTheDaemon(t *testing.T) {
	e := newEnv(t, 1)
	e.commit("one", map[string]string{"src/config.go": plantedFile})
	// The agent's MCP server never answers, so the review hangs until
	// killed.
	hang := filepath.Join(e.dir, "hang.sh")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(e.config)
	cfg = []byte(strings.Replace(string(cfg), "[notify]", "aicr_binary = \"hang.sh\"\n\n[notify]", 1))
	if err := os.WriteFile(e.config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	review := exec.Command(aicrBin, "review", "svn", "--repo", "main", "--rev", "1", "--dry-run", "--config", e.config)
	review.Dir = e.dir
	review.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := review.Start(); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-review.Process.Pid, syscall.SIGKILL)
	s := e.store()
	deadline := time.Now().Add(60 * time.Second)
	for {
		runs, err := s.ListRuns(context.Background(), audit.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 1 && runs[0].Status == audit.RunRunning && runs[0].RunDir != "" {
			if !runs[0].DryRun {
				t.Fatalf("the dry run is not marked as such: %+v", runs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the review never started: %+v", runs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	syscall.Kill(-review.Process.Pid, syscall.SIGKILL)
	review.Wait()

	// (The hook's event, spooled while no daemon ran, becomes run 2.)
	e.startDaemon()
	var dry audit.RunSummary
	for _, r := range e.waitFinished(s, 1, 60*time.Second) {
		if r.DryRun {
			dry = r
		}
	}
	if dry.Status != audit.RunFailed || !strings.Contains(dry.Error, "dry run") || dry.Attempts != 1 {
		t.Fatalf("the killed dry run should end failed, not resumed: %+v", dry)
	}
	if lines := e.reportLines(); len(lines) != 0 {
		t.Fatalf("a dry run was published: %+v", lines)
	}
}

// A run waiting for a retry shows as retrying with its attempt, next time
// and last error; aicr run retry queues failed runs again.
func TestRetryingRunsAreVisibleAndFailedOnesRetryable(t *testing.T) {
	e := newEnv(t, 1)
	s := e.store()
	ctx := context.Background()
	ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "7"}
	if _, err := s.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run, err := s.ClaimNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RetryLater(ctx, run.ID, "svn: E170013: Unable to connect", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	list := e.aicr("audit", "list", "--config", e.config)
	if !strings.Contains(list, "retrying") || !strings.Contains(list, "attempt 1") || !strings.Contains(list, "E170013") {
		t.Fatalf("audit list:\n%s", list)
	}
	show := e.aicr("audit", "show", fmt.Sprint(run.ID), "--config", e.config)
	if !strings.Contains(show, "retrying, next at") || !strings.Contains(show, "last error: svn: E170013") {
		t.Fatalf("audit show:\n%s", show)
	}

	if out, err := e.aicrFails("run", "retry", fmt.Sprint(run.ID), "--config", e.config); err == nil || !strings.Contains(out, "has not failed") {
		t.Fatalf("retry of a queued run: %v\n%s", err, out)
	}
	// Let it fail for good, then re-drive it.
	if _, err := s.ClaimNext(ctx); err == nil {
		t.Fatal("claimed a run before its retry time")
	}
	full := audit.Outcome{Status: audit.RunFailed, Error: "gave up"}
	if err := forceFinish(s, run.ID, full); err != nil {
		t.Fatal(err)
	}
	e.aicr("run", "retry", fmt.Sprint(run.ID), "--config", e.config)
	d, err := s.GetRun(ctx, run.ID)
	if err != nil || d.Status != audit.RunQueued {
		t.Fatalf("after run retry: %+v %v", d.RunSummary, err)
	}
	if err := forceFinish(s, run.ID, full); err != nil {
		t.Fatal(err)
	}
	out := e.aicr("run", "retry", "--failed", "--since", "1h", "--config", e.config)
	if strings.TrimSpace(strings.Split(out, "\n")[0]) != fmt.Sprint(run.ID) {
		t.Fatalf("run retry --failed:\n%s", out)
	}
}

// forceFinish claims runID (whatever its not_before) and finishes it.
func forceFinish(s *audit.Store, runID int64, out audit.Outcome) error {
	ctx := context.Background()
	raw, err := sql.Open("sqlite", s.Path())
	if err != nil {
		return err
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE runs SET not_before = NULL WHERE id = ?`, runID); err != nil {
		return err
	}
	if _, err := s.ClaimNext(ctx); err != nil {
		return err
	}
	return s.FinishRun(ctx, runID, out)
}
