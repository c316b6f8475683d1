package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
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
//
// When Enqueue returns without error the receipt is on disk (fsynced).
// Concurrent calls are committed together (group commit, see
// groupCommitter), so the fsync is shared.
func (s *Store) Enqueue(ctx context.Context, ev triggers.Event, source triggers.Source, receivedAt time.Time) (Enqueued, error) {
	r, err := s.newEnqueueReq(ev, source, receivedAt)
	if err != nil {
		return Enqueued{}, err
	}
	var res Enqueued
	err = s.writes.submit(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		res, err = s.enqueueTx(ctx, tx, r)
		return err
	})
	if err != nil {
		return Enqueued{}, prefixErr("enqueue", err)
	}
	return res, nil
}

// ErrReplayed: Accept found the request's signature already accepted
// within the replay window; nothing was stored.
var ErrReplayed = errors.New("signature already accepted")

// Accept is the intake's write for a signed, valid event: it records the
// signature in the replay window (as SeenSignature does) and enqueues ev
// (as Enqueue does) in one savepoint of one group commit, so a request
// costs a share of one fsync instead of two of its own. A signature seen
// within window returns ErrReplayed and stores nothing. When Accept
// returns without error both are on disk.
func (s *Store) Accept(ctx context.Context, signature string, window time.Duration, ev triggers.Event, source triggers.Source, receivedAt time.Time) (Enqueued, error) {
	key, err := signatureKey(signature)
	if err != nil {
		return Enqueued{}, prefixErr("accept", err)
	}
	r, err := s.newEnqueueReq(ev, source, receivedAt)
	if err != nil {
		return Enqueued{}, err
	}
	var res Enqueued
	err = s.writes.submit(ctx, func(ctx context.Context, tx *sql.Tx) error {
		replayed, err := s.recordSignatureTx(ctx, tx, key, receivedAt, window)
		if err != nil {
			return err
		}
		if replayed {
			return ErrReplayed
		}
		res, err = s.enqueueTx(ctx, tx, r)
		return err
	})
	if err != nil {
		return Enqueued{}, prefixErr("accept", err)
	}
	return res, nil
}

