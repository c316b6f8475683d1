package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
)

// ErrNotRetryable: RetryDispatch was asked to re-drive a dispatch that is
// not failed, dead or unknown. (A claim that cannot be taken is
// delivery.ErrNotClaimable: the state machine is delivery's.)
var ErrNotRetryable = errors.New("dispatch is not failed, dead or unknown")

// Store implements delivery.Store: the dispatch rows, their claims and
// the attempt log, and the operator's view of them.
var _ delivery.Store = (*Store)(nil)

// DispatchFilter selects dispatches for ListDispatches; empty matches all.
type DispatchFilter struct {
	Status  delivery.Status
	Channel string
	Limit   int // <= 0 means DefaultListLimit
}

// PlanDispatch records what a run should deliver to channel: status
// pending (to be sent) or suppressed (policy), with purpose and reason. A
// row that already exists keeps its status when it was sent, failed or
// dead, or is being sent right now, so a resumed run never posts twice;
// otherwise the new plan replaces the old one. One exception: a report
// replaces a failed run's delivery (purpose error) in any state but mid
// send, as a fresh dispatch with its own attempts, so a run retried
// after its failure notice went out still delivers its real report.
//
// report is what the dispatch sends (nil for a suppressed one); it is
// stored and replaced with the plan, so every attempt sends it as
// planned.
func (s *Store) PlanDispatch(ctx context.Context, runID int64, channel string, purpose delivery.Purpose, status delivery.Status, reason string, report *im.Report) (delivery.Dispatch, error) {
	if channel == "" {
		return delivery.Dispatch{}, fmt.Errorf("plan dispatch: %w: channel is required", ErrInvalid)
	}
	if status != delivery.StatusPending && status != delivery.StatusSuppressed {
		return delivery.Dispatch{}, fmt.Errorf("plan dispatch: %w: status %q", ErrInvalid, status)
	}
	if purpose != delivery.PurposeReport && purpose != delivery.PurposeError {
		return delivery.Dispatch{}, fmt.Errorf("plan dispatch: %w: purpose %q", ErrInvalid, purpose)
	}
	reportJSON, err := encodeReport(report)
	if err != nil {
		return delivery.Dispatch{}, fmt.Errorf("plan dispatch run %d %s: %w", runID, channel, err)
	}
	now := formatTime(s.now())
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return delivery.Dispatch{}, fmt.Errorf("plan dispatch run %d %s: begin: %w", runID, channel, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO dispatches (run_id, channel, status, purpose, last_error, created_at, updated_at, report)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, channel, slot) DO UPDATE SET status = excluded.status, purpose = excluded.purpose,
			last_error = excluded.last_error, updated_at = excluded.updated_at, report = excluded.report,
			attempts = CASE WHEN `+supersedes+` THEN 0 ELSE dispatches.attempts END,
			sent_at = CASE WHEN `+supersedes+` THEN NULL ELSE dispatches.sent_at END,
			next_attempt_at = CASE WHEN `+supersedes+` THEN NULL ELSE dispatches.next_attempt_at END,
			first_attempt_at = CASE WHEN `+supersedes+` THEN NULL ELSE dispatches.first_attempt_at END,
			rendered = CASE WHEN `+supersedes+` THEN '' ELSE dispatches.rendered END,
			message_id = CASE WHEN `+supersedes+` THEN '' ELSE dispatches.message_id END,
			parts_delivered = CASE WHEN `+supersedes+` THEN 0 ELSE dispatches.parts_delivered END,
			unknown_outcomes = CASE WHEN `+supersedes+` THEN 0 ELSE dispatches.unknown_outcomes END
		WHERE (dispatches.status IN ('pending', 'suppressed') OR `+supersedes+`)
			AND (dispatches.lease_until IS NULL OR dispatches.lease_until <= excluded.updated_at)`,
		runID, channel, string(status), string(purpose), reason, now, now, reportJSON); err != nil {
		if isForeignKeyViolation(err) {
			return delivery.Dispatch{}, fmt.Errorf("plan dispatch run %d %s: %w", runID, channel, ErrNotFound)
		}
		return delivery.Dispatch{}, fmt.Errorf("plan dispatch run %d %s: %w", runID, channel, err)
	}
	d, err := scanDispatch(tx.QueryRowContext(ctx, `SELECT `+dispatchColumns+
		` FROM dispatches WHERE run_id = ? AND channel = ? AND slot = ''`, runID, channel))
	if err != nil {
		return delivery.Dispatch{}, fmt.Errorf("plan dispatch run %d %s: read: %w", runID, channel, err)
	}
	if err := tx.Commit(); err != nil {
		return delivery.Dispatch{}, fmt.Errorf("plan dispatch run %d %s: commit: %w", runID, channel, err)
	}
	return d, nil
}

// supersedes is true in PlanDispatch's upsert when the new plan is a
// report and the row a failed run's partial review or notice: the
// report is a new message (its own dedupe key, thread and parts).
const supersedes = `(excluded.purpose = 'report' AND dispatches.purpose = 'error')`

// claimable is the condition for taking a pending dispatch at time ?1:
// not leased, due, and not queued behind an earlier dispatch to the same
// channel that is waiting for a retry (or, released at a stop, for its
// rate-limit token), so one channel's messages go out in the order they
// were planned.
const claimable = `d.status = 'pending'
	AND (d.lease_until IS NULL OR d.lease_until <= ?1)
	AND (d.next_attempt_at IS NULL OR d.next_attempt_at <= ?1)
	AND NOT EXISTS (SELECT 1 FROM dispatches e WHERE e.channel = d.channel AND e.status = 'pending'
		AND (e.attempts > 0 OR e.next_attempt_at IS NOT NULL) AND e.id < d.id)`

// ClaimDispatch takes one dispatch for an attempt, leasing it until now +
// lease and recording the attempt's start. It fails with delivery.ErrNotClaimable
// when the row is not pending, not due, leased, or waits behind an earlier
// retry on its channel. The update is conditional, so two senders (or two
// processes) never attempt the same dispatch at once.
func (s *Store) ClaimDispatch(ctx context.Context, id int64, lease time.Duration) (*delivery.Claim, error) {
	return s.claimPick(ctx, `SELECT d.id FROM dispatches d WHERE d.id = ?2 AND `+claimable, id, lease)
}

// finishedRun restricts a pick to dispatches of finished runs: rows of a
// run still running are left to the pipeline that plans them (the run may
// be redone after a crash and its result replaced). A row of no run (a
// digest) has nothing to wait for.
const finishedRun = `(d.run_id IS NULL OR EXISTS (SELECT 1 FROM runs r WHERE r.id = d.run_id AND r.status IN ('succeeded', 'failed', 'skipped')))`

// ClaimDue takes the oldest due dispatch of a finished run to channel, as
// ClaimDispatch does, or returns nil when there is none.
func (s *Store) ClaimDue(ctx context.Context, channel string, lease time.Duration) (*delivery.Claim, error) {
	c, err := s.claimPick(ctx, `SELECT d.id FROM dispatches d WHERE d.channel = ?2 AND `+finishedRun+` AND `+claimable+`
		ORDER BY d.id LIMIT 1`, channel, lease)
	if errors.Is(err, delivery.ErrNotClaimable) {
		return nil, nil
	}
	return c, err
}

// DueChannels lists the channels that have a due dispatch of a finished run.
func (s *Store) DueChannels(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT d.channel FROM dispatches d
		WHERE `+finishedRun+` AND `+claimable+` ORDER BY d.channel`, formatTime(s.now()))
	if err != nil {
		return nil, fmt.Errorf("due channels: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ch string
		if err := rows.Scan(&ch); err != nil {
			return nil, fmt.Errorf("due channels: %w", err)
		}
		out = append(out, ch)
	}
	return out, rows.Err()
}

