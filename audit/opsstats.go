package audit

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// QueueStats is what /healthz and the metrics gauges report of the
// queue and the trail: read at each request, so every daemon sharing the
// database and the CLI agree on it.
type QueueStats struct {
	// Queued counts runs waiting for a worker, including those waiting
	// out a retry delay and those held (Held).
	Queued int `json:"queued"`
	// Held counts the queued runs of paused repos (aicr repo pause): they
	// wait on purpose, until aicr repo resume.
	Held int `json:"held"`
	// OldestQueuedAt is when the oldest queued run that is not held was
	// queued; zero when none is. A pause must not look like a stalled
	// queue.
	OldestQueuedAt time.Time `json:"oldest_queued_at,omitzero"`
	Running        int       `json:"running"`
	// FailedRuns are runs that failed for good, dry runs left out (an
	// operator's try is no failing review); DeadDispatches and
	// UnknownDispatches are deliveries given up on or left with an
	// unknown outcome. All three stay until retried or pruned.
	FailedRuns        int `json:"failed_runs"`
	DeadDispatches    int `json:"dead_dispatches"`
	UnknownDispatches int `json:"unknown_dispatches"`
}

// QueueStats counts the queue and the runs and deliveries that need an
// operator. One read transaction, so the numbers are of one moment.
func (s *Store) QueueStats(ctx context.Context) (QueueStats, error) {
	var st QueueStats
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, fmt.Errorf("queue stats: %w", err)
	}
	defer tx.Rollback()
	var oldest sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT
			COALESCE(SUM(CASE WHEN status = 'queued' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN status = 'failed' AND dry_run = 0 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN status = 'queued' AND repo IN (SELECT repo FROM repo_pauses) THEN 1 ELSE 0 END), 0),
			MIN(CASE WHEN status = 'queued' AND repo NOT IN (SELECT repo FROM repo_pauses) THEN queued_at END)
		FROM runs WHERE status IN ('queued', 'running', 'failed')`).Scan(&st.Queued, &st.Running, &st.FailedRuns, &st.Held, &oldest)
	if err != nil {
		return st, fmt.Errorf("queue stats: runs: %w", err)
	}
	if st.OldestQueuedAt, err = parseNullTime(oldest); err != nil {
		return st, fmt.Errorf("queue stats: %w", err)
	}
	err = tx.QueryRowContext(ctx, `SELECT
			COALESCE(SUM(CASE WHEN status = 'dead' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN status = 'unknown' THEN 1 ELSE 0 END), 0)
		FROM dispatches WHERE status IN ('dead', 'unknown')`).Scan(&st.DeadDispatches, &st.UnknownDispatches)
	if err != nil {
		return st, fmt.Errorf("queue stats: dispatches: %w", err)
	}
	return st, nil
}
