package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aicr-dev/aicr/sandbox"
	"github.com/aicr-dev/aicr/triggers"
)

// Serve runs the daemon until ctx is cancelled: build the parts, start
// the background jobs, serve the intake and the workers. Work in flight
// when ctx ends stays `running` in the queue and is resumed by the next
// start.
func Serve(ctx context.Context, opts Options) error {
	opts = opts.withDefaults()
	cfg, log := opts.Config, opts.Logger
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
	store, err := OpenStore(ctx, cfg)
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
	parts, err := Build(cfg, Deps{Store: store, Logger: log, Stdout: opts.Stdout, Now: opts.Now}, BuildOptions{})
	if err != nil {
		return err
	}
	// Containers of runs a killed daemon left behind hold memory and
	// would clash with the resumed runs' names. A failure here is not
	// fatal: a broken podman fails each run with its remedy instead.
	if cfg.Sandbox.Kind == "podman" {
		if n, err := sandbox.RemoveOrphans(ctx, cfg.Sandbox); err != nil {
			log.Warn("remove orphaned sandbox containers", "err", err)
		} else if n > 0 {
			log.Info("removed orphaned sandbox containers", "count", n)
		}
	}
	// On a shared store another daemon may be sending under a lease right
	// now; leases there only end by running out.
	if !cfg.Store.Shared() {
		if n, err := store.ReleaseDispatchLeases(ctx); err != nil {
			return fmt.Errorf("re-queue unsent dispatches: %w", err)
		} else if n > 0 {
			log.Info("re-queued interrupted deliveries", "count", n)
		}
	}

	j, err := startJobs(ctx, parts, store, watch, opts)
	if err != nil {
		return err
	}
	// Jobs still running when Serve returns would use a closed store.
	defer j.stop()

	in := &intake{cfg: cfg, secret: secret, store: store, replay: triggers.NewReplayGuard(), log: log, now: opts.Now, wake: j.wake, version: opts.Version}
	srv := &http.Server{Handler: watch.gate(in.routes()), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	j.goBackground(func() { heartbeat(j.ctx, store, ln.Addr().String(), log) })
	log.Info("daemon started", "listen", ln.Addr().String(), "data_dir", cfg.Daemon.DataDir, "workers", cfg.Daemon.Workers, "repos", len(cfg.Repos), "store", StoreLocation(cfg))
	if opts.Ready != nil {
		opts.Ready(ln.Addr().String())
	}

	stopWorkers := j.startWorkers(parts.Pipeline, store, log, cfg.Daemon.Workers, opts.IdlePoll)
	j.goBackground(func() { trimWhenIdle(j.ctx, parts.Pipeline, log) })
	select {
	case <-ctx.Done():
	case err = <-srvErr:
		err = fmt.Errorf("intake server: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	// Stops the jobs too (the intake failing must not leave workers
	// running), then waits for the workers.
	stopWorkers()
	if err := store.ReleaseLeases(shutdownCtx); err != nil {
		log.Warn("release run leases; the next start waits for them to run out", "err", err)
	}
	log.Info("daemon stopped")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