// RunDispatches lists a run's dispatches, oldest first.
func (s *Store) RunDispatches(ctx context.Context, runID int64) ([]delivery.Dispatch, error) {
	out, err := runDispatches(ctx, s.db, runID)
	if err != nil {
		return nil, fmt.Errorf("run %d: %w", runID, err)
	}
	return out, nil
}

// LastSends is when each channel last had a delivery attempt (the end of
// it when it finished), so the dispatcher's rate limits survive a restart.
func (s *Store) LastSends(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT d.channel, MAX(COALESCE(a.finished_at, a.started_at))
		FROM dispatch_attempts a JOIN dispatches d ON d.id = a.dispatch_id GROUP BY d.channel`)
	if err != nil {
		return nil, fmt.Errorf("last sends: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var ch, at string
		if err := rows.Scan(&ch, &at); err != nil {
			return nil, fmt.Errorf("last sends: %w", err)
		}
		t, err := parseTime(at)
		if err != nil {
			return nil, fmt.Errorf("last sends: %w", err)
		}
		out[ch] = t
	}
	return out, rows.Err()
}

// claimPick leases the dispatch pick selects and records the attempt's
// start. On PostgreSQL, as ClaimNext does for runs, the pick locks its
// row FOR UPDATE SKIP LOCKED instead of taking the writer lock: a row
// another daemon is claiming is passed over (or, picked by id, not
// claimable), so senders on several daemons never wait for each other or
// for the writer lock, and never lease one dispatch twice. Every later
// statement of the claim touches only the locked row and its attempts.
func (s *Store) claimPick(ctx context.Context, pick string, arg any, lease time.Duration) (*delivery.Claim, error) {
	now := s.now()
	tx, err := s.db.BeginTx(withoutWriterLock(ctx), nil)
	if err != nil {
		return nil, fmt.Errorf("claim dispatch: begin: %w", err)
	}
	defer tx.Rollback()
	var picked int64
	err = tx.QueryRowContext(ctx, pick+s.skipLocked(), formatTime(now), arg).Scan(&picked)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, delivery.ErrNotClaimable
	}
	if err != nil {
		return nil, fmt.Errorf("claim dispatch: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE dispatches SET lease_until = ?1, updated_at = ?2,
		first_attempt_at = COALESCE(first_attempt_at, ?2) WHERE id = ?3`,
		formatTime(now.Add(lease)), formatTime(now), picked); err != nil {
		return nil, fmt.Errorf("claim dispatch %d: %w", picked, err)
	}
	c := &delivery.Claim{}
	var report sql.NullString
	if c.Dispatch, err = scanDispatch(tx.QueryRowContext(ctx, `SELECT `+dispatchColumns+`, report FROM dispatches WHERE id = ?`, picked), &report); err != nil {
		return nil, fmt.Errorf("claim dispatch %d: read: %w", picked, err)
	}
	// A report that does not decode stays nil: the dispatcher fails the
	// dispatch as unsendable rather than the claim failing at every pass.
	c.Report, _ = decodeReport(report)
	var last sql.NullInt64
	var lastFinished sql.NullString
	err = tx.QueryRowContext(ctx, `SELECT attempt, finished_at FROM dispatch_attempts
		WHERE dispatch_id = ? ORDER BY attempt DESC LIMIT 1`, picked).Scan(&last, &lastFinished)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("claim dispatch %d: read attempts: %w", picked, err)
	}
	c.Attempt = int(last.Int64) + 1
	c.Interrupted = last.Valid && !lastFinished.Valid
	res, err := tx.ExecContext(ctx, `INSERT INTO dispatch_attempts (dispatch_id, attempt, started_at) VALUES (?, ?, ?)`,
		picked, c.Attempt, formatTime(now))
	if err != nil {
		return nil, fmt.Errorf("claim dispatch %d: record attempt: %w", picked, err)
	}
	if c.AttemptID, err = res.LastInsertId(); err != nil {
		return nil, fmt.Errorf("claim dispatch %d: record attempt: %w", picked, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("claim dispatch %d: commit: %w", picked, err)
	}
	return c, nil
}

