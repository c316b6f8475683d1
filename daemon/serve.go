package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/sandbox"
	"github.com/aicr-dev/aicr/triggers"
)

// Serve runs the daemon until ctx is cancelled: build the parts, start
// the background jobs, serve the intake and the workers. When ctx ends
// it drains: no new run is claimed, reviews in flight get
// [daemon] shutdown_grace to finish, and those still running then are cut
// short and put back in the queue. A signal on opts.Reload re-reads the
// config file (see lifecycle.reload).
func Serve(ctx context.Context, opts Options) error {
	opts = opts.withDefaults()
	cfg, log := opts.Config, opts.Logger
	secret, err := checkBeforeServe(cfg, log)
	if err != nil {
		return err
	}
	unlock, err := lockDataDir(cfg.Daemon.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	adminSecret, err := ensureAdminSecret(cfg.Daemon.DataDir)
	if err != nil {
		return err
	}
	// Listen before anything starts in the background: a port that is
	// taken must end the process at once with the reason, not leave it
	// alive holding the data_dir lock.
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Daemon.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another daemon running? change [daemon] listen)", cfg.Daemon.Listen, err)
	}
	defer ln.Close()
	webLn, err := listenWeb(ctx, cfg)
	if err != nil {
		return err
	}
	if webLn != nil {
		defer webLn.Close()
	}
	digest := opts.ConfigDigest
	if digest == "" {
		digest = fileDigest(cfg.Path)
	}
	log.Info("aicr daemon starting", "version", opts.Version, "config", cfg.Path, "config_digest", digest)
	store, watch, err := openServeStore(ctx, opts)
	if err != nil {
		return err
	}
	defer store.Close()
	metrics := NewMetrics(store, opts.Version)
	parts, err := Build(cfg, Deps{Store: store, Logger: log, Stdout: opts.Stdout, Now: opts.Now, Metrics: metrics}, BuildOptions{})
	if err != nil {
		return err
	}
	if err := recoverLeftovers(ctx, cfg, store, log); err != nil {
		return err
	}
	stopWeb, err := startWeb(cfg, store, webLn, log, opts.Now)
	if err != nil {
		return err
	}
	defer stopWeb(ctx)

	// Reviews run under procCtx, which the stop cancels only once the
	// grace period is over; the jobs of every generation under jobsCtx.
	procCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	jobsCtx, stopAll := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAll()
	lc := &lifecycle{opts: opts, store: store, watch: watch, metrics: metrics, replay: triggers.NewReplayGuard(),
		procCtx: procCtx, jobsCtx: jobsCtx, adminSecret: adminSecret}
	if _, err := lc.start(cfg, digest, secret, parts); err != nil {
		return err
	}
	srv := &http.Server{Handler: watch.gate(lc.routes(), log), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	beatDone := startHeartbeat(jobsCtx, cfg, store, opts.Version, ln.Addr().String(), log)
	defer func() { stopAll(); <-beatDone }()
	log.Info("daemon started", "version", opts.Version, "listen", ln.Addr().String(), "data_dir", cfg.Daemon.DataDir,
		"workers", cfg.Daemon.Workers, "repos", len(cfg.Repos), "config_digest", digest, "store", config.StoreLocation(cfg))
	if opts.Ready != nil {
		opts.Ready(ln.Addr().String())
	}

	err = serveUntilStopped(ctx, lc, srvErr, opts.Reload)
	drainAndStop(ctx, lc, srv, store, abort, log)
	log.Info("daemon stopped")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// checkBeforeServe reports the config's warnings and refuses a config
// or a missing trigger secret the daemon cannot serve with.
func checkBeforeServe(cfg *config.Config, log *slog.Logger) (secret []byte, err error) {
	warnings, err := config.Preflight(cfg)
	for _, w := range warnings {
		log.Warn("config", "warning", w)
	}
	if err != nil {
		return nil, err
	}
	secret, err = cfg.DaemonSecret()
	if err != nil {
		return nil, fmt.Errorf("trigger secret: %w", err)
	}
	return secret, nil
}

// openServeStore opens and migrates the store, watches its file and puts
// back in the queue the runs a stopped daemon left claimed.
func openServeStore(ctx context.Context, opts Options) (*audit.Store, *dbWatch, error) {
	cfg, log := opts.Config, opts.Logger
	store, err := config.OpenStore(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("open audit store: %w", err)
	}
	if m := store.Migrated(); m.From != m.To {
		log.Info("audit database migrated", "path", store.Path(), "from_version", m.From, "to_version", m.To)
	} else {
		log.Info("audit database", "path", store.Path(), "schema_version", m.To)
	}
	if opts.LeaseTTL > 0 {
		store.SetLeaseTTL(opts.LeaseTTL)
	}
	watch, err := newDBWatch(store.Path())
	if err != nil {
		_ = store.Close()
		return nil, nil, err
	}
	if n, abandoned, err := store.RequeueInterrupted(ctx, maxInterruptions); err != nil {
		_ = store.Close()
		return nil, nil, fmt.Errorf("requeue interrupted runs: %w", err)
	} else if n > 0 || abandoned > 0 {
		log.Info("resuming interrupted runs", "count", n, "abandoned", abandoned)
	}
	return store, watch, nil
}

// recoverLeftovers clears what a killed daemon left outside the run
// queue: its sandbox containers and its delivery leases.
func recoverLeftovers(ctx context.Context, cfg *config.Config, store *audit.Store, log *slog.Logger) error {
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
	// Before any sender starts: rows an older aicr planned get the report
	// it would have sent, so the dispatcher never asks the daemon.
	if n, err := FillDispatchReports(ctx, cfg, store, log); err != nil {
		return fmt.Errorf("plan the reports of older dispatches: %w", err)
	} else if n > 0 {
		log.Info("planned the reports of dispatches an older aicr planned", "count", n)
	}
	return nil
}

// startHeartbeat says which daemons are alive on a shared store; the
// returned channel closes once it has ended (and said farewell), which
// must be before the store closes.
func startHeartbeat(ctx context.Context, cfg *config.Config, store *audit.Store, version, listen string, log *slog.Logger) <-chan struct{} {
	beatDone := make(chan struct{})
	if cfg.Store.Shared() {
		go func() { defer close(beatDone); heartbeat(ctx, store, version, listen, log) }()
	} else {
		close(beatDone) // one daemon per SQLite file: nobody to tell
	}
	return beatDone
}

// serveUntilStopped reloads on each signal until ctx ends or the intake
// server fails, and returns the server's error if it did.
func serveUntilStopped(ctx context.Context, lc *lifecycle, srvErr <-chan error, reload <-chan struct{}) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-srvErr:
			return fmt.Errorf("intake server: %w", err)
		case <-reload:
			lc.reload()
		}
	}
}

