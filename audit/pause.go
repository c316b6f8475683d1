package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"
)

// RepoPause is a repo an operator paused: its events are recorded and its
// runs queued, but no worker claims them (ClaimNext skips the repo) until
// ResumeRepo.
type RepoPause struct {
	Repo     string    `json:"repo"`
	PausedAt time.Time `json:"paused_at"`
	PausedBy string    `json:"paused_by,omitempty"`
	Reason   string    `json:"reason,omitempty"`
}

// pausedClause keeps a claim off the runs of paused repos; ClaimNext's
// pick adds it, so a pause takes effect at the next claim of every
// process sharing the database.
const pausedClause = ` AND repo NOT IN (SELECT repo FROM repo_pauses)`

// PauseRepo pauses repo. Pausing a paused repo keeps the first pause (its
// time, who and why) and reports changed false.
func (s *Store) PauseRepo(ctx context.Context, repo, by, reason string) (p RepoPause, changed bool, err error) {
	if repo == "" {
		return RepoPause{}, false, fmt.Errorf("pause repo: %w: repo is required", ErrInvalid)
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO repo_pauses (repo, paused_at, paused_by, reason) VALUES (?, ?, ?, ?)
		ON CONFLICT (repo) DO NOTHING`, repo, formatTime(s.now()), by, reason)
	if err != nil {
		return RepoPause{}, false, fmt.Errorf("pause repo %s: %w", repo, err)
	}
	n, _ := res.RowsAffected()
	p, _, err = s.RepoPaused(ctx, repo)
	return p, n > 0, err
}

// ResumeRepo lifts repo's pause; changed is false when it was not paused.
// The held runs are then claimed in their queue order.
func (s *Store) ResumeRepo(ctx context.Context, repo string) (changed bool, err error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM repo_pauses WHERE repo = ?`, repo)
	if err != nil {
		return false, fmt.Errorf("resume repo %s: %w", repo, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// RepoPaused returns repo's pause; ok is false when it is not paused.
func (s *Store) RepoPaused(ctx context.Context, repo string) (p RepoPause, ok bool, err error) {
	return repoPaused(ctx, s.db, repo)
}

func repoPaused(ctx context.Context, q querier, repo string) (p RepoPause, ok bool, err error) {
	var at string
	err = q.QueryRowContext(ctx, `SELECT repo, paused_at, paused_by, reason FROM repo_pauses WHERE repo = ?`, repo).
		Scan(&p.Repo, &at, &p.PausedBy, &p.Reason)
	if errors.Is(err, sql.ErrNoRows) {
		return RepoPause{}, false, nil
	}
	if err != nil {
		return RepoPause{}, false, fmt.Errorf("read pause of %s: %w", repo, err)
	}
	if p.PausedAt, err = parseTime(at); err != nil {
		return RepoPause{}, false, err
	}
	return p, true, nil
}

// RepoPauses lists the paused repos by name.
func (s *Store) RepoPauses(ctx context.Context) ([]RepoPause, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT repo, paused_at, paused_by, reason FROM repo_pauses ORDER BY repo`)
	if err != nil {
		return nil, fmt.Errorf("list paused repos: %w", err)
	}
	defer rows.Close()
	var out []RepoPause
	for rows.Next() {
		var (
			p  RepoPause
			at string
		)
		if err := rows.Scan(&p.Repo, &at, &p.PausedBy, &p.Reason); err != nil {
			return nil, fmt.Errorf("list paused repos: %w", err)
		}
		if p.PausedAt, err = parseTime(at); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// markPaused sets RepoPaused on the runs of paused repos.
func (s *Store) markPaused(ctx context.Context, runs []RunSummary) error {
	pauses, err := s.RepoPauses(ctx)
	if err != nil || len(pauses) == 0 {
		return err
	}
	paused := make(map[string]bool, len(pauses))
	for _, p := range pauses {
		paused[p.Repo] = true
	}
	for i := range runs {
		runs[i].RepoPaused = paused[runs[i].Repo]
	}
	return nil
}

// QueueRepo is one repo's part of the queue.
type QueueRepo struct {
	Repo string `json:"repo"`
	// Queued counts runs waiting to be claimed, Retrying among them
	// those waiting for their next attempt after a transient failure.
	Queued   int `json:"queued"`
	Retrying int `json:"retrying"`
	Running  int `json:"running"`
	// OldestQueuedAt is when the oldest queued run was queued.
	OldestQueuedAt time.Time `json:"oldest_queued_at,omitzero"`
	// Paused is set while the repo is paused: its queued runs are held.
	Paused *RepoPause `json:"paused,omitempty"`
}

// QueueStatus is the queue as `aicr queue status` shows it.
type QueueStatus struct {
	Queued   int `json:"queued"`
	Retrying int `json:"retrying"`
	Running  int `json:"running"`
	// Held counts queued runs of paused repos.
	Held           int         `json:"held"`
	OldestQueuedAt time.Time   `json:"oldest_queued_at,omitzero"`
	Repos          []QueueRepo `json:"repos"`
	// PausedRepos lists every paused repo, with or without queued runs.
	PausedRepos []RepoPause `json:"paused_repos"`
}

// Queue returns the queue by repo (repos with queued or running runs, or
// paused), read from one snapshot. Dry runs are not queue entries.
func (s *Store) Queue(ctx context.Context) (QueueStatus, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return QueueStatus{}, fmt.Errorf("queue status: begin: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT repo,
			SUM(CASE WHEN status = 'queued' THEN 1 ELSE 0 END),
			SUM(CASE WHEN status = 'queued' AND attempts > 0 AND error <> '' THEN 1 ELSE 0 END),
			SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END),
			MIN(CASE WHEN status = 'queued' THEN queued_at END)
		FROM runs WHERE status IN ('queued', 'running') AND dry_run = 0 GROUP BY repo`)
	byRepo := map[string]*QueueRepo{}
	if err := eachRow(rows, err, func(rows *sql.Rows) error {
		var (
			q      QueueRepo
			oldest sql.NullString
			err    error
		)
		if err := rows.Scan(&q.Repo, &q.Queued, &q.Retrying, &q.Running, &oldest); err != nil {
			return err
		}
		if q.OldestQueuedAt, err = parseNullTime(oldest); err != nil {
			return err
		}
		byRepo[q.Repo] = &q
		return nil
	}); err != nil {
		return QueueStatus{}, fmt.Errorf("queue status: %w", err)
	}
	st := QueueStatus{Repos: []QueueRepo{}, PausedRepos: []RepoPause{}}
	prows, err := tx.QueryContext(ctx, `SELECT repo, paused_at, paused_by, reason FROM repo_pauses ORDER BY repo`)
	if err := eachRow(prows, err, func(prows *sql.Rows) error {
		var (
			p   RepoPause
			at  string
			err error
		)
		if err := prows.Scan(&p.Repo, &at, &p.PausedBy, &p.Reason); err != nil {
			return err
		}
		if p.PausedAt, err = parseTime(at); err != nil {
			return err
		}
		st.PausedRepos = append(st.PausedRepos, p)
		q := byRepo[p.Repo]
		if q == nil {
			q = &QueueRepo{Repo: p.Repo}
			byRepo[p.Repo] = q
		}
		q.Paused = &p
		return nil
	}); err != nil {
		return QueueStatus{}, fmt.Errorf("queue status: %w", err)
	}
	for _, q := range byRepo {
		st.Repos = append(st.Repos, *q)
		st.Queued += q.Queued
		st.Retrying += q.Retrying
		st.Running += q.Running
		if q.Paused != nil {
			st.Held += q.Queued
		}
		if !q.OldestQueuedAt.IsZero() && (st.OldestQueuedAt.IsZero() || q.OldestQueuedAt.Before(st.OldestQueuedAt)) {
			st.OldestQueuedAt = q.OldestQueuedAt
		}
	}
	sort.Slice(st.Repos, func(i, j int) bool { return st.Repos[i].Repo < st.Repos[j].Repo })
	return st, nil
}

// SkipCancelled is the skip reason of a run an operator cancelled.
const SkipCancelled = "cancelled"

// ErrNotQueued: CancelRun was asked to cancel a run that is not queued.
var ErrNotQueued = errors.New("run is not queued")

// CancelRun ends a queued run (waiting, retrying or held by a pause) as
// skipped with reason "cancelled", keeping why in its error. A running
// run belongs to the worker that claimed it and is refused with
// ErrNotQueued, as is a finished one.
func (s *Store) CancelRun(ctx context.Context, runID int64, why string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, skip_reason = ?, error = ?, finished_at = ?, not_before = NULL
		WHERE id = ? AND status = ? AND dry_run = 0`,
		string(RunSkipped), SkipCancelled, why, formatTime(s.now()), runID, string(RunQueued))
	if err != nil {
		return fmt.Errorf("cancel run %d: %w", runID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var status string
	err = s.db.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, runID).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("cancel run %d: %w", runID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("cancel run %d: %w", runID, err)
	}
	return fmt.Errorf("cancel run %d: %w (status %s)", runID, ErrNotQueued, status)
}

// FailedSince lists, oldest first, the failed runs (not dry runs) that
// finished at or after since, of repo when it is not empty: what
// RetryFailed would queue again.
func (s *Store) FailedSince(ctx context.Context, since time.Time, repo string) ([]RunSummary, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+runColumns+runFrom+`
		WHERE r.status = ? AND r.dry_run = 0 AND r.finished_at >= ? AND (? = '' OR r.repo = ?) ORDER BY r.id`,
		string(RunFailed), formatTime(since), repo, repo)
	if err != nil {
		return nil, fmt.Errorf("list failed runs: %w", err)
	}
	defer rows.Close()
	var runs []RunSummary
	for rows.Next() {
		r, err := scanRunSummary(rows)
		if err != nil {
			return nil, fmt.Errorf("list failed runs: %w", err)
		}
		runs = append(runs, r)
	}
	return runs, rows.Err()
}
