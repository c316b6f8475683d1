package audit

import (
	"context"
	"fmt"
	"time"
)

// FindingsPruned is what one PruneFindings removed.
type FindingsPruned struct {
	// Resolved counts resolved findings deleted with their history.
	Resolved int `json:"resolved"`
	// SeenEvents counts "seen again" lines removed from the histories of
	// the findings that stay.
	SeenEvents int `json:"seen_events"`
}

// PruneFindings applies [retention] findings: findings resolved before
// cutoff go with their history, and "seen" events older than cutoff go
// from every finding's history (a finding's first report, resolution,
// dismissal and reopenings stay, so its story still reads whole).
// Dismissed findings are never deleted: they keep the repo from being
// told again. It works in transactions of at most batch rows, so the
// intake never waits long for the write lock.
func (s *Store) PruneFindings(ctx context.Context, cutoff time.Time, batch int) (FindingsPruned, error) {
	var out FindingsPruned
	if batch <= 0 {
		batch = 100
	}
	at := formatTime(cutoff)
	for ctx.Err() == nil {
		n, err := s.deleteResolvedFindings(ctx, at, batch)
		out.Resolved += n
		if err != nil {
			return out, err
		}
		if n < batch {
			break
		}
	}
	for ctx.Err() == nil {
		res, err := s.db.ExecContext(ctx, `DELETE FROM finding_events WHERE id IN
			(SELECT id FROM finding_events WHERE kind = 'seen' AND at < ? ORDER BY id LIMIT ?)`, at, batch)
		if err != nil {
			return out, fmt.Errorf("prune findings' seen events: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return out, fmt.Errorf("prune findings' seen events: %w", err)
		}
		out.SeenEvents += int(n)
		if int(n) < batch {
			break
		}
	}
	return out, ctx.Err()
}

// deleteResolvedFindings deletes at most batch findings resolved before
// at, their events first (whether or not the database cascades).
func (s *Store) deleteResolvedFindings(ctx context.Context, at string, batch int) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("delete resolved findings: begin: %w", err)
	}
	defer tx.Rollback()
	ids, err := listIDs(ctx, tx, "delete resolved findings",
		`SELECT id FROM findings WHERE state = 'resolved' AND resolved_at < ? ORDER BY id LIMIT ?`, at, batch)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	in, args := inList(ids)
	if _, err := tx.ExecContext(ctx, `DELETE FROM finding_events WHERE finding_id IN (`+in+`)`, args...); err != nil {
		return 0, fmt.Errorf("delete resolved findings' history: %w", err)
	}
	// Checked again: a finding reopened since it was listed stays.
	res, err := tx.ExecContext(ctx, `DELETE FROM findings WHERE id IN (`+in+`) AND state = 'resolved'`, args...)
	if err != nil {
		return 0, fmt.Errorf("delete resolved findings: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete resolved findings: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("delete resolved findings: commit: %w", err)
	}
	return int(n), nil
}

// DeleteNoticesBefore deletes at most limit dispatches of no run (digests)
// settled (anything but pending) and last updated before cutoff, with
// their attempts: the audit_rows retention of rows no run deletion takes
// along. It says how many went.
func (s *Store) DeleteNoticesBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("delete old digests: begin: %w", err)
	}
	defer tx.Rollback()
	pick := `SELECT id FROM dispatches WHERE run_id IS NULL AND status <> 'pending' AND updated_at < ? ORDER BY id LIMIT ?`
	ids, err := listIDs(ctx, tx, "delete old digests", pick, formatTime(cutoff), limit)
	if err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	in, args := inList(ids)
	if _, err := tx.ExecContext(ctx, `DELETE FROM dispatch_attempts WHERE dispatch_id IN (`+in+`)`, args...); err != nil {
		return 0, fmt.Errorf("delete old digests' attempts: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM dispatches WHERE id IN (`+in+`)`, args...); err != nil {
		return 0, fmt.Errorf("delete old digests: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("delete old digests: commit: %w", err)
	}
	return len(ids), nil
}
