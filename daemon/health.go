package daemon

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/aicr-dev/aicr/audit"
)

// Health is GET /healthz: 200 while the daemon takes work, 503 while it
// drains for a stop or cannot read its database (and, through dbWatch,
// once the database file was deleted or replaced). The numbers are the
// queue's, not this process's, so any daemon on the database answers the
// same.
type Health struct {
	Status  string `json:"status"` // ok | draining | unhealthy
	Reason  string `json:"reason,omitempty"`
	Version string `json:"version"`
	// config.Digest is the sha256 of the config file the daemon runs with;
	// it differs from the file on disk until a reload.
	ConfigDigest string `json:"config_digest"`
	// LastReloadError is why the last reload was refused; empty after a
	// good one.
	LastReloadError   string  `json:"last_reload_error,omitempty"`
	QueueDepth        int     `json:"queue_depth"`
	HeldRuns          int     `json:"held_runs"`
	OldestQueuedAgeS  float64 `json:"oldest_queued_age_seconds"`
	Running           int     `json:"running"`
	FailedRuns        int     `json:"failed_runs"`
	DeadDispatches    int     `json:"dead_dispatches"`
	UnknownDispatches int     `json:"unknown_dispatches"`
}

func (lc *lifecycle) healthz(w http.ResponseWriter, r *http.Request) {
	_, digest, lastErr := lc.running()
	h := Health{Status: "ok", Version: lc.opts.Version, ConfigDigest: digest, LastReloadError: lastErr}
	status := http.StatusOK
	if lc.isDraining() {
		h.Status, h.Reason, status = "draining", "the daemon is stopping: it finishes the reviews in hand and takes no new ones", http.StatusServiceUnavailable
	}
	st, err := lc.queueStats(r.Context())
	if err != nil {
		h.Status, h.Reason = "unhealthy", "audit database: "+err.Error()
		writeJSON(w, http.StatusServiceUnavailable, h)
		return
	}
	h.QueueDepth, h.HeldRuns, h.Running, h.FailedRuns = st.Queued, st.Held, st.Running, st.FailedRuns
	h.DeadDispatches, h.UnknownDispatches = st.DeadDispatches, st.UnknownDispatches
	h.OldestQueuedAgeS = math.Round(oldestAge(st, lc.opts.Now()).Seconds()*1000) / 1000
	writeJSON(w, status, h)
}

// healthDeadline is how long /healthz waits for the store. A probe must
// get its answer in time, above all when the store is what is wrong.
const healthDeadline = 2 * time.Second

// errStoreSlow: the store did not answer /healthz within healthDeadline.
var errStoreSlow = fmt.Errorf("the store did not answer within %s (connections all busy, a lock held, or the server unreachable)", healthDeadline)

// queueStats reads the queue's numbers within healthDeadline. The read
// runs on its own goroutine so the answer keeps its deadline even where
// the wait is not one the context can end (a driver stuck in a lock); it
// ends with its context.
func (lc *lifecycle) queueStats(ctx context.Context) (audit.QueueStats, error) {
	ctx, cancel := context.WithTimeout(ctx, healthDeadline)
	defer cancel()
	type answer struct {
		st  audit.QueueStats
		err error
	}
	got := make(chan answer, 1)
	go func() {
		st, err := lc.store.QueueStats(ctx)
		got <- answer{st, err}
	}()
	select {
	case a := <-got:
		if a.err != nil && ctx.Err() != nil {
			return a.st, errStoreSlow
		}
		return a.st, a.err
	case <-ctx.Done():
		return audit.QueueStats{}, errStoreSlow
	}
}

// routes are the daemon's HTTP endpoints: health, metrics and reload
// stay with the process across reloads; everything else goes to the
// running generation's intake.
func (lc *lifecycle) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", lc.healthz)
	mux.Handle("GET /metrics", lc.metrics.Handler())
	mux.HandleFunc("POST "+ReloadPath, lc.postReload)
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*lc.intake.Load()).ServeHTTP(w, r)
	}))
	return mux
}