// prefixErr names the operation on an error from the group commit,
// keeping it testable with errors.Is.
func prefixErr(op string, err error) error {
	if errors.Is(err, ErrReplayed) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

func (s *Store) newEnqueueReq(ev triggers.Event, source triggers.Source, receivedAt time.Time) (enqueueReq, error) {
	if ev.Repo == "" || ev.Revision == "" || ev.VCS == "" {
		return enqueueReq{}, fmt.Errorf("enqueue: %w: vcs, repo and revision are required", ErrInvalid)
	}
	if !validSource(source) {
		return enqueueReq{}, fmt.Errorf("enqueue: %w: source %q", ErrInvalid, source)
	}
	if receivedAt.IsZero() {
		receivedAt = s.now()
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return enqueueReq{}, fmt.Errorf("enqueue: encode event: %w", err)
	}
	return enqueueReq{ev: ev, source: source, at: formatTime(receivedAt), payload: string(payload)}, nil
}

type enqueueReq struct {
	ev      triggers.Event
	source  triggers.Source
	at      string
	payload string
}

// enqueueTx does one Enqueue inside tx, which the caller commits.
func (s *Store) enqueueTx(ctx context.Context, tx *sql.Tx, r enqueueReq) (Enqueued, error) {
	ev := r.ev
	args := []any{ev.VCS, ev.Repo, ev.Revision, ev.User, ev.Client, string(r.source), r.at, r.payload}

	var eventID int64
	if r.source == triggers.SourceManual {
		res, err := s.stmts.in(ctx, tx, s.stmts.insertEvent).ExecContext(ctx, append(args, nil)...) //nolint:sqlclosecheck // bound to tx by hotStmts.in: closed with the tx; the prepared statement lives with the store
		if err != nil {
			return Enqueued{}, fmt.Errorf("insert event: %w", err)
		}
		if eventID, err = res.LastInsertId(); err != nil {
			return Enqueued{}, fmt.Errorf("event id: %w", err)
		}
	} else {
		err := s.stmts.in(ctx, tx, s.stmts.insertEventOnce).QueryRowContext(ctx, append(args, nil)...).Scan(&eventID) //nolint:sqlclosecheck // bound to tx by hotStmts.in: closed with the tx; the prepared statement lives with the store
		if errors.Is(err, sql.ErrNoRows) {
			return s.enqueueDuplicate(ctx, tx, ev, args)
		}
		if err != nil {
			return Enqueued{}, fmt.Errorf("insert event: %w", err)
		}
	}

	res, err := s.stmts.in(ctx, tx, s.stmts.insertRun).ExecContext(ctx, //nolint:sqlclosecheck // bound to tx by hotStmts.in: closed with the tx; the prepared statement lives with the store
		eventID, ev.VCS, ev.Repo, ev.Revision, string(RunQueued), r.at)
	if err != nil {
		return Enqueued{}, fmt.Errorf("insert run: %w", err)
	}
	runID, err := res.LastInsertId()
	if err != nil {
		return Enqueued{}, fmt.Errorf("run id: %w", err)
	}
	return Enqueued{EventID: eventID, RunID: runID}, nil
}

func (s *Store) enqueueDuplicate(ctx context.Context, tx *sql.Tx, ev triggers.Event, args []any) (Enqueued, error) {
	var primary Enqueued
	err := s.stmts.in(ctx, tx, s.stmts.findPrimary).QueryRowContext(ctx, ev.Repo, ev.Revision).Scan(&primary.EventID, &primary.RunID) //nolint:sqlclosecheck // bound to tx by hotStmts.in: closed with the tx; the prepared statement lives with the store
	if err != nil {
		return Enqueued{}, fmt.Errorf("find primary event: %w", err)
	}
	if _, err := s.stmts.in(ctx, tx, s.stmts.insertEvent).ExecContext(ctx, append(args, primary.EventID)...); err != nil { //nolint:sqlclosecheck // bound to tx by hotStmts.in: closed with the tx; the prepared statement lives with the store
		return Enqueued{}, fmt.Errorf("insert duplicate event: %w", err)
	}
	// A revision whose run finally failed (the server was down for
	// longer than the retry window, a replica had not caught up) is worth
	// another try when something reports it again.
	requeued, err := requeueFailed(ctx, tx, primary.RunID)
	if err != nil {
		return Enqueued{}, err
	}
	primary.Duplicate, primary.Requeued = !requeued, requeued
	return primary, nil
}

// ClaimNext takes the oldest queued run (lowest id, i.e. first enqueued)
// of a repo that is not paused, marks it running, counts the attempt and returns it. It returns
// ErrNoWork when nothing is queued. The select and update happen in one
// write transaction, so concurrent claimers, in this process or another,
// never get the same run.
func (s *Store) ClaimNext(ctx context.Context) (*Run, error) {
	// On PostgreSQL the row lock of FOR UPDATE SKIP LOCKED is what keeps
	// two daemons off one run, so the claim needs no writer lock and
	// claimers never wait for each other.
	tx, err := s.db.BeginTx(withoutWriterLock(ctx), nil)
	if err != nil {
		return nil, fmt.Errorf("claim run: begin: %w", err)
	}
	defer tx.Rollback()

	var id int64
	now := s.now()
	err = tx.QueryRowContext(ctx, `UPDATE runs
		SET status = ?, attempts = attempts + 1, started_at = ?, finished_at = NULL,
			lease_owner = ?, lease_pid = ?, lease_host = ?, lease_until = ?
		WHERE id = (SELECT id FROM runs WHERE status = ? AND dry_run = 0 AND (not_before IS NULL OR not_before <= ?)`+pausedClause+` ORDER BY id LIMIT 1`+s.skipLocked()+`)
		RETURNING id`, string(RunRunning), formatTime(now), s.self.Owner, s.self.PID, s.self.Host, formatTime(now.Add(s.leaseTTL)),
		string(RunQueued), formatTime(now)).Scan(&id)
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

// RetryLater puts a running run back in the queue, not to be claimed
// before notBefore, keeping why it failed in its error. The pipeline uses
// it for failures worth retrying, such as an unreachable VCS server.
func (s *Store) RetryLater(ctx context.Context, runID int64, reason string, notBefore time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, error = ?, not_before = ?, started_at = NULL,
			lease_owner = '', lease_pid = 0, lease_host = '', lease_until = NULL, retry_since = COALESCE(retry_since, ?)
		WHERE id = ? AND status = ?`,
		string(RunQueued), reason, formatTime(notBefore), formatTime(s.now()), runID, string(RunRunning))
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

// SetRunDir records where the run's files are (<data_dir>/runs/<id>). A
// run retried after its directory was pruned has files again.
func (s *Store) SetRunDir(ctx context.Context, runID int64, dir string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET run_dir = ?, run_home = ?, run_dir_pruned_at = NULL, sources_dropped_at = NULL WHERE id = ?`, dir, s.home, runID)
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

// SetRunAuthor records the change's author as its fetch read it; audit
// list, show and export print it in place of the event's user (empty for
// every svn hook event). An empty author keeps the event's.
func (s *Store) SetRunAuthor(ctx context.Context, runID int64, author string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET author = ? WHERE id = ?`, author, runID); err != nil {
		return fmt.Errorf("record run %d author: %w", runID, err)
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
		SET status = ?, skip_reason = ?, error = ?, problem_count = ?, finished_at = ?, summaries = ?, lease_owner = '', lease_pid = 0, lease_host = '', lease_until = NULL
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
	return s.EnqueueClaimedWith(ctx, ev, receivedAt, ClaimOptions{})
}

// ClaimOptions qualify a run created already claimed.
type ClaimOptions struct {
	// DryRun marks the run so that, if its process dies, recovery fails it
	// instead of resuming it as a normal (publishing) run.
	DryRun bool
}

// EnqueueClaimedWith is EnqueueClaimed with options. The run is leased
// to this Store; its owner must renew the lease (RenewLease) while it
// works, or a daemon's recovery takes the run once the lease runs out.
func (s *Store) EnqueueClaimedWith(ctx context.Context, ev triggers.Event, receivedAt time.Time, opts ClaimOptions) (*Run, error) {
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
		(event_id, vcs, repo, revision, status, attempts, queued_at, started_at, dry_run,
		 lease_owner, lease_pid, lease_host, lease_until) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)`,
		eventID, ev.VCS, ev.Repo, ev.Revision, string(RunRunning), at, at, opts.DryRun,
		s.self.Owner, s.self.PID, s.self.Host, formatTime(s.now().Add(s.leaseTTL)))
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

// requeueFailed puts a failed run back in the queue as new: due now, a
// fresh retry window, its last error kept until the next attempt.
func requeueFailed(ctx context.Context, tx *sql.Tx, runID int64) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, not_before = NULL, retry_since = NULL,
			started_at = NULL, finished_at = NULL, lease_owner = '', lease_pid = 0, lease_host = '', lease_until = NULL
		WHERE id = ? AND status = ? AND dry_run = 0`, string(RunQueued), runID, string(RunFailed))
	if err != nil {
		return false, fmt.Errorf("requeue failed run %d: %w", runID, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// ErrNotFailed: RetryRun was asked to re-drive a run that has not failed.
var ErrNotFailed = errors.New("run has not failed")

// RetryRun re-queues one failed run (`aicr run retry ID`).
func (s *Store) RetryRun(ctx context.Context, runID int64) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("retry run %d: begin: %w", runID, err)
	}
	defer tx.Rollback()
	ok, err := requeueFailed(ctx, tx, runID)
	if err != nil {
		return err
	}
	if !ok {
		var status string
		var dry bool
		err := tx.QueryRowContext(ctx, `SELECT status, dry_run FROM runs WHERE id = ?`, runID).Scan(&status, &dry)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("retry run %d: %w", runID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("retry run %d: %w", runID, err)
		}
		if dry {
			return fmt.Errorf("retry run %d: %w: it was a dry run; run aicr review --dry-run again", runID, ErrInvalid)
		}
		return fmt.Errorf("retry run %d: %w (status %s)", runID, ErrNotFailed, status)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("retry run %d: commit: %w", runID, err)
	}
	return nil
}

// RetryFailed re-queues every failed run (not dry runs) that finished at
// or after since, optionally of one repo, and returns their ids.
func (s *Store) RetryFailed(ctx context.Context, since time.Time, repo string) ([]int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("retry failed runs: begin: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `UPDATE runs SET status = ?, not_before = NULL, retry_since = NULL,
			started_at = NULL, finished_at = NULL, lease_owner = '', lease_pid = 0, lease_host = '', lease_until = NULL
		WHERE status = ? AND dry_run = 0 AND finished_at >= ? AND (? = '' OR repo = ?)
		RETURNING id`, string(RunQueued), string(RunFailed), formatTime(since), repo, repo)
	var ids []int64
	if err := eachRow(rows, err, func(rows *sql.Rows) error {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		ids = append(ids, id)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("retry failed runs: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("retry failed runs: commit: %w", err)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}
