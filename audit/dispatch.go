package audit

import (
	"context"
	"database/sql"
	"fmt"
)

const dispatchColumns = `id, run_id, channel, status, attempts, last_error, created_at, updated_at, sent_at,
	purpose, next_attempt_at, rendered, message_id, parts_delivered, first_attempt_at, unknown_outcomes`

func scanDispatch(sc scanner) (Dispatch, error) {
	var (
		d                        Dispatch
		status, created, updated string
		sent, next, first        sql.NullString
		purpose                  string
	)
	if err := sc.Scan(&d.ID, &d.RunID, &d.Channel, &status, &d.Attempts, &d.LastError,
		&created, &updated, &sent, &purpose, &next, &d.Rendered, &d.MessageID, &d.PartsDelivered, &first, &d.UnknownOutcomes); err != nil {
		return Dispatch{}, err
	}
	d.Purpose = DispatchPurpose(purpose)
	d.Status = DispatchStatus(status)
	var err error
	if d.CreatedAt, err = parseTime(created); err != nil {
		return Dispatch{}, err
	}
	if d.UpdatedAt, err = parseTime(updated); err != nil {
		return Dispatch{}, err
	}
	if d.SentAt, err = parseNullTime(sent); err != nil {
		return Dispatch{}, err
	}
	if d.NextAttemptAt, err = parseNullTime(next); err != nil {
		return Dispatch{}, err
	}
	if d.FirstAttemptAt, err = parseNullTime(first); err != nil {
		return Dispatch{}, err
	}
	return d, nil
}

// EnsureDispatch returns the run's dispatch row for channel, creating it
// as pending if absent. A resumed or replayed run gets the existing row
// back, with its status, and must not send again when it is sent.
func (s *Store) EnsureDispatch(ctx context.Context, runID int64, channel string) (Dispatch, error) {
	if channel == "" {
		return Dispatch{}, fmt.Errorf("ensure dispatch: %w: channel is required", ErrInvalid)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Dispatch{}, fmt.Errorf("ensure dispatch run %d %s: begin: %w", runID, channel, err)
	}
	defer tx.Rollback()

	var exists int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE id = ?`, runID).Scan(&exists); err != nil {
		return Dispatch{}, fmt.Errorf("ensure dispatch run %d %s: find run: %w", runID, channel, err)
	}
	if exists == 0 {
		return Dispatch{}, fmt.Errorf("ensure dispatch run %d %s: %w", runID, channel, ErrNotFound)
	}
	now := formatTime(s.now())
	if _, err := tx.ExecContext(ctx, `INSERT INTO dispatches (run_id, channel, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id, channel) DO NOTHING`,
		runID, channel, string(DispatchPending), now, now); err != nil {
		return Dispatch{}, fmt.Errorf("ensure dispatch run %d %s: insert: %w", runID, channel, err)
	}
	d, err := scanDispatch(tx.QueryRowContext(ctx, `SELECT `+dispatchColumns+
		` FROM dispatches WHERE run_id = ? AND channel = ?`, runID, channel))
	if err != nil {
		return Dispatch{}, fmt.Errorf("ensure dispatch run %d %s: read: %w", runID, channel, err)
	}
	if err := tx.Commit(); err != nil {
		return Dispatch{}, fmt.Errorf("ensure dispatch run %d %s: commit: %w", runID, channel, err)
	}
	return d, nil
}

// MarkDispatch records the outcome of a delivery. sent and failed count
// as an attempt; suppressed (policy, nothing sent) and pending (re-queued
// for a replay) do not. sent_at is set when status is sent. errText
// replaces last_error, so pass "" on success.
func (s *Store) MarkDispatch(ctx context.Context, dispatchID int64, status DispatchStatus, errText string) error {
	if !status.Valid() {
		return fmt.Errorf("mark dispatch %d: %w: status %q", dispatchID, ErrInvalid, status)
	}
	attempt := 0
	if status == DispatchSent || status == DispatchFailed {
		attempt = 1
	}
	now := formatTime(s.now())
	var sentAt any
	if status == DispatchSent {
		sentAt = now
	}
	res, err := s.db.ExecContext(ctx, `UPDATE dispatches
		SET status = ?, last_error = ?, attempts = attempts + ?, updated_at = ?,
			sent_at = COALESCE(?, sent_at)
		WHERE id = ?`, string(status), errText, attempt, now, sentAt, dispatchID)
	if err != nil {
		return fmt.Errorf("mark dispatch %d: %w", dispatchID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("mark dispatch %d: %w", dispatchID, err)
	} else if n == 0 {
		return fmt.Errorf("mark dispatch %d: %w", dispatchID, ErrNotFound)
	}
	return nil
}

// PendingDispatches returns every dispatch still pending, oldest first, so
// the daemon can resume deliveries a crash interrupted.
func (s *Store) PendingDispatches(ctx context.Context) ([]Dispatch, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+dispatchColumns+
		` FROM dispatches WHERE status = ? ORDER BY id`, string(DispatchPending))
	if err != nil {
		return nil, fmt.Errorf("pending dispatches: %w", err)
	}
	return collectDispatches(rows)
}

func runDispatches(ctx context.Context, q querier, runID int64) ([]Dispatch, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+dispatchColumns+
		` FROM dispatches WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("read dispatches: %w", err)
	}
	return collectDispatches(rows)
}

func collectDispatches(rows *sql.Rows) ([]Dispatch, error) {
	defer rows.Close()
	var out []Dispatch
	for rows.Next() {
		d, err := scanDispatch(rows)
		if err != nil {
			return nil, fmt.Errorf("read dispatches: scan: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read dispatches: %w", err)
	}
	return out, nil
}
