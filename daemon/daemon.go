// Package daemon is the long-running half of aicr: it loads the config,
// accepts signed events from hooks, queues them durably, drains spool
// directories, and runs each queued review through the pipeline.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/triggers"
)

// ErrDataDirLocked means another daemon is running on the same data_dir.
var ErrDataDirLocked = errors.New("data_dir is locked")

// maxInterruptions is how many attempts of a run may end with the daemon
// stopping before the run is failed instead of resumed again.
const maxInterruptions = 3

// Options are what the process hands the daemon; main only adapts the OS.
type Options struct {
	Config *Config
	Logger *slog.Logger
	Stdout io.Writer
	// Ready, when set, receives the bound listen address once the intake
	// accepts connections (tests listen on port 0).
	Ready func(addr string)
	Now   func() time.Time
	// IdlePoll is how often idle workers look for work queued by another
	// process (e.g. `aicr review`); default 2s.
	IdlePoll time.Duration
	// LeaseTTL is how long a worker's claim on a run holds without
	// renewal; default audit.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// SweepEvery is how often running runs whose lease ran out (a worker
	// that could not record its outcome, a dead `aicr review`) are put
	// back in the queue; default 30s.
	SweepEvery time.Duration
	// WatchEvery is how often the audit database file is checked to still
	// be the one the daemon has open; default 10s.
	WatchEvery time.Duration
}

// DBPath is where the queue and audit trail live under data_dir.
func DBPath(cfg *Config) string { return filepath.Join(cfg.Daemon.DataDir, "aicr.db") }

