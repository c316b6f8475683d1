package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
)

func validSource(s triggers.Source) bool {
	switch s {
	case triggers.SourceTrigger, triggers.SourceSpool, triggers.SourceManual, triggers.SourceReconcile:
		return true
	}
	return false
}

// Enqueue records one receipt of ev and, unless it repeats a revision that
// already has a run, queues a run for it, all in one transaction.
//
// Automatic sources (trigger, spool, reconcile) are idempotent on
// (repo, revision): the first receipt becomes the primary event with a
// queued run; later ones are stored with duplicate_of set and return the
// primary's ids with Duplicate true. Manual requests always get a new run.
// receivedAt is the receipt time and the run's queued_at; zero means now.
func (s *Store) Enqueue(ctx context.Context, ev triggers.Event, source triggers.Source, receivedAt time.Time) (Enqueued, error) {
	if ev.Repo == "" || ev.Revision == "" || ev.VCS == "" {
		return Enqueued{}, fmt.Errorf("enqueue: %w: vcs, repo and revision are required", ErrInvalid)
	}
	if !validSource(source) {
		return Enqueued{}, fmt.Errorf("enqueue: %w: source %q", ErrInvalid, source)
	}
	if receivedAt.IsZero() {
		receivedAt = s.now()
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return Enqueued{}, fmt.Errorf("enqueue: encode event: %w", err)
	}
	at := formatTime(receivedAt)

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Enqueued{}, fmt.Errorf("enqueue: begin: %w", err)
	}
	defer tx.Rollback()

	const insertEvent = `INSERT INTO events
		(vcs, repo, revision, user, client, source, received_at, payload, duplicate_of)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	args := []any{ev.VCS, ev.Repo, ev.Revision, ev.User, ev.Client, string(source), at, string(payload)}

	var eventID int64
	if source == triggers.SourceManual {
		res, err := tx.ExecContext(ctx, insertEvent, append(args, nil)...)
		if err != nil {
			return Enqueued{}, fmt.Errorf("enqueue: insert event: %w", err)
		}
		if eventID, err = res.LastInsertId(); err != nil {
			return Enqueued{}, fmt.Errorf("enqueue: event id: %w", err)
		}
	} else {
		// The conflict clause names the partial unique index, so the
		// database itself decides who is primary; no read-then-write race
		// even if a writer were not using BEGIN IMMEDIATE.
		err := tx.QueryRowContext(ctx, insertEvent+`
			ON CONFLICT (repo, revision) WHERE duplicate_of IS NULL AND source <> 'manual' DO NOTHING
			RETURNING id`, append(args, nil)...).Scan(&eventID)
		if errors.Is(err, sql.ErrNoRows) {
			return s.enqueueDuplicate(ctx, tx, ev, insertEvent, args)
		}
		if err != nil {
			return Enqueued{}, fmt.Errorf("enqueue: insert event: %w", err)
		}
	}

	res, err := tx.ExecContext(ctx, `INSERT INTO runs
		(event_id, vcs, repo, revision, status, queued_at) VALUES (?, ?, ?, ?, ?, ?)`,
		eventID, ev.VCS, ev.Repo, ev.Revision, string(RunQueued), at)
	if err != nil {
		return Enqueued{}, fmt.Errorf("enqueue: insert run: %w", err)
	}
	runID, err := res.LastInsertId()
	if err != nil {
		return Enqueued{}, fmt.Errorf("enqueue: run id: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Enqueued{}, fmt.Errorf("enqueue: commit: %w", err)
	}
	return Enqueued{EventID: eventID, RunID: runID}, nil
}

func (s *Store) enqueueDuplicate(ctx context.Context, tx *sql.Tx, ev triggers.Event, insertEvent string, args []any) (Enqueued, error) {
	var primary Enqueued
	err := tx.QueryRowContext(ctx, `SELECT e.id, r.id FROM events e JOIN runs r ON r.event_id = e.id
		WHERE e.repo = ? AND e.revision = ? AND e.duplicate_of IS NULL AND e.source <> 'manual'`,
		ev.Repo, ev.Revision).Scan(&primary.EventID, &primary.RunID)
	if err != nil {
		return Enqueued{}, fmt.Errorf("enqueue: find primary event: %w", err)
	}
	if _, err := tx.ExecContext(ctx, insertEvent, append(args, primary.EventID)...); err != nil {
		return Enqueued{}, fmt.Errorf("enqueue: insert duplicate event: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Enqueued{}, fmt.Errorf("enqueue: commit: %w", err)
	}
	primary.Duplicate = true
	return primary, nil
}

// ClaimNext takes the oldest queued run (lowest id, i.e. first enqueued),
// marks it running, counts the attempt and returns it. It returns
// ErrNoWork when nothing is queued. The select and update happen in one
// write transaction, so concurrent claimers, in this process or another,
// never get the same run.
func (s *Store) ClaimNext(ctx context.Context) (*Run, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("claim run: begin: %w", err)
	}
	defer tx.Rollback()

	var id int64
	err = tx.QueryRowContext(ctx, `UPDATE runs
		SET status = ?, attempts = attempts + 1, started_at = ?, finished_at = NULL
		WHERE id = (SELECT id FROM runs WHERE status = ? AND (not_before IS NULL OR not_before <= ?) ORDER BY id LIMIT 1)
		RETURNING id`, string(RunRunning), formatTime(s.now()), string(RunQueued), formatTime(s.now())).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoWork
	}
	if err != nil {
		return nil, fmt.Errorf("claim run: %w", err)
	}
	run, err := getRun(ctx, tx, id)
	if err != nil {
		return nil, fmt.Errorf("claim run %d: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("claim run %d: commit: %w", id, err)
	}
	return run, nil
}

// RequeueInterrupted puts every run left running by a daemon that died
// back in the queue, keeping its id (and its position, which is by id) so
// the audit shows one run with several attempts. Call it once at daemon
// start, before any worker claims: it cannot tell a crashed run from one a
// live worker (or a second daemon on the same file) is doing.
func (s *Store) RequeueInterrupted(ctx context.Context, maxAttempts int) (requeued, abandoned int, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("requeue interrupted runs: begin: %w", err)
	}
	defer tx.Rollback()
	// A run that was interrupted on every one of its attempts probably
	// crashes the daemon itself; retrying it forever would take the
	// daemon down at every start.
	res, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, finished_at = ?,
		error = 'interrupted ' || attempts || ' times: the daemon stopped during every attempt (see its logs); retry with aicr review'
		WHERE status = ? AND attempts >= ?`,
		string(RunFailed), formatTime(s.now()), string(RunRunning), maxAttempts)
	if err != nil {
		return 0, 0, fmt.Errorf("abandon interrupted runs: %w", err)
	}
	n, _ := res.RowsAffected()
	abandoned = int(n)
	res, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?, started_at = NULL WHERE status = ?`,
		string(RunQueued), string(RunRunning))
	if err != nil {
		return 0, 0, fmt.Errorf("requeue interrupted runs: %w", err)
	}
	n, _ = res.RowsAffected()
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("requeue interrupted runs: commit: %w", err)
	}
	return int(n), abandoned, nil
}

// RetryLater puts a running run back in the queue, not to be claimed
// before notBefore, keeping why it failed in its error. The pipeline uses
// it for failures worth retrying, such as an unreachable VCS server.
func (s *Store) RetryLater(ctx context.Context, runID int64, reason string, notBefore time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, error = ?, not_before = ?, started_at = NULL
		WHERE id = ? AND status = ?`,
		string(RunQueued), reason, formatTime(notBefore), runID, string(RunRunning))
	if err != nil {
		return fmt.Errorf("retry run %d later: %w", runID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("retry run %d later: %w", runID, ErrNotRunning)
	}
	return nil
}

