package audit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
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
	home, homeArgs := s.homeClause()
	args := append(append([]any{formatTime(s.now()), formatTime(cutoff)}, homeArgs...), limit)
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM runs
		WHERE `+finishedUnleased+` AND finished_at IS NOT NULL AND finished_at < ?
			AND run_dir != '' AND run_dir_pruned_at IS NULL`+home+`
		ORDER BY finished_at, id LIMIT ?`, args...)
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

// undelivered selects runs with a dispatch still to be sent: their
// report may be rendered again, so nothing of theirs goes yet.
const undelivered = `EXISTS (SELECT 1 FROM dispatches d WHERE d.run_id = runs.id AND d.status = 'pending')`

// SourcesToDrop lists, oldest first and at most limit, finished runs whose
// every dispatch is settled (sent, suppressed, failed, dead or unknown)
// and whose src/ copies are still on disk.
func (s *Store) SourcesToDrop(ctx context.Context, limit int) ([]int64, error) {
	home, homeArgs := s.homeClause()
	return listIDs(ctx, s.db, "list runs whose sources can go", `SELECT id FROM runs
		WHERE sources_dropped_at IS NULL AND run_dir_pruned_at IS NULL AND finished_at IS NOT NULL
			AND run_dir != '' AND `+finishedUnleased+` AND NOT `+undelivered+home+`
		ORDER BY finished_at, id LIMIT ?`, append(append([]any{formatTime(s.now())}, homeArgs...), limit)...)
}

// MarkSourcesDropped records that the run's src/ is being removed; false
// means the run is in use again (re-queued, claimed, a dispatch re-driven)
// and its sources must stay.
func (s *Store) MarkSourcesDropped(ctx context.Context, runID int64) (bool, error) {
	now := formatTime(s.now())
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET sources_dropped_at = ?
		WHERE id = ? AND sources_dropped_at IS NULL AND `+finishedUnleased+` AND NOT `+undelivered, now, runID, now)
	if err != nil {
		return false, fmt.Errorf("mark run %d sources dropped: %w", runID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("mark run %d sources dropped: %w", runID, err)
	}
	return n == 1, nil
}

// RunsToDelete lists, oldest first and at most limit, the runs finished
// before cutoff that nothing holds and nothing still has to deliver. With
// a run home (SetRunHome), a run whose directory is still on another
// daemon's host is left to that daemon, which removes the directory with
// the rows; once the directory is pruned, any daemon may delete the rows.
func (s *Store) RunsToDelete(ctx context.Context, cutoff time.Time, limit int) ([]int64, error) {
	args := []any{formatTime(cutoff), formatTime(s.now())}
	home := ""
	if s.home != "" {
		home = ` AND (run_home IN ('', ?) OR run_dir = '' OR run_dir_pruned_at IS NOT NULL)`
		args = append(args, s.home)
	}
	return listIDs(ctx, s.db, "list runs to delete", `SELECT id FROM runs
		WHERE finished_at IS NOT NULL AND finished_at < ? AND `+finishedUnleased+` AND NOT `+undelivered+home+`
		ORDER BY finished_at, id LIMIT ?`, append(args, limit)...)
}

// DeleteRuns deletes the listed runs that are still finished before cutoff,
// unleased and delivered, with their problems, dispatches and attempts,
// egress records and events (the primary receipt and its duplicates), in
// one short transaction. It returns the ids it deleted. Callers pass small
// batches: the intake waits for the write lock while this runs.
func (s *Store) DeleteRuns(ctx context.Context, cutoff time.Time, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("delete runs: begin: %w", err)
	}
	defer tx.Rollback()
	// Checked again inside the transaction: a run may have been re-queued
	// (aicr run retry) since it was listed.
	in, args := inList(ids)
	rows, err := tx.QueryContext(ctx, `SELECT id, event_id FROM runs WHERE id IN (`+in+`)
		AND finished_at IS NOT NULL AND finished_at < ? AND `+finishedUnleased+` AND NOT `+undelivered,
		append(args, formatTime(cutoff), formatTime(s.now()))...)
	var runIDs, eventIDs []int64
	if err := eachRow(rows, err, func(rows *sql.Rows) error {
		var id, ev int64
		if err := rows.Scan(&id, &ev); err != nil {
			return err
		}
		runIDs, eventIDs = append(runIDs, id), append(eventIDs, ev)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("delete runs: %w", err)
	}
	if len(runIDs) == 0 {
		return nil, nil
	}
	runIn, runArgs := inList(runIDs)
	evIn, evArgs := inList(eventIDs)
	// Children first and by name, so the order is right whether or not
	// the database cascades.
	for _, st := range []struct {
		what, sql string
		args      []any
	}{
		{"dispatch attempts", `DELETE FROM dispatch_attempts WHERE dispatch_id IN (SELECT id FROM dispatches WHERE run_id IN (` + runIn + `))`, runArgs},
		{"dispatches", `DELETE FROM dispatches WHERE run_id IN (` + runIn + `)`, runArgs},
		{"problems", `DELETE FROM problems WHERE run_id IN (` + runIn + `)`, runArgs},
		{"egress events", `DELETE FROM egress_events WHERE run_id IN (` + runIn + `)`, runArgs},
		{"turns", `DELETE FROM run_turns WHERE run_id IN (` + runIn + `)`, runArgs},
		{"runs", `DELETE FROM runs WHERE id IN (` + runIn + `)`, runArgs},
		{"duplicate events", `DELETE FROM events WHERE duplicate_of IN (` + evIn + `)`, evArgs},
		{"events", `DELETE FROM events WHERE id IN (` + evIn + `)`, evArgs},
	} {
		if _, err := tx.ExecContext(ctx, st.sql, st.args...); err != nil {
			return nil, fmt.Errorf("delete runs: %s: %w", st.what, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("delete runs: commit: %w", err)
	}
	return runIDs, nil
}

// DeleteRejectedBefore deletes at most limit refused requests received
// before cutoff, oldest first, and says how many went.
func (s *Store) DeleteRejectedBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM rejected_events WHERE id IN
		(SELECT id FROM rejected_events WHERE received_at < ? ORDER BY id LIMIT ?)`, formatTime(cutoff), limit)
	if err != nil {
		return 0, fmt.Errorf("delete rejected events: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete rejected events: %w", err)
	}
	return int(n), nil
}

// listIDs runs an id query on q: the store's pool, or the transaction
// that is about to act on the ids, which must own its connection.
func listIDs(ctx context.Context, q querier, what, query string, args ...any) ([]int64, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return ids, nil
}

// inList is "?, ?, ?" for ids and the matching arguments.
func inList(ids []int64) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", "), args
}

// RunsFinishedElsewhere returns those of ids, directories found in this
// Store's data_dir, whose run finished, unleased, with its directory in
// another daemon's home: a run interrupted here and finished on another
// host leaves here a partial directory (copies of the changed code among
// it) that no retention query lists, since the run is that host's now. A
// run that is not in the database is left alone: a wrong DSN must not
// empty a data_dir. Without a run home (one daemon per database) every
// run is this Store's and it returns nothing.
func (s *Store) RunsFinishedElsewhere(ctx context.Context, ids []int64) ([]int64, error) {
	if s.home == "" || len(ids) == 0 {
		return nil, nil
	}
	in, args := inList(ids)
	return listIDs(ctx, s.db, "list runs finished on another host", `SELECT id FROM runs
		WHERE id IN (`+in+`) AND run_home NOT IN ('', ?) AND `+finishedUnleased+` ORDER BY id`,
		append(args, s.home, formatTime(s.now()))...)
}
