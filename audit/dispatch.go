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
