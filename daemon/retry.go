package daemon

import (
	"errors"
	"expvar"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/vcs"
)

// Retry backoff: 30s doubling per attempt up to maxRetryDelay; retries
// go on for [daemon] retry_for from the first failure.
const (
	firstRetryDelay = 30 * time.Second
	maxRetryDelay   = 30 * time.Minute
)

// retryDelay says whether err is worth another attempt and after how
// long. Bad input (a malformed revision, a missing client binary, a repo
// no longer configured) never gets better by waiting; everything else is
// retried, with a capped backoff, until retry_for has passed since the
// first failure. "No such revision" is transient for
// missing_revision_grace after the event: a p4 replica or edge server
// may not have the change yet. Every error vcs.IsTransient calls
// transient (the adapters' ErrTimeout, ErrUnavailable, ErrNoSuchRevision)
// is thus retried, the last only within the grace window.
//
// Model errors: a refused key (llm.ErrAuth), a refused request
// (llm.ErrBadRequest, e.g. an unknown model), a prompt that does not fit
// even clipped (llm.ErrContextOverflow) and a ladder that ended without a
// structured result (agent.ErrNoResult) fail at once: the same request to
// the same model would get the same answer. llm.ErrTransient (rate
// limits, 5xx, timeouts) is retried like any outage.
func retryDelay(err error, run *audit.Run, d config.Daemon, now time.Time) (time.Duration, bool) {
	if errors.Is(err, errPermanent) || errors.Is(err, vcs.ErrBadRevision) || errors.Is(err, vcs.ErrToolMissing) {
		return 0, false
	}
	if errors.Is(err, llm.ErrAuth) || errors.Is(err, llm.ErrBadRequest) || errors.Is(err, llm.ErrContextOverflow) ||
		errors.Is(err, agent.ErrNoResult) {
		return 0, false
	}
	if errors.Is(err, vcs.ErrNoSuchRevision) && now.Sub(run.QueuedAt) >= d.MissingRevisionGrace {
		return 0, false
	}
	since := run.RetrySince
	if since.IsZero() {
		since = now
	}
	wait := firstRetryDelay
	for i := 1; i < run.Attempts && wait < maxRetryDelay; i++ {
		wait *= 2
	}
	wait = min(wait, maxRetryDelay)
	// No attempt is scheduled after the window closes.
	if now.Add(wait).Sub(since) > d.RetryFor {
		return 0, false
	}
	return wait, true
}

// runsFailed counts runs that failed for good in this process, exported
// as the expvar aicr_runs_failed_total and logged with each failure.
var runsFailed = expvar.NewInt("aicr_runs_failed_total")

// errPermanent marks pipeline failures that retrying cannot fix.
var errPermanent = errors.New("not retryable")
