package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// ReloadPath is the signed endpoint `aicr reload` posts to.
const ReloadPath = "/v1/reload"

// ReloadResult is what a reload did, answered to `aicr reload` and
// logged. Error is set when the new config was refused and the old one
// kept.
type ReloadResult struct {
	Status string `json:"status"` // reloaded | refused
	// Error says why the file was refused; the running config is unchanged.
	Error        string   `json:"error,omitempty"`
	Version      string   `json:"version"`
	ConfigPath   string   `json:"config_path"`
	ConfigDigest string   `json:"config_digest"`
	Warnings     []string `json:"warnings,omitempty"`
	// RestartNeeded lists changed settings a reload cannot apply; the
	// daemon keeps their old values until it is restarted.
	RestartNeeded []string `json:"restart_needed,omitempty"`
}

// fileDigest is config.Digest of the file at path; "" when it cannot be
// read (the daemon was handed a parsed config).
func fileDigest(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return config.Digest(data)
}

// generation is one config's running parts: the jobs (which own the
// claim loop of their workers), the workers and the intake. A reload
// starts a new generation and retires the old one; the old workers finish
// the reviews they hold under the old config.
type generation struct {
	cfg         *config.Config
	digest      string
	parts       *Components
	jobs        *jobs
	stopWorkers func()
	intake      http.Handler
}

// lifecycle owns the running generation, reloads and the draining stop.
type lifecycle struct {
	opts    Options
	store   *audit.Store
	watch   *dbWatch
	metrics *Metrics
	replay  *triggers.ReplayGuard
	// adminSecret signs operator requests (reload); see AdminSecretName.
	adminSecret []byte
	// procCtx is what reviews run under: it outlives a retired
	// generation and ends only when a draining stop runs out of grace.
	procCtx context.Context
	// jobsCtx is the parent of every generation's jobs: the serve ctx
	// without its cancellation, since stopping is a drain, not an abort.
	jobsCtx context.Context

	// reloading serialises reloads and the stop; mu guards the fields
	// below it for the short reads of /healthz and the reload endpoint.
	reloading sync.Mutex
	mu        sync.Mutex
	current   *generation
	draining  bool
	lastErr   string
	retiring  sync.WaitGroup // retired generations' workers still finishing

	intake atomic.Pointer[http.Handler]
}

// start builds nothing: it starts parts (already built from cfg) as the
// running generation.
func (lc *lifecycle) start(cfg *config.Config, digest string, secret []byte, parts *Components) (*generation, error) {
	j, err := startJobs(lc.jobsCtx, lc.procCtx, parts, lc.store, lc.watch, lc.opts)
	if err != nil {
		return nil, err
	}
	g := &generation{cfg: cfg, digest: digest, parts: parts, jobs: j}
	g.intake = newIntake(cfg, secret, lc, j).routes()
	g.stopWorkers = j.startWorkers(lc.procCtx, parts.Pipeline, lc.store, lc.opts.Logger, cfg.Daemon.Workers, lc.opts.IdlePoll)
	j.goBackground(func() { trimWhenIdle(j.ctx, parts.Pipeline, lc.opts.Logger) })
	lc.mu.Lock()
	lc.current = g
	lc.mu.Unlock()
	lc.intake.Store(&g.intake)
	lc.metrics.setConfig(digest)
	return g, nil
}

// retire stops g's jobs and its workers' claiming; the workers finish
// what they hold in the background (counted in lc.retiring).
func (lc *lifecycle) retire(g *generation) {
	g.jobs.stop()
	lc.retiring.Add(1)
	go func() {
		defer lc.retiring.Done()
		g.stopWorkers()
		g.jobs.sending.Wait()
		// The reports of the runs they finished were released to g's
		// dispatcher, which no longer runs: the current one sends them.
		lc.mu.Lock()
		cur := lc.current
		lc.mu.Unlock()
		if cur != g && cur.parts.Dispatcher != nil {
			cur.parts.Dispatcher.Wake()
		}
	}()
}

