package audit

import (
	"context"
	"fmt"
	"time"
)

// EgressEvent is one connection the sandbox's egress proxy allowed or
// refused during a run (the fields of egress.Event; audit does not
// import the sandbox).
type EgressEvent struct {
	At      time.Time `json:"at"`
	Host    string    `json:"host"`
	Port    int       `json:"port"`
	Allowed bool      `json:"allowed"`
	Reason  string    `json:"reason"`
}

// maxEgressText caps what a hostile agent can make the proxy write per
// row: the host and reason come from its requests.
const maxEgressText = 512

// RecordEgress appends one egress event to run runID.
func (s *Store) RecordEgress(ctx context.Context, runID int64, e EgressEvent) error {
	if e.At.IsZero() {
		e.At = s.now()
	}
	// The SELECT inserts nothing for a run that does not exist, which
	// RowsAffected reports as ErrNotFound.
	res, err := s.db.ExecContext(ctx, `INSERT INTO egress_events (run_id, at, host, port, allowed, reason)
		SELECT id, ?, ?, ?, ?, ? FROM runs WHERE id = ?`,
		formatTime(e.At), capText(e.Host), e.Port, e.Allowed, capText(e.Reason), runID)
	if err != nil {
		return fmt.Errorf("record egress event of run %d: %w", runID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("record egress event of run %d: %w", runID, ErrNotFound)
	}
	return nil
}

// RunEgress lists a run's egress events, oldest first.
func (s *Store) RunEgress(ctx context.Context, runID int64) ([]EgressEvent, error) {
	return runEgress(ctx, s.db, runID)
}

func runEgress(ctx context.Context, q querier, runID int64) ([]EgressEvent, error) {
	rows, err := q.QueryContext(ctx, `SELECT at, host, port, allowed, reason FROM egress_events
		WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("read egress events: %w", err)
	}
	defer rows.Close()
	var out []EgressEvent
	for rows.Next() {
		var (
			e  EgressEvent
			at string
		)
		if err := rows.Scan(&at, &e.Host, &e.Port, &e.Allowed, &e.Reason); err != nil {
			return nil, fmt.Errorf("read egress events: scan: %w", err)
		}
		if e.At, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("read egress events: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read egress events: %w", err)
	}
	return out, nil
}

func capText(s string) string {
	if len(s) > maxEgressText {
		return s[:maxEgressText] + "…"
	}
	return s
}
