package daemon

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

func startDaemonWith(t *testing.T, cfg *config.Config, opts Options) *runningDaemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &runningDaemon{cfg: cfg, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	opts.Config, opts.Logger, opts.Stdout = cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard
	opts.Ready = func(a string) { ready <- a }
	opts.IdlePoll = 50 * time.Millisecond
	go func() { d.done <- Serve(ctx, opts) }()
	select {
	case d.addr = <-ready:
	case err := <-d.done:
		t.Fatalf("daemon did not start: %v", err)
	}
	t.Cleanup(d.stop)
	return d
}

// A run left running by a live process that stopped renewing its lease
// (a worker whose outcome could not be written on a full disk, a wedged
// `aicr review`) is put back in the queue by the running daemon itself,
// not only at its next restart.
func TestSweepRequeuesRunWhoseLeaseRanOut(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	cfg.Daemon.MissingRevisionGrace = time.Nanosecond
	startDaemonWith(t, cfg, Options{SweepEvery: 20 * time.Millisecond})

	other, err := audit.Open(context.Background(), config.DBPath(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetLeaseTTL(time.Millisecond)
	ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "42"}
	stuck, err := other.EnqueueClaimed(context.Background(), ev, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	run := waitRun(t, cfg, func(r audit.RunSummary) bool { return r.ID == stuck.ID && r.Status.Final() })
	if run.Status != audit.RunFailed || run.Attempts != 2 {
		t.Fatalf("want the stuck run re-queued and done by the daemon (attempt 2), got %+v", run)
	}
}

// A run whose owner keeps renewing (a live foreground review) is never
// taken, however often the sweep runs.
func TestSweepLeavesRenewedRunAlone(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	startDaemonWith(t, cfg, Options{SweepEvery: 10 * time.Millisecond})
	cli, err := audit.Open(context.Background(), config.DBPath(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cli.SetLeaseTTL(3 * time.Second)
	ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "42"}
	run, err := cli.EnqueueClaimed(context.Background(), ev, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	release := HoldLease(context.Background(), cli, run.ID, slog.New(slog.DiscardHandler))
	defer release()
	// Many sweeps and several lease periods pass; the run must stay with
	// its owner, which can still renew it.
	for i := 0; i < 20; i++ {
		time.Sleep(400 * time.Millisecond)
		got, err := cli.GetRun(context.Background(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != audit.RunRunning || got.Attempts != 1 || got.Lease.Owner != cli.Self().Owner {
			t.Fatalf("a live owner's run was taken: %+v", got.RunSummary)
		}
	}
}

// Writes that fail (disk full) when a worker records its run's outcome
// leave the run `running`; once writes succeed again the daemon re-queues
// it by itself, without a restart. The failing writes are injected with a
// trigger that aborts every update ending a running run, as SQLITE_FULL
// would; dropping it is the disk getting space back.
func TestRunStrandedByFailingWritesIsRequeuedWhenWritesWork(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	cfg.Daemon.MissingRevisionGrace = time.Nanosecond
	ctx := context.Background()
	// Created before the daemon so the trigger is in place for its first
	// run.
	s, err := audit.Open(ctx, config.DBPath(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A busy timeout like the store's own: the daemon writes (sweeps,
	// lease renewals) while the test adds and drops its trigger.
	raw, err := sql.Open("sqlite", config.DBPath(cfg)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	full := func(stmt string) error { _, err := raw.Exec(stmt); return err }
	if err := full(`CREATE TRIGGER disk_full BEFORE UPDATE OF status ON runs
		WHEN OLD.status = 'running' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	d := startDaemonWith(t, cfg, Options{LeaseTTL: 300 * time.Millisecond, SweepEvery: 20 * time.Millisecond})
	d.send(t, "42")
	// The worker tried and failed to record the outcome; its lease runs
	// out and the sweep's own update fails too while the disk is full.
	waitRun(t, cfg, func(r audit.RunSummary) bool { return r.Status == audit.RunRunning && r.RunDir != "" })
	time.Sleep(time.Second)
	if r := waitRun(t, cfg, func(audit.RunSummary) bool { return true }); r.Status != audit.RunRunning {
		t.Fatalf("with writes failing the run cannot have moved on: %+v", r)
	}
	if err := full(`DROP TRIGGER disk_full`); err != nil {
		t.Fatal(err)
	}
	run := waitRun(t, cfg, func(r audit.RunSummary) bool { return r.Status.Final() })
	if run.Status != audit.RunFailed || run.Attempts != 2 || !strings.Contains(run.Error, "no such revision") {
		t.Fatalf("want the stranded run re-queued and done again, got %+v", run)
	}
}
