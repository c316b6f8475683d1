package daemon

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/triggers"
)

func startDaemonWith(t *testing.T, cfg *Config, opts Options) *runningDaemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &runningDaemon{cfg: cfg, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	opts.Config, opts.Logger, opts.Stdout = cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard
	opts.Ready = func(a string) { ready <- a }
	opts.IdlePoll = 50 * time.Millisecond
	go func() { d.done <- Run(ctx, opts) }()
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

	other, err := audit.Open(context.Background(), DBPath(cfg))
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
	cli, err := audit.Open(context.Background(), DBPath(cfg))
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
