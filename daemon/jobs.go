package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/aicr-dev/aicr/audit"
)

// jobs are the daemon's background work: reconcilers, the spool drain,
// the dispatcher, the lease sweep, the run directory retention, the
// database watch, the Slack Socket Mode connections and the workers.
// They share one wake-up channel: whoever queues work (intake, drain,
// reconciler, sweep) wakes an idle worker.
type jobs struct {
	ctx    context.Context
	cancel context.CancelFunc
	sched  *cron.Cron
	bg     sync.WaitGroup
	// sending is the dispatcher, outside bg: stop does not wait for a
	// send on the wire (a reload goes on; a stop's drain waits for it,
	// within the grace, through retire).
	sending sync.WaitGroup
	wakeCh  chan struct{}
}

// wake tells one idle worker that work was queued.
func (j *jobs) wake() {
	select {
	case j.wakeCh <- struct{}{}:
	default:
	}
}

// startJobs schedules and starts everything but the workers. Every
// schedule is registered before anything starts, so a bad one leaves
// nothing running.
// sendCtx is what the dispatcher's sends in flight run under: it outlives
// the jobs, so a stop lets a send on the wire finish within the grace.
func startJobs(ctx, sendCtx context.Context, parts *Components, store *audit.Store, watch *dbWatch, opts Options) (*jobs, error) {
	cfg, log := parts.Config, opts.Logger
	j := &jobs{sched: cron.New(), wakeCh: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(ctx)
	j.ctx, j.cancel = ctx, cancel

	drainer := &spoolDrainer{cfg: cfg, store: store, log: log, now: opts.Now, wake: j.wake, metrics: parts.metrics()}
	drainAll := singleton(ctx, store, log, "spool-drain", func() { drainer.drainAll(ctx) })
	if _, err := j.sched.AddFunc(cfg.Daemon.SpoolDrainEvery, drainAll); err != nil {
		j.cancel()
		return nil, fmt.Errorf("[daemon] spool_drain_every %q: %w", cfg.Daemon.SpoolDrainEvery, err)
	}
	rec := &reconciler{store: store, log: log, now: opts.Now, wake: j.wake, metrics: parts.metrics()}
	var firstTicks []func()
	for _, repo := range cfg.Repos {
		if repo.ReconcileEvery == "off" {
			continue
		}
		repo, adapter := repo, parts.Adapters[repo.Name]
		reconcile := singleton(ctx, store, log, "reconcile "+repo.Name, func() {
			if _, err := rec.tick(ctx, repo, adapter); err != nil && ctx.Err() == nil {
				log.Error("reconcile", "repo", repo.Name, "err", err)
			}
		})
		if _, err := j.sched.AddFunc(repo.ReconcileEvery, reconcile); err != nil {
			j.cancel()
			return nil, fmt.Errorf("repo %s reconcile_every %q: %w", repo.Name, repo.ReconcileEvery, err)
		}
		firstTicks = append(firstTicks, reconcile)
	}
	// The dispatcher sends unsent dispatches (left by a previous process,
	// planned by a worker, waiting for a retry) at start, when woken, when
	// a retry falls due, and on retry_every.
	dispatcher := parts.Dispatcher
	if _, err := j.sched.AddFunc(cfg.Dispatch.RetryEvery, dispatcher.Tick); err != nil {
		j.cancel()
		return nil, fmt.Errorf("[dispatch] retry_every %q: %w", cfg.Dispatch.RetryEvery, err)
	}

	// [retention] runs on its schedule and once at start (so a daemon
	// restarted every day still prunes); delivered runs lose src/ soon.
	// The run directories are in each daemon's own data_dir, so on a
	// shared store every daemon does both for its home (one at a time per
	// home), never one daemon for all.
	ret := newRetention(cfg, store, drainer.dirs(), opts.Now, log)
	home := ""
	if h := store.RunHome(); h != "" {
		home = " " + h
	}
	retain := singleton(ctx, store, log, "retention"+home, func() { ret.run(ctx) })
	dropSources := singleton(ctx, store, log, "drop-sources"+home, func() { ret.runDropSources(ctx) })
	if err := ret.schedule(j.sched, retain, dropSources); err != nil {
		j.cancel()
		return nil, err
	}
	if err := scheduleFindingJobs(ctx, j, parts, store, opts, &firstTicks); err != nil {
		j.cancel()
		return nil, err
	}

	drainAll()
	j.goBackground(func() { retain(); dropSources() })
	for _, tick := range firstTicks {
		j.goBackground(tick)
	}
	j.sending.Add(1)
	go func() { defer j.sending.Done(); dispatcher.RunDraining(ctx, sendCtx) }()
	j.goBackground(func() { sweepExpired(ctx, store, log, opts.SweepEvery, j.wake) })
	j.goBackground(func() { watch.run(ctx, log, opts.WatchEvery) })
	startSlackSockets(ctx, j, parts, store, log)
	j.sched.Start()
	return j, nil
}

func (j *jobs) goBackground(f func()) {
	j.bg.Add(1)
	go func() { defer j.bg.Done(); f() }()
}

// stop ends every job and waits for them.
func (j *jobs) stop() {
	j.cancel()
	<-j.sched.Stop().Done()
	j.bg.Wait()
}

// startWorkers starts n workers on the queue. They stop claiming with
// the jobs and review under procCtx, so a reload or a draining shutdown
// lets the review in hand finish: the returned wait stops the jobs and
// waits for the workers.
func (j *jobs) startWorkers(procCtx context.Context, pipe *Pipeline, store *audit.Store, log *slog.Logger, n int, idlePoll time.Duration) (wait func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(j.ctx, procCtx, store, pipe, log, j.wakeCh, j.wake, idlePoll)
		}()
	}
	return func() {
		j.cancel()
		wg.Wait()
	}
}