// Run serves until ctx is cancelled. Work in flight when ctx ends stays
// `running` in the queue and is resumed by the next start.
func Run(ctx context.Context, opts Options) error {
	cfg, log := opts.Config, opts.Logger
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IdlePoll == 0 {
		opts.IdlePoll = 2 * time.Second
	}
	if opts.SweepEvery == 0 {
		opts.SweepEvery = 30 * time.Second
	}
	if opts.WatchEvery == 0 {
		opts.WatchEvery = 10 * time.Second
	}
	warnings, err := Preflight(cfg)
	for _, w := range warnings {
		log.Warn("config", "warning", w)
	}
	if err != nil {
		return err
	}
	secret, err := cfg.DaemonSecret()
	if err != nil {
		return fmt.Errorf("trigger secret: %w", err)
	}
	unlock, err := lockDataDir(cfg.Daemon.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	// Listen before anything starts in the background: a port that is
	// taken must end the process at once with the reason, not leave it
	// alive holding the data_dir lock.
	ln, err := net.Listen("tcp", cfg.Daemon.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another daemon running? change [daemon] listen)", cfg.Daemon.Listen, err)
	}
	defer ln.Close()
	store, err := audit.Open(ctx, DBPath(cfg))
	if err != nil {
		return fmt.Errorf("open audit store: %w", err)
	}
	defer store.Close()
	if opts.LeaseTTL > 0 {
		store.SetLeaseTTL(opts.LeaseTTL)
	}
	watch, err := newDBWatch(store.Path())
	if err != nil {
		return err
	}
	if n, abandoned, err := store.RequeueInterrupted(ctx, maxInterruptions); err != nil {
		return fmt.Errorf("requeue interrupted runs: %w", err)
	} else if n > 0 || abandoned > 0 {
		log.Info("resuming interrupted runs", "count", n, "abandoned", abandoned)
	}
	pipe, err := NewPipeline(cfg, PipelineDeps{Store: store, Logger: log, Stdout: opts.Stdout, Now: opts.Now})
	if err != nil {
		return err
	}
	if n, err := store.ReleaseDispatchLeases(ctx); err != nil {
		return fmt.Errorf("re-queue unsent dispatches: %w", err)
	} else if n > 0 {
		log.Info("re-queued interrupted deliveries", "count", n)
	}

	wakeCh := make(chan struct{}, 1)
	wake := func() {
		select {
		case wakeCh <- struct{}{}:
		default:
		}
	}

	drainer := &spoolDrainer{cfg: cfg, store: store, log: log, now: opts.Now, wake: wake}
	drainer.drainAll(ctx)
	sched := cron.New()
	if _, err := sched.AddFunc(cfg.Daemon.SpoolDrainEvery, func() { drainer.drainAll(ctx) }); err != nil {
		return fmt.Errorf("[daemon] spool_drain_every %q: %w", cfg.Daemon.SpoolDrainEvery, err)
	}
	var bg sync.WaitGroup
	rec := &reconciler{store: store, log: log, now: opts.Now, wake: wake}
	for _, repo := range cfg.Repos {
		if repo.ReconcileEvery == "off" {
			continue
		}
		repo, adapter := repo, pipe.adapters[repo.Name]
		reconcile := func() {
			if _, err := rec.tick(ctx, repo, adapter); err != nil && ctx.Err() == nil {
				log.Error("reconcile", "repo", repo.Name, "err", err)
			}
		}
		if _, err := sched.AddFunc(repo.ReconcileEvery, reconcile); err != nil {
			return fmt.Errorf("repo %s reconcile_every %q: %w", repo.Name, repo.ReconcileEvery, err)
		}
		bg.Add(1)
		go func() { defer bg.Done(); reconcile() }()
	}
	// The dispatcher sends unsent dispatches (left by a previous process,
	// planned by a worker, waiting for a retry) at start, when woken, when
	// a retry falls due, and on retry_every.
	dispatcher := pipe.delivery.Dispatcher
	if _, err := sched.AddFunc(cfg.Dispatch.RetryEvery, dispatcher.Wake); err != nil {
		return fmt.Errorf("[dispatch] retry_every %q: %w", cfg.Dispatch.RetryEvery, err)
	}
	bg.Add(1)
	go func() { defer bg.Done(); dispatcher.Run(ctx) }()
	bg.Add(2)
	go func() { defer bg.Done(); sweepExpired(ctx, store, log, opts.SweepEvery, wake) }()
	go func() { defer bg.Done(); watch.run(ctx, log, opts.WatchEvery) }()
	sched.Start()
	// Jobs still running when Run returns would use a closed store.
	defer func() { <-sched.Stop().Done(); bg.Wait() }()

	in := &intake{cfg: cfg, secret: secret, store: store, replay: triggers.NewReplayGuard(), log: log, now: opts.Now, wake: wake}
	srv := &http.Server{Handler: watch.gate(in.routes()), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	log.Info("daemon started", "listen", ln.Addr().String(), "data_dir", cfg.Daemon.DataDir, "workers", cfg.Daemon.Workers, "repos", len(cfg.Repos))
	if opts.Ready != nil {
		opts.Ready(ln.Addr().String())
	}

	var wg sync.WaitGroup
	for i := 0; i < cfg.Daemon.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(ctx, store, pipe, log, wakeCh, wake, opts.IdlePoll)
		}()
	}

	select {
	case <-ctx.Done():
	case err = <-srvErr:
		err = fmt.Errorf("intake server: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	wg.Wait()
	if err := store.ReleaseLeases(shutdownCtx); err != nil {
		log.Warn("release run leases; the next start waits for them to run out", "err", err)
	}
	log.Info("daemon stopped")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// work claims and processes runs until ctx ends. Claiming is a conditional
// update in SQLite, so any number of workers (and processes) can share the
// queue without taking a run twice.
func work(ctx context.Context, store *audit.Store, pipe *Pipeline, log *slog.Logger, wakeCh <-chan struct{}, wake func(), idlePoll time.Duration) {
	for ctx.Err() == nil {
		run, err := store.ClaimNext(ctx)
		if err != nil && !errors.Is(err, audit.ErrNoWork) {
			if ctx.Err() == nil {
				log.Error("claim run", "err", err)
			}
		}
		if run == nil {
			select {
			case <-ctx.Done():
			case <-wakeCh:
			case <-time.After(idlePoll):
			}
			continue
		}
		// Another worker may be idle while this one is busy; pass the
		// wake-up on in case more work is queued.
		wake()
		release := HoldLease(ctx, store, run.ID, log)
		if _, err := pipe.Process(ctx, run, ProcessOptions{}); err != nil && ctx.Err() == nil {
			// The outcome could not be recorded (disk full...): the run
			// stays running, and once its lease runs out the sweep puts
			// it back in the queue.
			log.Error("process run", "run_id", run.ID, "err", err)
		}
		release()
	}
}

// sweepExpired hands back running runs whose lease ran out, for as long
// as the daemon runs: without it a run whose bookkeeping failed would
// wait for the next restart.
func sweepExpired(ctx context.Context, store *audit.Store, log *slog.Logger, every time.Duration, wake func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, abandoned, err := store.RequeueExpired(ctx, maxInterruptions)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("sweep runs with expired leases", "err", err)
			}
			continue
		}
		if n > 0 || abandoned > 0 {
			log.Info("re-queued runs whose worker stopped renewing", "count", n, "abandoned", abandoned)
			wake()
		}
	}
}