// FinishAttempt records how a claimed attempt ended, on the attempt and
// on the dispatch, and releases the lease.
func (s *Store) FinishAttempt(ctx context.Context, c *delivery.Claim, r delivery.AttemptResult) (delivery.Dispatch, error) {
	outcome := r.Outcome
	if outcome == "" {
		outcome = map[delivery.Status]string{delivery.StatusSent: delivery.OutcomeSent, delivery.StatusPending: delivery.OutcomeRetry,
			delivery.StatusFailed: delivery.OutcomeFailed, delivery.StatusDead: delivery.OutcomeDead, delivery.StatusUnknown: delivery.OutcomeUnknown}[r.Status]
	}
	switch r.Status {
	case delivery.StatusSent, delivery.StatusPending, delivery.StatusFailed, delivery.StatusDead, delivery.StatusUnknown:
	default:
		return delivery.Dispatch{}, fmt.Errorf("finish attempt: %w: status %q", ErrInvalid, r.Status)
	}
	unknown := 0
	if outcome == delivery.OutcomeUnknown {
		unknown = 1
	}
	now := formatTime(s.now())
	id := c.Dispatch.ID
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return delivery.Dispatch{}, fmt.Errorf("finish attempt on dispatch %d: begin: %w", id, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE dispatch_attempts SET finished_at = ?, outcome = ?, reason = ?,
		status_code = ?, platform_code = ?, response = ?, error = ? WHERE id = ?`,
		now, outcome, r.Reason, r.StatusCode, r.PlatformCode, r.Response, r.Error, c.AttemptID); err != nil {
		return delivery.Dispatch{}, fmt.Errorf("finish attempt on dispatch %d: %w", id, err)
	}
	var sentAt any
	if r.Status == delivery.StatusSent {
		sentAt = now
	}
	if _, err := tx.ExecContext(ctx, `UPDATE dispatches SET status = ?, attempts = attempts + 1, last_error = ?,
		next_attempt_at = ?, lease_until = NULL, updated_at = ?, sent_at = COALESCE(?, sent_at),
		rendered = CASE WHEN ? <> '' THEN ? ELSE rendered END,
		message_id = CASE WHEN ? <> '' THEN ? ELSE message_id END,
		parts_delivered = CASE WHEN parts_delivered > ? THEN parts_delivered ELSE ? END, unknown_outcomes = unknown_outcomes + ?
		WHERE id = ?`,
		string(r.Status), r.Error, nullTime(r.NextAttemptAt), now, sentAt,
		r.Rendered, r.Rendered, r.MessageID, r.MessageID, r.PartsDelivered, r.PartsDelivered, unknown, id); err != nil {
		return delivery.Dispatch{}, fmt.Errorf("finish attempt on dispatch %d: %w", id, err)
	}
	d, err := scanDispatch(tx.QueryRowContext(ctx, `SELECT `+dispatchColumns+` FROM dispatches WHERE id = ?`, id))
	if err != nil {
		return delivery.Dispatch{}, fmt.Errorf("finish attempt on dispatch %d: read: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return delivery.Dispatch{}, fmt.Errorf("finish attempt on dispatch %d: commit: %w", id, err)
	}
	return d, nil
}

// ReleaseClaim gives claim c back without counting an attempt (our own
// stop, or a wait for a rate-limit token): the dispatch stays pending,
// due at notBefore (zero: now), its attempts and give-up window as they
// were. how says what becomes of the attempt's record: removed when
// nothing went out, finished as a retry when parts did, left open
// when a request may have reached the platform, so the next claim is
// Interrupted.
func (s *Store) ReleaseClaim(ctx context.Context, c *delivery.Claim, notBefore time.Time, how delivery.Release) (delivery.Dispatch, error) {
	id := c.Dispatch.ID
	now := formatTime(s.now())
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return delivery.Dispatch{}, fmt.Errorf("release dispatch %d: begin: %w", id, err)
	}
	defer tx.Rollback()
	switch how {
	case delivery.ReleaseUnsent:
		_, err = tx.ExecContext(ctx, `DELETE FROM dispatch_attempts WHERE id = ?`, c.AttemptID)
	case delivery.ReleasePartial:
		_, err = tx.ExecContext(ctx, `UPDATE dispatch_attempts SET finished_at = ?, outcome = ?, reason = ?, error = ? WHERE id = ?`,
			now, delivery.OutcomeRetry, "rate_limited", "parts delivered; the rest waits for the rate limit (not an attempt)", c.AttemptID)
	case delivery.ReleaseMaybeSent:
	default:
		return delivery.Dispatch{}, fmt.Errorf("release dispatch %d: %w: how %d", id, ErrInvalid, how)
	}
	if err != nil {
		return delivery.Dispatch{}, fmt.Errorf("release dispatch %d: attempt: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE dispatches SET lease_until = NULL, updated_at = ?, next_attempt_at = ?,
		first_attempt_at = CASE WHEN attempts = 0 THEN NULL ELSE first_attempt_at END
		WHERE id = ? AND status = 'pending'`, now, nullTime(notBefore), id); err != nil {
		return delivery.Dispatch{}, fmt.Errorf("release dispatch %d: %w", id, err)
	}
	d, err := scanDispatch(tx.QueryRowContext(ctx, `SELECT `+dispatchColumns+` FROM dispatches WHERE id = ?`, id))
	if err != nil {
		return delivery.Dispatch{}, fmt.Errorf("release dispatch %d: read: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return delivery.Dispatch{}, fmt.Errorf("release dispatch %d: commit: %w", id, err)
	}
	return d, nil
}

// RecordParts records that the first parts parts of claim c's message
// are delivered (and the first part's platform id, when not empty), at
// once and outside the attempt's end, so a process killed between parts
// resumes after them. It never lowers the count.
func (s *Store) RecordParts(ctx context.Context, c *delivery.Claim, parts int, messageID string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE dispatches SET updated_at = ?,
		parts_delivered = CASE WHEN parts_delivered > ? THEN parts_delivered ELSE ? END,
		message_id = CASE WHEN ? <> '' THEN ? ELSE message_id END
		WHERE id = ? AND status = 'pending'`,
		formatTime(s.now()), parts, parts, messageID, messageID, c.Dispatch.ID); err != nil {
		return fmt.Errorf("record parts of dispatch %d: %w", c.Dispatch.ID, err)
	}
	return nil
}

// ReleaseDispatchLeases makes every pending dispatch claimable again.
// Call it once at daemon start, like RequeueInterrupted: a lease left by a
// dead process would otherwise delay its dispatch until it expired.
func (s *Store) ReleaseDispatchLeases(ctx context.Context) (int, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE dispatches SET lease_until = NULL
		WHERE status = 'pending' AND lease_until IS NOT NULL`)
	if err != nil {
		return 0, fmt.Errorf("release dispatch leases: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("release dispatch leases: %w", err)
	}
	return int(n), nil
}

// NextDispatchDue returns when the earliest scheduled retry of a finished
// run falls due; ok is false when none is scheduled in the future. Rows
// due now are the senders' business; they wake the dispatcher when done.
func (s *Store) NextDispatchDue(ctx context.Context) (at time.Time, ok bool, err error) {
	var next sql.NullString
	err = s.db.QueryRowContext(ctx, `SELECT MIN(d.next_attempt_at) FROM dispatches d
		WHERE d.status = 'pending' AND d.next_attempt_at > ? AND `+finishedRun, formatTime(s.now())).Scan(&next)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next dispatch due: %w", err)
	}
	if !next.Valid || next.String == "" {
		return time.Time{}, false, nil
	}
	t, err := parseTime(next.String)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next dispatch due: %w", err)
	}
	return t, true, nil
}