// RepoMark returns the newest change id the reconciler recorded for repo;
// ok is false before the first tick.
func (s *Store) RepoMark(ctx context.Context, repo string) (lastSeen string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT last_seen FROM repo_marks WHERE repo = ?`, repo).Scan(&lastSeen)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read mark of %s: %w", repo, err)
	}
	return lastSeen, true, nil
}

// SetRepoMark records the newest change id the reconciler has enqueued
// (or found already enqueued) for repo.
func (s *Store) SetRepoMark(ctx context.Context, repo, lastSeen string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO repo_marks (repo, last_seen, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (repo) DO UPDATE SET last_seen = excluded.last_seen, updated_at = excluded.updated_at`,
		repo, lastSeen, formatTime(s.now()))
	if err != nil {
		return fmt.Errorf("set mark of %s: %w", repo, err)
	}
	return nil
}

// SetRunDir records where the run's files are (<data_dir>/runs/<id>).
func (s *Store) SetRunDir(ctx context.Context, runID int64, dir string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET run_dir = ? WHERE id = ?`, dir, runID)
	if err != nil {
		return fmt.Errorf("set run %d dir: %w", runID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("set run %d dir: %w", runID, err)
	} else if n == 0 {
		return fmt.Errorf("set run %d dir: %w", runID, ErrNotFound)
	}
	return nil
}

// FinishRun ends a running run with out, replacing any problems an earlier
// attempt stored. It fails with ErrNotRunning if the run is not running
// (finished already, or re-queued under the worker's feet), so a stale
// worker cannot overwrite a newer attempt's result.
func (s *Store) FinishRun(ctx context.Context, runID int64, out Outcome) error {
	if !out.Status.Final() {
		return fmt.Errorf("finish run %d: %w: status %q", runID, ErrInvalid, out.Status)
	}
	for i, p := range out.Problems {
		if !p.Severity.Valid() {
			return fmt.Errorf("finish run %d: %w: problem %d severity %q", runID, ErrInvalid, i, p.Severity)
		}
	}
	summaries := out.Summaries
	if summaries == nil {
		summaries = []review.Summary{}
	}
	sumJSON, err := json.Marshal(summaries)
	if err != nil {
		return fmt.Errorf("finish run %d: encode summaries: %w", runID, err)
	}

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("finish run %d: begin: %w", runID, err)
	}
	defer tx.Rollback()

	res, err := tx.ExecContext(ctx, `UPDATE runs
		SET status = ?, skip_reason = ?, error = ?, problem_count = ?, finished_at = ?, summaries = ?
		WHERE id = ? AND status = ?`,
		string(out.Status), out.SkipReason, out.Error, len(out.Problems), formatTime(s.now()),
		string(sumJSON), runID, string(RunRunning))
	if err != nil {
		return fmt.Errorf("finish run %d: update: %w", runID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("finish run %d: update: %w", runID, err)
	}
	if n == 0 {
		var status string
		err := tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, runID).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("finish run %d: %w", runID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("finish run %d: read status: %w", runID, err)
		}
		return fmt.Errorf("finish run %d: %w (status %s)", runID, ErrNotRunning, status)
	}

	if err := replaceProblems(ctx, tx, runID, out.Problems); err != nil {
		return fmt.Errorf("finish run %d: %w", runID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("finish run %d: commit: %w", runID, err)
	}
	return nil
}

// EnqueueClaimed records a manual review request and returns its run
// already claimed (running, attempt 1), in one transaction. A foreground
// `aicr review` uses it so a daemon sharing the database can never take
// the run from under it.
func (s *Store) EnqueueClaimed(ctx context.Context, ev triggers.Event, receivedAt time.Time) (*Run, error) {
	if ev.Repo == "" || ev.Revision == "" || ev.VCS == "" {
		return nil, fmt.Errorf("enqueue: %w: vcs, repo and revision are required", ErrInvalid)
	}
	if receivedAt.IsZero() {
		receivedAt = s.now()
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("enqueue: encode event: %w", err)
	}
	at := formatTime(receivedAt)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("enqueue: begin: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO events
		(vcs, repo, revision, user, client, source, received_at, payload, duplicate_of)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
		ev.VCS, ev.Repo, ev.Revision, ev.User, ev.Client, string(triggers.SourceManual), at, string(payload))
	if err != nil {
		return nil, fmt.Errorf("enqueue: insert event: %w", err)
	}
	eventID, err := res.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("enqueue: event id: %w", err)
	}
	res, err = tx.ExecContext(ctx, `INSERT INTO runs
		(event_id, vcs, repo, revision, status, attempts, queued_at, started_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?)`,
		eventID, ev.VCS, ev.Repo, ev.Revision, string(RunRunning), at, at)
	if err != nil {
		return nil, fmt.Errorf("enqueue: insert run: %w", err)
	}
	runID, err := res.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("enqueue: run id: %w", err)
	}
	run, err := getRun(ctx, tx, runID)
	if err != nil {
		return nil, fmt.Errorf("enqueue: read run %d: %w", runID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("enqueue: commit: %w", err)
	}
	return run, nil
}

func replaceProblems(ctx context.Context, tx *sql.Tx, runID int64, problems []review.Problem) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM problems WHERE run_id = ?`, runID); err != nil {
		return fmt.Errorf("delete problems: %w", err)
	}
	for i, p := range problems {
		if _, err := tx.ExecContext(ctx, `INSERT INTO problems
			(run_id, seq, file, line, end_line, severity, category, message, suggestion, fingerprint)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			runID, i, p.File, p.Line, p.EndLine, string(p.Severity), p.Category, p.Message,
			p.Suggestion, p.Fingerprint); err != nil {
			return fmt.Errorf("insert problem %d: %w", i, err)
		}
	}
	return nil
}
