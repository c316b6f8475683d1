package daemon

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/vcs"
)

// The retry decision for every kind of failure: transient ones are
// retried with a capped backoff for retry_for; a missing revision only
// during the grace window; bad input never.
func TestRetryDelay(t *testing.T) {
	d := config.Daemon{RetryFor: 72 * time.Hour, MissingRevisionGrace: 30 * time.Minute}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	down := fmt.Errorf("fetch main r5: %w", errors.New("svn: E170013: Unable to connect to a repository"))
	missing := fmt.Errorf("fetch depot 12: %w", vcs.ErrNoSuchRevision)
	run := func(attempts int, queued, since time.Time) *audit.Run {
		return &audit.Run{RunSummary: audit.RunSummary{Attempts: attempts, QueuedAt: queued, RetrySince: since}}
	}
	for _, tc := range []struct {
		name  string
		err   error
		run   *audit.Run
		wait  time.Duration
		retry bool
	}{
		{"server down, first failure", down, run(1, now, time.Time{}), 30 * time.Second, true},
		{"server down, doubling", down, run(3, now, now.Add(-time.Minute)), 2 * time.Minute, true},
		{"server down, capped", down, run(20, now, now.Add(-10*time.Hour)), 30 * time.Minute, true},
		// The old policy gave up after four attempts (about 10 minutes).
		{"server down after four attempts", down, run(4, now, now.Add(-11*time.Minute)), 4 * time.Minute, true},
		{"server down past retry_for", down, run(200, now.Add(-73*time.Hour), now.Add(-72*time.Hour)), 0, false},
		{"replica behind, within grace", missing, run(1, now.Add(-time.Minute), time.Time{}), 30 * time.Second, true},
		{"revision missing past grace", missing, run(6, now.Add(-31*time.Minute), now.Add(-30*time.Minute)), 0, false},
		{"malformed revision", fmt.Errorf("x: %w", vcs.ErrBadRevision), run(1, now, time.Time{}), 0, false},
		{"client missing", fmt.Errorf("x: %w", vcs.ErrToolMissing), run(1, now, time.Time{}), 0, false},
		{"repo gone from config", fmt.Errorf("%w: repo", errPermanent), run(1, now, time.Time{}), 0, false},
		{"deadline exceeded", fmt.Errorf("agent: %w", context.DeadlineExceeded), run(1, now, time.Time{}), 30 * time.Second, true},
		{"vcs command timed out", fmt.Errorf("fetch main r5: %w", vcs.ErrTimeout), run(2, now, now.Add(-time.Minute)), time.Minute, true},
		{"vcs server unavailable", fmt.Errorf("fetch depot 12: %w", vcs.ErrUnavailable), run(1, now, time.Time{}), 30 * time.Second, true},
		{"model rate limited", fmt.Errorf("agent review pass 1: %w", llm.ErrTransient), run(1, now, time.Time{}), 30 * time.Second, true},
		{"model key refused", fmt.Errorf("review pass: %w", llm.ErrAuth), run(1, now, time.Time{}), 0, false},
		{"unknown model", fmt.Errorf("review pass: %w", llm.ErrBadRequest), run(1, now, time.Time{}), 0, false},
		{"context overflow even clipped", fmt.Errorf("%w: (%w)", agent.ErrContextOverflow, llm.ErrContextOverflow), run(1, now, time.Time{}), 0, false},
		{"ladder without a result", fmt.Errorf("%w after 3 passes", agent.ErrNoResult), run(1, now, time.Time{}), 0, false},
		{"vcs server unavailable past retry_for", fmt.Errorf("x: %w", vcs.ErrUnavailable), run(200, now.Add(-73*time.Hour), now.Add(-72*time.Hour)), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wait, retry := retryDelay(tc.err, tc.run, d, now)
			if retry != tc.retry || (retry && wait != tc.wait) {
				t.Fatalf("retryDelay = %v, %v; want %v, %v", wait, retry, tc.wait, tc.retry)
			}
		})
	}
}

// The daemon and the adapters agree on what is transient: every error
// vcs.IsTransient calls transient is retried (ErrNoSuchRevision only
// within missing_revision_grace), and the permanent vcs sentinels are
// neither transient nor retried.
func TestRetryDelayAgreesWithIsTransient(t *testing.T) {
	d := config.Daemon{RetryFor: 72 * time.Hour, MissingRevisionGrace: 30 * time.Minute}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fresh := &audit.Run{RunSummary: audit.RunSummary{Attempts: 1, QueuedAt: now.Add(-time.Minute)}}
	late := &audit.Run{RunSummary: audit.RunSummary{Attempts: 1, QueuedAt: now.Add(-time.Hour)}}
	for _, tc := range []struct {
		sentinel  error
		transient bool
		// retried within and after missing_revision_grace
		retried, retriedLate bool
	}{
		{vcs.ErrTimeout, true, true, true},
		{vcs.ErrUnavailable, true, true, true},
		{vcs.ErrNoSuchRevision, true, true, false},
		{vcs.ErrBadRevision, false, false, false},
		{vcs.ErrToolMissing, false, false, false},
	} {
		t.Run(tc.sentinel.Error(), func(t *testing.T) {
			err := fmt.Errorf("fetch main r5: %w", tc.sentinel)
			if got := vcs.IsTransient(err); got != tc.transient {
				t.Fatalf("vcs.IsTransient = %v, want %v", got, tc.transient)
			}
			if _, got := retryDelay(err, fresh, d, now); got != tc.retried {
				t.Errorf("retried within the grace window = %v, want %v", got, tc.retried)
			}
			if _, got := retryDelay(err, late, d, now); got != tc.retriedLate {
				t.Errorf("retried after the grace window = %v, want %v", got, tc.retriedLate)
			}
		})
	}
}