// reload re-reads the running config's file, checks it as a start
// would (parse, validation, preflight, secret, building every part) and
// only then swaps it in; anything wrong keeps the running config.
func (lc *lifecycle) reload() ReloadResult {
	lc.reloading.Lock()
	defer lc.reloading.Unlock()
	log := lc.opts.Logger
	lc.mu.Lock()
	old, draining := lc.current, lc.draining
	lc.mu.Unlock()
	res := ReloadResult{Version: lc.opts.Version, ConfigPath: old.cfg.Path, ConfigDigest: old.digest}
	refuse := func(err error) ReloadResult {
		res.Status, res.Error = "refused", err.Error()
		lc.setLastErr(res.Error)
		lc.metrics.reloaded(false, "")
		log.Error("config reload refused; the daemon keeps running with the previous config", "config", old.cfg.Path,
			"config_digest", old.digest, "err", err)
		return res
	}
	if draining {
		return refuse(errors.New("the daemon is stopping"))
	}
	data, err := os.ReadFile(old.cfg.Path)
	if err != nil {
		return refuse(fmt.Errorf("read config: %w", err))
	}
	cfg, err := config.Parse(old.cfg.Path, old.cfg.Path, data)
	if err != nil {
		return refuse(err)
	}
	res.RestartNeeded = keepUnreloadable(old.cfg, cfg)
	warnings, err := config.Preflight(cfg)
	res.Warnings = warnings
	if err != nil {
		return refuse(err)
	}
	secret, err := cfg.DaemonSecret()
	if err != nil {
		return refuse(fmt.Errorf("trigger secret: %w", err))
	}
	parts, err := Build(cfg, Deps{Store: lc.store, Logger: log, Stdout: lc.opts.Stdout, Now: lc.opts.Now, Metrics: lc.metrics}, BuildOptions{})
	if err != nil {
		return refuse(err)
	}
	// Old jobs stop before the new ones start, so two spool drains or
	// reconcilers of one repo never run at once.
	lc.retire(old)
	digest := config.Digest(data)
	if _, err := lc.start(cfg, digest, secret, parts); err != nil {
		// Every schedule was checked by config.Preflight or startJobs before;
		// should one still fail, the old config runs again.
		if _, rerr := lc.start(old.cfg, old.digest, mustSecret(old.cfg), old.parts); rerr != nil {
			log.Error("restart the previous config after a failed reload", "err", rerr)
		}
		return refuse(err)
	}
	res.Status, res.ConfigDigest = "reloaded", digest
	lc.setLastErr("")
	lc.metrics.reloaded(true, digest)
	for _, w := range warnings {
		log.Warn("config", "warning", w)
	}
	for _, k := range res.RestartNeeded {
		log.Warn("config reload: this change takes effect at the next restart", "key", k)
	}
	log.Info("config reloaded", "version", lc.opts.Version, "config", cfg.Path, "config_digest", digest,
		"previous_digest", old.digest, "workers", cfg.Daemon.Workers, "repos", len(cfg.Repos))
	return res
}

func (lc *lifecycle) setLastErr(s string) {
	lc.mu.Lock()
	lc.lastErr = s
	lc.mu.Unlock()
}

func mustSecret(cfg *config.Config) []byte {
	s, _ := cfg.DaemonSecret()
	return s
}

// keepUnreloadable gives next the settings a running daemon cannot
// change (its listener and its locked data_dir, which every path under
// it derives from) and names those that differ.
func keepUnreloadable(running, next *config.Config) (restart []string) {
	if next.Daemon.Listen != running.Daemon.Listen {
		restart = append(restart, "[daemon] listen")
		next.Daemon.Listen = running.Daemon.Listen
	}
	if next.Daemon.DataDir != running.Daemon.DataDir {
		restart = append(restart, "[daemon] data_dir")
		next.Daemon.DataDir = running.Daemon.DataDir
	}
	// The store is open for the life of the process.
	if next.Store != running.Store {
		restart = append(restart, "[store]")
		next.Store = running.Store
	}
	return restart
}

