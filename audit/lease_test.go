package audit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// A foreground `aicr review` owns its run: a daemon starting meanwhile
// (another Store, another owner) must not re-queue it while the lease is
// held, and takes it once the lease runs out.
func TestRecoveryLeavesLiveLeasesAlone(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	cli := openStore(t, path)
	run, err := cli.EnqueueClaimed(ctx, svnEvent("main", "7"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	daemon := openStore(t, path)
	if n, a, err := daemon.RequeueInterrupted(ctx, 3); err != nil || n != 0 || a != 0 {
		t.Fatalf("recovery took a run under a live lease: requeued %d abandoned %d %v", n, a, err)
	}
	// The owner renews; the run stays its own.
	if err := cli.RenewLease(ctx, run.ID); err != nil {
		t.Fatal(err)
	}
	if err := daemon.RenewLease(ctx, run.ID); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("a non-owner renewed the lease: %v", err)
	}
	later := time.Now().Add(DefaultLeaseTTL + time.Minute)
	daemon.now = func() time.Time { return later }
	if n, _, err := daemon.RequeueExpired(ctx, 3); err != nil || n != 1 {
		t.Fatalf("expired lease: requeued %d %v, want 1", n, err)
	}
	if err := cli.RenewLease(ctx, run.ID); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("renewing a lost lease must fail, got %v", err)
	}
}

// A run whose owner process is gone (same host, pid no longer exists) is
// recovered at once, without waiting for the lease.
func TestRecoveryTakesRunsOfDeadProcesses(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path)
	mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	run := mustClaim(t, s)
	// pid 0x3fffffff exceeds pid_max on Linux, so it cannot be alive.
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET lease_owner = 'gone', lease_pid = ? WHERE id = ?`, 0x3fffffff, run.ID); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.RequeueExpired(ctx, 3); err != nil || n != 1 {
		t.Fatalf("requeued %d %v, want the dead owner's run", n, err)
	}
}

// A worker that lost its bookkeeping (disk full: RetryLater/FinishRun
// failed) stops renewing; the periodic sweep hands the run back once the
// lease runs out, without a restart. Its own live claims are left alone.
func TestSweepRequeuesOwnExpiredRuns(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	run := mustClaim(t, s)
	if n, _, _ := s.RequeueExpired(ctx, 3); n != 0 {
		t.Fatalf("sweep took a live claim")
	}
	later := time.Now().Add(DefaultLeaseTTL + time.Second)
	s.now = func() time.Time { return later }
	if n, _, err := s.RequeueExpired(ctx, 3); err != nil || n != 1 {
		t.Fatalf("sweep: requeued %d %v, want 1", n, err)
	}
	again := mustClaim(t, s)
	if again.ID != run.ID {
		t.Fatalf("claimed %d, want %d", again.ID, run.ID)
	}
}

// An interrupted dry run is failed by recovery, never resumed (a resumed
// run would publish).
func TestInterruptedDryRunIsNeverResumed(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	cli := openStore(t, path)
	run, err := cli.EnqueueClaimedWith(ctx, svnEvent("main", "5"), time.Time{}, ClaimOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	cli.Close()
	d := openStore(t, path)
	later := time.Now().Add(DefaultLeaseTTL + time.Second)
	d.now = func() time.Time { return later }
	n, abandoned, err := d.RequeueInterrupted(ctx, 3)
	if err != nil || n != 0 || abandoned != 1 {
		t.Fatalf("requeued %d abandoned %d %v; want the dry run failed", n, abandoned, err)
	}
	got, err := d.GetRun(ctx, run.ID)
	if err != nil || got.Status != RunFailed || !got.DryRun || !strings.Contains(got.Error, "dry run") {
		t.Fatalf("dry run after recovery: %+v %v", got.RunSummary, err)
	}
	if _, err := d.ClaimNext(ctx); !errors.Is(err, ErrNoWork) {
		t.Fatalf("a dry run was claimable: %v", err)
	}
	if err := d.RetryRun(ctx, run.ID); !errors.Is(err, ErrInvalid) {
		t.Fatalf("retry of a dry run: %v", err)
	}
}

// A later report of a revision whose run failed re-queues the run instead
// of counting as a duplicate; `aicr run retry` does the same on demand.
func TestFailedRunIsRequeuedByLaterEventAndRetry(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	enq := mustEnqueue(t, s, svnEvent("main", "9"), triggers.SourceTrigger)
	run := mustClaim(t, s)
	if err := s.FinishRun(ctx, run.ID, Outcome{Status: RunFailed, Error: "svn: no such revision 9"}); err != nil {
		t.Fatal(err)
	}
	again := mustEnqueue(t, s, svnEvent("main", "9"), triggers.SourceReconcile)
	if again.Duplicate || !again.Requeued || again.RunID != enq.RunID {
		t.Fatalf("later event for a failed run: %+v", again)
	}
	if c, _ := s.CountRuns(ctx, "main", "9"); c != 1 {
		t.Fatalf("runs = %d, want the one run re-queued", c)
	}
	run = mustClaim(t, s)
	if run.ID != enq.RunID || run.Attempts != 2 {
		t.Fatalf("re-claimed %+v", run.RunSummary)
	}
	// While queued or running, a further report is a plain duplicate.
	if d := mustEnqueue(t, s, svnEvent("main", "9"), triggers.SourceSpool); !d.Duplicate || d.Requeued {
		t.Fatalf("event for a running run: %+v", d)
	}
	if err := s.RetryRun(ctx, run.ID); !errors.Is(err, ErrNotFailed) {
		t.Fatalf("retry of a running run: %v", err)
	}
	since := time.Now().Add(-time.Hour)
	if err := s.FinishRun(ctx, run.ID, Outcome{Status: RunFailed, Error: "again"}); err != nil {
		t.Fatal(err)
	}
	ids, err := s.RetryFailed(ctx, since, "")
	if err != nil || len(ids) != 1 || ids[0] != run.ID {
		t.Fatalf("retry --failed: %v %v", ids, err)
	}
	if err := s.RetryRun(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Fatalf("retry of unknown run: %v", err)
	}
}

// RetryLater keeps when the retry window started, across attempts.
func TestRetryLaterRecordsRetryWindow(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	s.now = func() time.Time { return now }
	mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	run := mustClaim(t, s)
	if err := s.RetryLater(ctx, run.ID, "connection refused", now); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	run = mustClaim(t, s)
	if !run.RetrySince.Equal(t0) || !run.Retrying() && run.Status != RunRunning {
		t.Fatalf("retry_since = %v, want %v", run.RetrySince, t0)
	}
	if err := s.RetryLater(ctx, run.ID, "connection refused", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetRun(ctx, run.ID)
	if !got.RetrySince.Equal(t0) || !got.Retrying() || !got.NotBefore.Equal(now.Add(time.Minute)) {
		t.Fatalf("after second failure: %+v", got.RunSummary)
	}
}

// A stopping daemon releases its claims, so a new Store in the same
// (live) process takes the runs at once.
func TestReleasedLeasesAreRecoveredAtOnce(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	old := openStore(t, path)
	mustEnqueue(t, old, svnEvent("main", "1"), triggers.SourceTrigger)
	mustClaim(t, old)
	if err := old.ReleaseLeases(ctx); err != nil {
		t.Fatal(err)
	}
	old.Close()
	next := openStore(t, path)
	if n, _, err := next.RequeueInterrupted(ctx, 3); err != nil || n != 1 {
		t.Fatalf("requeued %d %v, want the released run", n, err)
	}
}
