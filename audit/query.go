package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
)

// querier is what *sql.DB and *sql.Tx share, so one read helper serves a
// worker's write transaction and the CLI's read-only snapshot.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// runColumns matches scanRunSummary; the event join supplies source, and
// user when no fetch has recorded the change's author yet (SetRunAuthor).
const runColumns = `r.id, r.event_id, r.vcs, r.repo, r.revision, r.status, r.skip_reason, r.error,
	r.problem_count, r.attempts, r.queued_at, r.started_at, r.finished_at, r.run_dir,
	e.source, COALESCE(NULLIF(r.author, ''), e.user), r.not_before, r.retry_since, r.dry_run, r.lease_owner, r.lease_pid, r.lease_host, r.lease_until, r.run_dir_pruned_at`

const runFrom = ` FROM runs r JOIN events e ON e.id = r.event_id`

type scanner interface{ Scan(dest ...any) error }

func scanRunSummary(sc scanner, extra ...any) (RunSummary, error) {
	var (
		r                 RunSummary
		queued            string
		started, finished sql.NullString
		status, source    string
		notBefore, since  sql.NullString
		leaseUntil        sql.NullString
		pruned            sql.NullString
	)
	dest := []any{&r.ID, &r.EventID, &r.VCS, &r.Repo, &r.Revision, &status, &r.SkipReason, &r.Error,
		&r.ProblemCount, &r.Attempts, &queued, &started, &finished, &r.RunDir, &source, &r.User,
		&notBefore, &since, &r.DryRun, &r.Lease.Owner, &r.Lease.PID, &r.Lease.Host, &leaseUntil, &pruned}
	if err := sc.Scan(append(dest, extra...)...); err != nil {
		return RunSummary{}, err
	}
	r.Status = RunStatus(status)
	r.Source = triggers.Source(source)
	var err error
	if r.QueuedAt, err = parseTime(queued); err != nil {
		return RunSummary{}, err
	}
	if r.StartedAt, err = parseNullTime(started); err != nil {
		return RunSummary{}, err
	}
	if r.FinishedAt, err = parseNullTime(finished); err != nil {
		return RunSummary{}, err
	}
	if r.NotBefore, err = parseNullTime(notBefore); err != nil {
		return RunSummary{}, err
	}
	if r.RetrySince, err = parseNullTime(since); err != nil {
		return RunSummary{}, err
	}
	if r.Lease.Until, err = parseNullTime(leaseUntil); err != nil {
		return RunSummary{}, err
	}
	if r.RunDirPrunedAt, err = parseNullTime(pruned); err != nil {
		return RunSummary{}, err
	}
	return r, nil
}

func getRun(ctx context.Context, q querier, runID int64) (*Run, error) {
	var payload string
	sum, err := scanRunSummary(q.QueryRowContext(ctx,
		`SELECT `+runColumns+`, e.payload`+runFrom+` WHERE r.id = ?`, runID), &payload)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	run := &Run{RunSummary: sum}
	if err := json.Unmarshal([]byte(payload), &run.Event); err != nil {
		return nil, fmt.Errorf("decode event %d: %w", sum.EventID, err)
	}
	return run, nil
}