// drainAndStop is the stop: the intake keeps accepting events while the
// reviews in hand finish (they are queued for the next start), and
// /healthz says draining; then the intake closes and runs cut short go
// back to the queue.
func drainAndStop(ctx context.Context, lc *lifecycle, srv *http.Server, store *audit.Store, abort context.CancelFunc, log *slog.Logger) {
	running, _, _ := lc.running()
	grace := running.Daemon.ShutdownGrace
	log.Info("daemon stopping: finishing reviews in flight", "grace", grace.String())
	// The whole stop fits in the grace: reviews and deliveries get it
	// less a reserve for work cut short to end, closing the intake and
	// re-queueing.
	stopAt := time.Now().Add(grace)
	reserve, cutWait := min(2*time.Second, grace/5), min(time.Second, grace/5)
	if lc.drain(ctx, stopAt.Add(-reserve-cutWait), cutWait, abort) {
		log.Warn("reviews still running after the grace period were cut short; they are re-queued", "grace", grace.String())
	}
	shutdownCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), stopAt)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	// Runs cut short go back to the queue now (their interruption
	// counted), so another daemon on the database, or the next start,
	// takes them at once.
	if n, _, rerr := store.RequeueInterrupted(shutdownCtx, maxInterruptions); rerr != nil {
		log.Warn("re-queue runs cut short; the next start does it", "err", rerr)
		if err := store.ReleaseLeases(shutdownCtx); err != nil {
			log.Warn("release run leases; the next start waits for them to run out", "err", err)
		}
	} else if n > 0 {
		log.Info("re-queued runs cut short by the stop", "count", n)
	}
}

// newIntake is the intake of one config generation; the replay guard is
// the process's, so a reload does not forget recent signatures.
func newIntake(cfg *config.Config, secret []byte, lc *lifecycle, j *jobs) *intake {
	return &intake{cfg: cfg, secret: secret, store: lc.store, replay: lc.replay, log: lc.opts.Logger, now: lc.opts.Now, wake: j.wake, metrics: lc.metrics, version: lc.opts.Version}
}
