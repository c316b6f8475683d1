package audit

import (
	"context"
	"fmt"
	"time"
)

// finishedUnleased selects runs that are over and that no process holds:
// a queued, running or retrying run, or one whose lease has not run out,
// may still be writing its directory.
const finishedUnleased = `status IN ('succeeded', 'failed', 'skipped')
	AND (lease_until IS NULL OR lease_until < ?)`

// RunsToPrune lists, oldest first and at most limit, the runs finished
// before cutoff whose directory the retention job has not removed yet.
func (s *Store) RunsToPrune(ctx context.Context, cutoff time.Time, limit int) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM runs
		WHERE `+finishedUnleased+` AND finished_at IS NOT NULL AND finished_at < ?
			AND run_dir != '' AND run_dir_pruned_at IS NULL
		ORDER BY finished_at, id LIMIT ?`,
		formatTime(s.now()), formatTime(cutoff), limit)
	if err != nil {
		return nil, fmt.Errorf("list runs to prune: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list runs to prune: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs to prune: %w", err)
	}
	return ids, nil
}

// MarkRunDirPruned records that the run's directory is being removed. It
// reports false, marking nothing, when the run was re-queued or claimed
// since RunsToPrune listed it: the caller must then leave the directory.
// Marking before removing means a directory in use is never removed; a
// removal that fails after the mark is the caller's to report.
func (s *Store) MarkRunDirPruned(ctx context.Context, runID int64) (bool, error) {
	now := formatTime(s.now())
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET run_dir_pruned_at = ?
		WHERE id = ? AND run_dir_pruned_at IS NULL AND `+finishedUnleased, now, runID, now)
	if err != nil {
		return false, fmt.Errorf("mark run %d dir pruned: %w", runID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("mark run %d dir pruned: %w", runID, err)
	}
	return n == 1, nil
}