// ListRuns returns runs newest first, filtered by opts.
func (s *Store) ListRuns(ctx context.Context, opts ListOptions) ([]RunSummary, error) {
	if opts.Status != "" && !opts.Status.Listable() {
		return nil, fmt.Errorf("list runs: %w: status %q", ErrInvalid, opts.Status)
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	var (
		where []string
		args  []any
	)
	if opts.Repo != "" {
		where = append(where, "r.repo = ?")
		args = append(args, opts.Repo)
	}
	// The labels as RunSummary.Label gives them: held before retrying.
	const (
		paused   = `r.repo IN (SELECT repo FROM repo_pauses)`
		retrying = `(r.attempts > 0 AND r.error <> '')`
	)
	switch opts.Status {
	case "":
	case RunHeld:
		where = append(where, "r.status = 'queued' AND "+paused)
	case RunRetrying:
		where = append(where, "r.status = 'queued' AND NOT "+paused+" AND "+retrying)
	case RunQueued:
		where = append(where, "r.status = 'queued' AND NOT "+paused+" AND NOT "+retrying)
	default:
		where = append(where, "r.status = ?")
		args = append(args, string(opts.Status))
	}
	if opts.Revision != "" {
		where = append(where, "r.revision = ?")
		args = append(args, opts.Revision)
	}
	if opts.BeforeID > 0 {
		where = append(where, "r.id < ?")
		args = append(args, opts.BeforeID)
	}
	query := `SELECT ` + runColumns + runFrom
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY r.id DESC LIMIT ?"
	args = append(args, limit)

	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var runs []RunSummary
	for rows.Next() {
		r, err := scanRunSummary(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: scan: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	if err := s.markPaused(ctx, runs); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

// GetRun returns everything recorded about one run, read from a single
// snapshot, or ErrNotFound.
func (s *Store) GetRun(ctx context.Context, runID int64) (*RunDetail, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("get run %d: begin: %w", runID, err)
	}
	defer tx.Rollback()

	run, err := getRun(ctx, tx, runID)
	if err != nil {
		return nil, fmt.Errorf("get run %d: %w", runID, err)
	}
	d := &RunDetail{Run: *run}

	var (
		sumJSON string
		dropped sql.NullString
	)
	if err := tx.QueryRowContext(ctx, `SELECT summaries, sources_dropped_at FROM runs WHERE id = ?`, runID).Scan(&sumJSON, &dropped); err != nil {
		return nil, fmt.Errorf("get run %d: read summaries: %w", runID, err)
	}
	if d.SourcesDroppedAt, err = parseNullTime(dropped); err != nil {
		return nil, fmt.Errorf("get run %d: %w", runID, err)
	}
	if err := json.Unmarshal([]byte(sumJSON), &d.Summaries); err != nil {
		return nil, fmt.Errorf("get run %d: decode summaries: %w", runID, err)
	}
	if d.Agent, err = agentStats(ctx, tx, runID); err != nil {
		return nil, fmt.Errorf("get run %d: %w", runID, err)
	}
	if d.Budget, err = runBudget(ctx, tx, runID); err != nil {
		return nil, fmt.Errorf("get run %d: %w", runID, err)
	}
	if d.Events, err = runEvents(ctx, tx, run.EventID); err != nil {
		return nil, fmt.Errorf("get run %d: %w", runID, err)
	}
	if d.Problems, err = runProblems(ctx, tx, runID); err != nil {
		return nil, fmt.Errorf("get run %d: %w", runID, err)
	}
	if d.Dispatches, err = runDispatches(ctx, tx, runID); err != nil {
		return nil, fmt.Errorf("get run %d: %w", runID, err)
	}
	if d.Egress, err = runEgress(ctx, tx, runID); err != nil {
		return nil, fmt.Errorf("get run %d: %w", runID, err)
	}
	// Through the Tx: a pool query here would wait for a second connection
	// while this one is held, and one GetRun per channel at once exhausted
	// the pool and stopped the daemon.
	if _, d.RepoPaused, err = repoPaused(ctx, tx, d.Repo); err != nil {
		return nil, fmt.Errorf("get run %d: %w", runID, err)
	}
	return d, nil
}

func runEvents(ctx context.Context, q querier, eventID int64) ([]EventRecord, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, vcs, repo, revision, user, client, source, received_at,
		duplicate_of, payload FROM events WHERE id = ? OR duplicate_of = ? ORDER BY id`, eventID, eventID)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	var events []EventRecord
	for rows.Next() {
		var (
			e                EventRecord
			source, received string
			dup              sql.NullInt64
			payload          string
		)
		if err := rows.Scan(&e.ID, &e.VCS, &e.Repo, &e.Revision, &e.User, &e.Client, &source,
			&received, &dup, &payload); err != nil {
			return nil, fmt.Errorf("read events: scan: %w", err)
		}
		e.Source = triggers.Source(source)
		e.DuplicateOf = dup.Int64
		e.Payload = json.RawMessage(payload)
		if e.ReceivedAt, err = parseTime(received); err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return events, nil
}

func runProblems(ctx context.Context, q querier, runID int64) ([]review.Problem, error) {
	rows, err := q.QueryContext(ctx, `SELECT file, line, end_line, severity, category, message,
		suggestion, fingerprint FROM problems WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("read problems: %w", err)
	}
	defer rows.Close()
	var problems []review.Problem
	for rows.Next() {
		var (
			p        review.Problem
			severity string
		)
		if err := rows.Scan(&p.File, &p.Line, &p.EndLine, &severity, &p.Category, &p.Message,
			&p.Suggestion, &p.Fingerprint); err != nil {
			return nil, fmt.Errorf("read problems: scan: %w", err)
		}
		p.Severity = review.Severity(severity)
		problems = append(problems, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read problems: %w", err)
	}
	// Severity order lives in review (Rank), not in SQL; stable so equal
	// keys keep the agent's order.
	sort.SliceStable(problems, func(i, j int) bool {
		a, b := problems[i], problems[j]
		if ra, rb := a.Severity.Rank(), b.Severity.Rank(); ra != rb {
			return ra > rb
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	return problems, nil
}

// CountRuns returns how many runs exist for (repo, revision).
func (s *Store) CountRuns(ctx context.Context, repo, revision string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs WHERE repo = ? AND revision = ?`,
		repo, revision).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count runs: %w", err)
	}
	return n, nil
}

// CountEvents returns how many receipts of (repo, revision) were stored
// and how many of them were duplicates.
func (s *Store) CountEvents(ctx context.Context, repo, revision string) (total, duplicates int, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(duplicate_of) FROM events
		WHERE repo = ? AND revision = ?`, repo, revision).Scan(&total, &duplicates)
	if err != nil {
		return 0, 0, fmt.Errorf("count events: %w", err)
	}
	return total, duplicates, nil
}

// RecordRejectedEvent stores a request the daemon refused, so operators
// can see what a misconfigured hook or an attacker sent. Payloads beyond
// MaxRejectedPayload are cut and flagged. A zero ReceivedAt means now.
func (s *Store) RecordRejectedEvent(ctx context.Context, r RejectedEvent) (int64, error) {
	if r.Reason == "" {
		return 0, fmt.Errorf("record rejected event: %w: reason is required", ErrInvalid)
	}
	if r.ReceivedAt.IsZero() {
		r.ReceivedAt = s.now()
	}
	payload := r.Payload
	truncated := r.Truncated
	if len(payload) > MaxRejectedPayload {
		payload = payload[:MaxRejectedPayload]
		truncated = true
	}
	if payload == nil {
		payload = []byte{}
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO rejected_events
		(received_at, reason, remote, payload, truncated) VALUES (?, ?, ?, ?, ?)`,
		formatTime(r.ReceivedAt), r.Reason, r.Remote, payload, truncated)
	if err != nil {
		return 0, fmt.Errorf("record rejected event: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("record rejected event: %w", err)
	}
	return id, nil
}

// ListRejectedEvents returns rejected requests newest first; limit <= 0
// means DefaultListLimit.
func (s *Store) ListRejectedEvents(ctx context.Context, limit int) ([]RejectedEvent, error) {
	return s.ListRejected(ctx, RejectedFilter{Limit: limit})
}