// drain stops taking work, lets the reviews in flight (and the sends on
// the wire) finish until deadline and delivers their reports within what
// is left of it; reviews still running then are cut short (the caller
// re-queues them). It returns by deadline plus what cut work takes to
// notice its context, at most cutWait, so the process ends within its
// grace even when something does not. ctx is the daemon's, already done
// when a stop drains: only its values are kept.
func (lc *lifecycle) drain(ctx context.Context, deadline time.Time, cutWait time.Duration, abort context.CancelFunc) (cut bool) {
	// A reload in progress finishes first, so the generation retired here
	// is the last one.
	lc.reloading.Lock()
	defer lc.reloading.Unlock()
	lc.mu.Lock()
	lc.draining = true
	g := lc.current
	lc.mu.Unlock()
	// Retiring waits for the jobs, the dispatcher's sends in flight
	// among them, so it counts against the grace like the reviews.
	done := make(chan struct{})
	go func() { lc.retire(g); lc.retiring.Wait(); close(done) }()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		abort()
		lc.awaitCut(done, cutWait)
		return true
	case <-lc.opts.Abort:
		lc.opts.Logger.Warn("second stop signal: cutting the reviews in flight short")
		abort()
		lc.awaitCut(done, cutWait)
		return true
	}
	// The jobs (and so the dispatcher's loop) stopped with the
	// generation; the reports of the reviews just finished go out now
	// rather than at the next start.
	if d := g.parts.Dispatcher; d != nil {
		ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		defer cancel()
		if _, err := d.DriveDue(ctx); err != nil && ctx.Err() == nil {
			lc.opts.Logger.Warn("deliver reports while stopping; the next start sends them", "err", err)
		}
	}
	return false
}

// awaitCut waits up to wait for work cut short to end; what has not
// by then is left to the process exit (its runs and dispatches are
// taken up again by the next start).
func (lc *lifecycle) awaitCut(done <-chan struct{}, wait time.Duration) {
	select {
	case <-done:
	case <-time.After(wait):
		lc.opts.Logger.Warn("work cut short at the end of the grace has not stopped; exiting without it", "waited", wait.String())
	}
}

func (lc *lifecycle) isDraining() bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.draining
}

func (lc *lifecycle) running() (cfg *config.Config, digest, lastErr string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.current.cfg, lc.current.digest, lc.lastErr
}

// postReload is POST /v1/reload: signed like an event (same headers, same
// replay window), but with the operator's secret (AdminSecretName), not
// the trigger secret: the hook's account holds that one, and re-reading
// the config (new channels, agent, repos) is the operator's call.
func (lc *lifecycle) postReload(w http.ResponseWriter, r *http.Request) {
	now := lc.opts.Now()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<10))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, triggers.ErrorBody{Error: "reload body over 4 KiB", Code: "body_too_large"})
		return
	}
	ts, sigHdr := r.Header.Get(triggers.HeaderTimestamp), r.Header.Get(triggers.HeaderSignature)
	err = errors.New("no operator secret")
	if len(lc.adminSecret) > 0 {
		err = triggers.Verify(lc.adminSecret, ts, sigHdr, body, now)
	}
	if err != nil {
		cfg, _, _ := lc.running()
		if secret, serr := cfg.DaemonSecret(); serr == nil && triggers.Verify(secret, ts, sigHdr, body, now) == nil {
			lc.opts.Logger.Warn("reload request signed with the trigger secret refused: reload needs the operator's secret", "remote", r.RemoteAddr)
			writeJSON(w, http.StatusForbidden, triggers.ErrorBody{Code: "not_operator",
				Error: "reload refused: the trigger secret (the hook's) cannot reload the daemon; aicr reload signs with the operator's secret " +
					AdminSecretPath(cfg.Daemon.DataDir) + ", so run it as root or the daemon's user, or send SIGHUP"})
			return
		}
		lc.opts.Logger.Warn("unauthenticated reload request", "remote", r.RemoteAddr, "err", err)
		writeJSON(w, http.StatusUnauthorized, triggers.ErrorBody{Error: "reload refused: the request is not signed with the daemon's operator secret", Code: "bad_signature"})
		return
	}
	sig := r.Header.Get(triggers.HeaderSignature)
	if lc.replay.Check(sig, now) != nil {
		writeJSON(w, http.StatusConflict, triggers.ErrorBody{Error: "this exact signed request was already received; re-sign to send again", Code: "replayed"})
		return
	}
	if seen, err := lc.store.SeenSignature(r.Context(), sig, now, triggers.ReplayWindow); err == nil && seen {
		writeJSON(w, http.StatusConflict, triggers.ErrorBody{Error: "this exact signed request was already received; re-sign to send again", Code: "replayed"})
		return
	}
	// Building the new config's parts and stopping the old jobs may take
	// longer than an event's write timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(2 * time.Minute))
	lc.opts.Logger.Info("config reload requested", "remote", r.RemoteAddr)
	res := lc.reload()
	status := http.StatusOK
	if res.Status != "reloaded" {
		status = http.StatusUnprocessableEntity
	}
	writeJSON(w, status, res)
}