// GetDispatch returns one dispatch or ErrNotFound.
func (s *Store) GetDispatch(ctx context.Context, id int64) (delivery.Dispatch, error) {
	d, err := scanDispatch(s.db.QueryRowContext(ctx, `SELECT `+dispatchColumns+` FROM dispatches WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return delivery.Dispatch{}, fmt.Errorf("dispatch %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return delivery.Dispatch{}, fmt.Errorf("dispatch %d: %w", id, err)
	}
	return d, nil
}

// ListDispatches returns dispatches newest first.
func (s *Store) ListDispatches(ctx context.Context, f DispatchFilter) ([]delivery.Dispatch, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, fmt.Errorf("list dispatches: %w: status %q", ErrInvalid, f.Status)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	query := `SELECT ` + dispatchColumns + ` FROM dispatches WHERE 1 = 1`
	var args []any
	if f.Status != "" {
		query += ` AND status = ?`
		args = append(args, string(f.Status))
	}
	if f.Channel != "" {
		query += ` AND channel = ?`
		args = append(args, f.Channel)
	}
	query += ` ORDER BY id DESC LIMIT ?`
	rows, err := s.db.QueryContext(ctx, query, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list dispatches: %w", err)
	}
	return collectDispatches(rows)
}

// DispatchAttempts returns a dispatch's attempts, first first.
func (s *Store) DispatchAttempts(ctx context.Context, dispatchID int64) ([]delivery.Attempt, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT dispatch_id, attempt, started_at, finished_at, outcome, reason,
		status_code, platform_code, response, error FROM dispatch_attempts WHERE dispatch_id = ? ORDER BY attempt`, dispatchID)
	if err != nil {
		return nil, fmt.Errorf("dispatch %d attempts: %w", dispatchID, err)
	}
	defer rows.Close()
	var out []delivery.Attempt
	for rows.Next() {
		var (
			a        delivery.Attempt
			started  string
			finished sql.NullString
		)
		if err := rows.Scan(&a.DispatchID, &a.Attempt, &started, &finished, &a.Outcome, &a.Reason,
			&a.StatusCode, &a.PlatformCode, &a.Response, &a.Error); err != nil {
			return nil, fmt.Errorf("dispatch %d attempts: scan: %w", dispatchID, err)
		}
		if a.StartedAt, err = parseTime(started); err != nil {
			return nil, err
		}
		if a.FinishedAt, err = parseNullTime(finished); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dispatch %d attempts: %w", dispatchID, err)
	}
	return out, nil
}

// RetryDispatch puts a failed, dead or unknown-outcome dispatch back to
// pending, due now, with a fresh attempt budget and give-up window (the
// attempt history is kept). It fails with
// ErrNotRetryable for any other status and ErrNotFound for no such id.
func (s *Store) RetryDispatch(ctx context.Context, id int64) (delivery.Dispatch, error) {
	now := formatTime(s.now())
	res, err := s.db.ExecContext(ctx, `UPDATE dispatches SET status = 'pending', attempts = 0,
		next_attempt_at = NULL, lease_until = NULL, updated_at = ?, first_attempt_at = NULL, unknown_outcomes = 0
		WHERE id = ? AND status IN ('failed', 'dead', 'unknown')`, now, id)
	if err != nil {
		return delivery.Dispatch{}, fmt.Errorf("retry dispatch %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		d, err := s.GetDispatch(ctx, id)
		if err != nil {
			return delivery.Dispatch{}, err
		}
		return d, fmt.Errorf("retry dispatch %d: %w (status %s)", id, ErrNotRetryable, d.Status)
	}
	return s.GetDispatch(ctx, id)
}

const dispatchColumns = `id, run_id, channel, status, attempts, last_error, created_at, updated_at, sent_at,
	purpose, next_attempt_at, rendered, message_id, parts_delivered, first_attempt_at, unknown_outcomes, slot`

// scanDispatch scans the dispatchColumns, then into extra the columns a
// query selects after them.
func scanDispatch(sc scanner, extra ...any) (delivery.Dispatch, error) {
	var (
		d                        delivery.Dispatch
		status, created, updated string
		sent, next, first        sql.NullString
		purpose                  string
		runID                    sql.NullInt64
	)
	if err := sc.Scan(append([]any{&d.ID, &runID, &d.Channel, &status, &d.Attempts, &d.LastError,
		&created, &updated, &sent, &purpose, &next, &d.Rendered, &d.MessageID, &d.PartsDelivered, &first, &d.UnknownOutcomes, &d.Slot}, extra...)...); err != nil {
		return delivery.Dispatch{}, err
	}
	d.RunID = runID.Int64 // 0: a row of no run (a digest)
	d.Purpose = delivery.Purpose(purpose)
	d.Status = delivery.Status(status)
	var err error
	if d.CreatedAt, err = parseTime(created); err != nil {
		return delivery.Dispatch{}, err
	}
	if d.UpdatedAt, err = parseTime(updated); err != nil {
		return delivery.Dispatch{}, err
	}
	if d.SentAt, err = parseNullTime(sent); err != nil {
		return delivery.Dispatch{}, err
	}
	if d.NextAttemptAt, err = parseNullTime(next); err != nil {
		return delivery.Dispatch{}, err
	}
	if d.FirstAttemptAt, err = parseNullTime(first); err != nil {
		return delivery.Dispatch{}, err
	}
	return d, nil
}

func runDispatches(ctx context.Context, q querier, runID int64) ([]delivery.Dispatch, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+dispatchColumns+
		` FROM dispatches WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("read dispatches: %w", err)
	}
	return collectDispatches(rows)
}

func collectDispatches(rows *sql.Rows) ([]delivery.Dispatch, error) {
	defer rows.Close()
	var out []delivery.Dispatch
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

// encodeReport is report as the report column holds it: JSON, NULL for
// none.
func encodeReport(report *im.Report) (any, error) {
	if report == nil {
		return nil, nil
	}
	b, err := json.Marshal(report)
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return string(b), nil
}

func decodeReport(col sql.NullString) (*im.Report, error) {
	if !col.Valid {
		return nil, nil
	}
	var r im.Report
	if err := json.Unmarshal([]byte(col.String), &r); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	return &r, nil
}

// DispatchesWithoutReport lists, oldest first, the dispatches that may
// still be sent (pending, or failed, dead or unknown, which an operator
// may retry) and have no report: planned by an aicr older than the report
// column, for the daemon to fill at start (SetDispatchReport) from the
// run. Notices (a slot: resolutions, digests) are always planned with
// their report and cannot be rebuilt from a run, so none is listed.
func (s *Store) DispatchesWithoutReport(ctx context.Context) ([]delivery.Dispatch, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+dispatchColumns+` FROM dispatches
		WHERE report IS NULL AND slot = '' AND status IN ('pending', 'failed', 'dead', 'unknown') ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("dispatches without report: %w", err)
	}
	return collectDispatches(rows)
}

// SetDispatchReport stores the report of dispatch id, which has none (see
// DispatchesWithoutReport); a report planned meanwhile is kept.
func (s *Store) SetDispatchReport(ctx context.Context, id int64, report im.Report) error {
	col, err := encodeReport(&report)
	if err != nil {
		return fmt.Errorf("set report of dispatch %d: %w", id, err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE dispatches SET report = ? WHERE id = ? AND report IS NULL`, col, id); err != nil {
		return fmt.Errorf("set report of dispatch %d: %w", id, err)
	}
	return nil
}

// PlanNotice records a delivery that is not a run's report: a
// resolution follow-up (purpose resolution, of the resolving run) or a
// digest (purpose digest, runID 0: no run), told apart from the run's
// report row and from each other by slot ("resolution",
// "digest:<name>:<period start>"). It is idempotent: when the row for
// (run, channel, slot), or (channel, slot) without a run, exists it is
// returned as it stands, with created false, so a resumed run or a second
// daemon never plans a notice twice. The row is pending; a notice of a
// run goes out once the run has finished, a digest at once.
func (s *Store) PlanNotice(ctx context.Context, runID int64, channel string, purpose delivery.Purpose, slot string, report *im.Report) (d delivery.Dispatch, created bool, err error) {
	switch {
	case channel == "":
		return d, false, fmt.Errorf("plan notice: %w: channel is required", ErrInvalid)
	case slot == "":
		return d, false, fmt.Errorf("plan notice to %s: %w: slot is required (\"\" is the run's report row)", channel, ErrInvalid)
	case purpose != delivery.PurposeResolution && purpose != delivery.PurposeDigest:
		return d, false, fmt.Errorf("plan notice to %s: %w: purpose %q (resolution or digest)", channel, ErrInvalid, purpose)
	case report == nil:
		return d, false, fmt.Errorf("plan notice to %s %s: %w: no report to send", channel, slot, ErrInvalid)
	case runID < 0:
		return d, false, fmt.Errorf("plan notice to %s %s: %w: run id %d", channel, slot, ErrInvalid, runID)
	}
	what := fmt.Sprintf("plan notice %s to %s", slot, channel)
	if runID > 0 {
		what = fmt.Sprintf("plan notice %s of run %d to %s", slot, runID, channel)
	}
	reportJSON, err := encodeReport(report)
	if err != nil {
		return d, false, fmt.Errorf("%s: %w", what, err)
	}
	var run any
	if runID > 0 {
		run = runID
	}
	now := formatTime(s.now())
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return d, false, fmt.Errorf("%s: begin: %w", what, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO dispatches (run_id, channel, status, purpose, created_at, updated_at, report, slot)
		VALUES (?, ?, 'pending', ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		run, channel, string(purpose), now, now, reportJSON, slot)
	if err != nil {
		if isForeignKeyViolation(err) {
			return d, false, fmt.Errorf("%s: %w", what, ErrNotFound)
		}
		return d, false, fmt.Errorf("%s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return d, false, fmt.Errorf("%s: %w", what, err)
	}
	q := `SELECT ` + dispatchColumns + ` FROM dispatches WHERE run_id IS NULL AND channel = ? AND slot = ?`
	args := []any{channel, slot}
	if runID > 0 {
		q = `SELECT ` + dispatchColumns + ` FROM dispatches WHERE run_id = ? AND channel = ? AND slot = ?`
		args = []any{runID, channel, slot}
	}
	if d, err = scanDispatch(tx.QueryRowContext(ctx, q, args...)); err != nil {
		return d, false, fmt.Errorf("%s: read: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return d, false, fmt.Errorf("%s: commit: %w", what, err)
	}
	return d, n == 1, nil
}

// RunReportRows lists a run's dispatches with their platform message ids
// and stored reports, oldest first: what a resolution follow-up refers to
// (the announcing run's sent report, to update or reply to).
func (s *Store) RunReportRows(ctx context.Context, runID int64) ([]DispatchWithReport, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+dispatchColumns+`, report FROM dispatches WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("run %d dispatches: %w", runID, err)
	}
	defer rows.Close()
	var out []DispatchWithReport
	for rows.Next() {
		var col sql.NullString
		d, err := scanDispatch(rows, &col)
		if err != nil {
			return nil, fmt.Errorf("run %d dispatches: scan: %w", runID, err)
		}
		r, err := decodeReport(col)
		if err != nil {
			return nil, fmt.Errorf("run %d dispatch %d: %w", runID, d.ID, err)
		}
		out = append(out, DispatchWithReport{Dispatch: d, Report: r})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("run %d dispatches: %w", runID, err)
	}
	return out, nil
}

// DispatchWithReport is a dispatch row and the report it sends (nil for
// a suppressed row, or one an older aicr planned).
type DispatchWithReport struct {
	delivery.Dispatch
	Report *im.Report `json:"report,omitempty"`
}