// work claims runs until claimCtx ends and processes each under ctx.
// Claiming is a conditional update in SQLite, so any number of workers
// (and processes) can share the queue without taking a run twice.
func work(claimCtx, ctx context.Context, store *audit.Store, pipe *Pipeline, log *slog.Logger, wakeCh <-chan struct{}, wake func(), idlePoll time.Duration) {
	gate := newIdleGate(store)
	woken := true
	for claimCtx.Err() == nil && ctx.Err() == nil {
		var run *audit.Run
		claim := func() (quiet bool) {
			var err error
			run, err = store.ClaimNext(ctx)
			if err != nil && !errors.Is(err, audit.ErrNoWork) {
				if ctx.Err() == nil {
					log.Error("claim run", "err", err)
				}
				return false
			}
			return run == nil && quietWhen(ctx, store.QueueEmpty)
		}
		// A wake-up means work was queued: claim whatever the gate says.
		gate.Poll(woken, claim)
		if run == nil {
			woken = false
			t := time.NewTimer(idlePoll)
			select {
			case <-claimCtx.Done():
			case <-ctx.Done():
			case <-wakeCh:
				woken = true
			case <-t.C:
			}
			t.Stop()
			continue
		}
		woken = true
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
	gate := newIdleGate(store)
	sweep := func() (quiet bool) {
		n, abandoned, err := store.RequeueExpired(ctx, maxInterruptions)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("sweep runs with expired leases", "err", err)
			}
			return false
		}
		if n > 0 || abandoned > 0 {
			log.Info("re-queued runs whose worker stopped renewing", "count", n, "abandoned", abandoned)
			wake()
		}
		return quietWhen(ctx, store.NoneRunning)
	}
	// Once at start as well, with everything else that reads the store
	// then, so an idle daemon's first sweep does not bring the SQLite
	// engine back after the start-up trim.
	gate.Poll(true, sweep)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		gate.Poll(false, sweep)
	}
}
