package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/aicr-dev/aicr/review"
)

// Review sessions (package session) keep their state here, so a round
// started by one process is waited on, answered and ended from another.

// SessionStatus is whether a review session takes more rounds.
type SessionStatus string

const (
	SessionActive SessionStatus = "active"
	SessionEnded  SessionStatus = "ended"
)

// RoundStatus is where one round of a review session stands.
type RoundStatus string

const (
	RoundRunning   RoundStatus = "running"
	RoundCompleted RoundStatus = "completed"
	RoundFailed    RoundStatus = "failed"
	RoundTimeout   RoundStatus = "timeout"
)

// ErrRoundRunning: a new round was asked for while the last one runs.
var ErrRoundRunning = errors.New("the session's last round is still running")

// ErrSessionEnded: the session was ended and takes no more rounds.
var ErrSessionEnded = errors.New("the session has ended")

// ReviewSession is one review session and its settings, kept for every
// round.
type ReviewSession struct {
	ID     int64  `json:"id"`
	Target string `json:"target"`
	Repo   string `json:"repo,omitempty"`
	Agent  string `json:"agent,omitempty"`
	Model  string `json:"model,omitempty"`
	// TimeoutSeconds bounds each round's review; 0 is the agent's own.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// ConfigPath is the config the session was begun with; every round's
	// worker loads it.
	ConfigPath     string        `json:"config_path"`
	Status         SessionStatus `json:"status"`
	CreatedAt      time.Time     `json:"created_at"`
	EndedAt        time.Time     `json:"ended_at,omitzero"`
	Finalized      bool          `json:"finalized"`
	Verdict        string        `json:"verdict,omitempty"`
	PublishedRunID int64         `json:"published_run_id,omitempty"`
	// Rounds is the number of the last round.
	Rounds int `json:"rounds"`
}

// SessionRound is one round: the reply it answers, who runs it, and what
// it came to.
type SessionRound struct {
	SessionID     int64          `json:"session_id"`
	Round         int            `json:"round"`
	Status        RoundStatus    `json:"status"`
	Input         string         `json:"input,omitempty"`
	StartedAt     time.Time      `json:"started_at"`
	FinishedAt    time.Time      `json:"finished_at,omitzero"`
	RunDir        string         `json:"run_dir,omitempty"`
	Result        *review.Result `json:"result,omitempty"`
	Error         string         `json:"error,omitempty"`
	FailureReason string         `json:"failure_reason,omitempty"`
	LeasePID      int            `json:"lease_pid,omitempty"`
	LeaseHost     string         `json:"lease_host,omitempty"`
	LeaseUntil    time.Time      `json:"lease_until,omitzero"`
	Agent         string         `json:"agent,omitempty"`
	Model         string         `json:"model,omitempty"`
	Passes        int            `json:"passes,omitempty"`
	InputTokens   int            `json:"input_tokens,omitempty"`
	OutputTokens  int            `json:"output_tokens,omitempty"`
}

// RoundOutcome is what a finished round records.
type RoundOutcome struct {
	Status        RoundStatus
	Result        *review.Result
	Error         string
	FailureReason string
	Agent, Model  string
	Passes        int
	InputTokens   int
	OutputTokens  int
}

// CreateSession stores a new active session with its running round 1
// (input is round 1's text); startGrace is how long the round may go
// unclaimed before it counts as abandoned.
func (s *Store) CreateSession(ctx context.Context, sess ReviewSession, input string, startGrace time.Duration) (int64, error) {
	if sess.Target == "" {
		return 0, fmt.Errorf("create session: empty target: %w", ErrInvalid)
	}
	now := s.now()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("create session: %w", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, `INSERT INTO review_sessions (target, repo, agent, model, timeout_s, config_path, status, created_at)
		VALUES (?, ?, ?, ?, ?, ?, 'active', ?) RETURNING id`,
		sess.Target, sess.Repo, sess.Agent, sess.Model, sess.TimeoutSeconds, sess.ConfigPath, formatTime(now)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("create session: %w", err)
	}
	if err := insertRound(ctx, tx, id, 1, input, now, startGrace); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("create session: %w", err)
	}
	return id, nil
}

func insertRound(ctx context.Context, tx *sql.Tx, id int64, round int, input string, now time.Time, startGrace time.Duration) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO review_session_rounds (session_id, round, status, input, started_at, lease_until)
		VALUES (?, ?, 'running', ?, ?, ?)`, id, round, input, formatTime(now), formatTime(now.Add(startGrace)))
	if err != nil {
		return fmt.Errorf("start round %d of session %d: %w", round, id, err)
	}
	return nil
}

// StartRound adds the next round of an active session whose last round
// has finished: ErrRoundRunning while it runs, ErrSessionEnded after
// EndSession. It returns the new round's number.
func (s *Store) StartRound(ctx context.Context, id int64, input string, startGrace time.Duration) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("start round: %w", err)
	}
	defer tx.Rollback()
	sess, err := session(ctx, tx, id)
	if err != nil {
		return 0, err
	}
	if sess.Status == SessionEnded {
		return 0, fmt.Errorf("session %d: %w", id, ErrSessionEnded)
	}
	last, err := sessionRound(ctx, tx, id, sess.Rounds)
	if err != nil {
		return 0, err
	}
	if last.Status == RoundRunning {
		return 0, fmt.Errorf("session %d round %d: %w", id, last.Round, ErrRoundRunning)
	}
	next := sess.Rounds + 1
	if err := insertRound(ctx, tx, id, next, input, s.now(), startGrace); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("start round: %w", err)
	}
	return next, nil
}

// Session reads one session; ErrNotFound when there is none.
func (s *Store) Session(ctx context.Context, id int64) (ReviewSession, error) {
	return session(ctx, s.db, id)
}

func session(ctx context.Context, q querier, id int64) (ReviewSession, error) {
	var (
		sess      ReviewSession
		created   string
		ended     sql.NullString
		finalized bool
		published sql.NullInt64
	)
	err := q.QueryRowContext(ctx, `SELECT id, target, repo, agent, model, timeout_s, config_path, status, created_at, ended_at,
			finalized, verdict, published_run_id,
			(SELECT COALESCE(MAX(round), 0) FROM review_session_rounds WHERE session_id = review_sessions.id)
		FROM review_sessions WHERE id = ?`, id).Scan(&sess.ID, &sess.Target, &sess.Repo, &sess.Agent, &sess.Model,
		&sess.TimeoutSeconds, &sess.ConfigPath, &sess.Status, &created, &ended, &finalized, &sess.Verdict, &published, &sess.Rounds)
	if errors.Is(err, sql.ErrNoRows) {
		return sess, fmt.Errorf("session %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return sess, fmt.Errorf("read session %d: %w", id, err)
	}
	sess.Finalized, sess.PublishedRunID = finalized, published.Int64
	if sess.CreatedAt, err = parseTime(created); err != nil {
		return sess, err
	}
	if sess.EndedAt, err = parseNullTime(ended); err != nil {
		return sess, err
	}
	return sess, nil
}

// SessionRound reads one round; ErrNotFound when there is none.
func (s *Store) SessionRound(ctx context.Context, id int64, round int) (SessionRound, error) {
	return sessionRound(ctx, s.db, id, round)
}

func sessionRound(ctx context.Context, q querier, id int64, round int) (SessionRound, error) {
	var (
		r               SessionRound
		started         string
		finished, until sql.NullString
		result          string
	)
	err := q.QueryRowContext(ctx, `SELECT session_id, round, status, input, started_at, finished_at, run_dir, result, error,
			failure_reason, lease_pid, lease_host, lease_until, agent, agent_model, agent_passes, input_tokens, output_tokens
		FROM review_session_rounds WHERE session_id = ? AND round = ?`, id, round).Scan(&r.SessionID, &r.Round, &r.Status,
		&r.Input, &started, &finished, &r.RunDir, &result, &r.Error, &r.FailureReason, &r.LeasePID, &r.LeaseHost, &until,
		&r.Agent, &r.Model, &r.Passes, &r.InputTokens, &r.OutputTokens)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("session %d round %d: %w", id, round, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("read session %d round %d: %w", id, round, err)
	}
	if r.StartedAt, err = parseTime(started); err != nil {
		return r, err
	}
	if r.FinishedAt, err = parseNullTime(finished); err != nil {
		return r, err
	}
	if r.LeaseUntil, err = parseNullTime(until); err != nil {
		return r, err
	}
	if result != "" {
		r.Result = &review.Result{}
		if err := json.Unmarshal([]byte(result), r.Result); err != nil {
			return r, fmt.Errorf("read session %d round %d: result: %w", id, round, err)
		}
	}
	return r, nil
}

// ClaimRound makes this process the runner of a running round for ttl;
// false when the round is no longer running or another live process
// holds it.
func (s *Store) ClaimRound(ctx context.Context, id int64, round int, ttl time.Duration) (bool, error) {
	now := s.now()
	res, err := s.db.ExecContext(ctx, `UPDATE review_session_rounds SET lease_pid = ?, lease_host = ?, lease_until = ?
		WHERE session_id = ? AND round = ? AND status = 'running' AND (lease_pid = 0 OR lease_until < ?)`,
		os.Getpid(), s.self.Host, formatTime(now.Add(ttl)), id, round, formatTime(now))
	if err != nil {
		return false, fmt.Errorf("claim session %d round %d: %w", id, round, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// RenewRound extends this process's lease on a running round; false when
// the round is no longer its (ended, or declared dead).
func (s *Store) RenewRound(ctx context.Context, id int64, round int, ttl time.Duration) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE review_session_rounds SET lease_until = ?
		WHERE session_id = ? AND round = ? AND status = 'running' AND lease_pid = ? AND lease_host = ?`,
		formatTime(s.now().Add(ttl)), id, round, os.Getpid(), s.self.Host)
	if err != nil {
		return false, fmt.Errorf("renew session %d round %d: %w", id, round, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// SetRoundDir records where a round's run directory is.
func (s *Store) SetRoundDir(ctx context.Context, id int64, round int, dir string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE review_session_rounds SET run_dir = ? WHERE session_id = ? AND round = ?`, dir, id, round)
	if err != nil {
		return fmt.Errorf("record session %d round %d dir: %w", id, round, err)
	}
	return nil
}

// FinishRound records a running round's outcome; false when the round
// was no longer running (ended or declared dead meanwhile), in which case
// nothing is written.
func (s *Store) FinishRound(ctx context.Context, id int64, round int, out RoundOutcome) (bool, error) {
	if out.Status == RoundRunning || out.Status == "" {
		return false, fmt.Errorf("finish session %d round %d: status %q: %w", id, round, out.Status, ErrInvalid)
	}
	result := ""
	if out.Result != nil {
		data, err := json.Marshal(out.Result)
		if err != nil {
			return false, fmt.Errorf("finish session %d round %d: %w", id, round, err)
		}
		result = string(data)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE review_session_rounds SET status = ?, finished_at = ?, result = ?, error = ?,
			failure_reason = ?, agent = ?, agent_model = ?, agent_passes = ?, input_tokens = ?, output_tokens = ?
		WHERE session_id = ? AND round = ? AND status = 'running'`,
		out.Status, formatTime(s.now()), result, out.Error, out.FailureReason, out.Agent, out.Model, out.Passes,
		out.InputTokens, out.OutputTokens, id, round)
	if err != nil {
		return false, fmt.Errorf("finish session %d round %d: %w", id, round, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// RoundOwnerGone reports whether the process holding a running round is
// known to be gone: its lease ran out, or it ran on this host and no
// such process exists.
func (s *Store) RoundOwnerGone(r SessionRound) bool {
	if r.Status != RoundRunning {
		return false
	}
	if !r.LeaseUntil.IsZero() && s.now().After(r.LeaseUntil) {
		return true
	}
	return r.LeasePID > 0 && r.LeaseHost == s.self.Host && !workerAlive(r.LeasePID)
}

// workerAlive is processAlive that also counts a zombie as dead: a
// session worker is detached, and where nothing reaps orphans (PID 1 of
// a container) a killed one stays a zombie that kill(0) still finds.
func workerAlive(pid int) bool {
	if data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if i := bytes.LastIndexByte(data, ')'); i >= 0 && i+2 < len(data) && data[i+2] == 'Z' {
			return false
		}
	}
	return processAlive(pid)
}

// EndSession marks an active session ended with what it came to; false
// when it had already ended.
func (s *Store) EndSession(ctx context.Context, id int64, finalized bool, verdict string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE review_sessions SET status = 'ended', ended_at = ?, finalized = ?, verdict = ?
		WHERE id = ? AND status = 'active'`, formatTime(s.now()), finalized, verdict, id)
	if err != nil {
		return false, fmt.Errorf("end session %d: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// SetSessionPublished records the run a session's final round was
// published as.
func (s *Store) SetSessionPublished(ctx context.Context, id, runID int64) error {
	_, err := s.db.ExecContext(ctx, `UPDATE review_sessions SET published_run_id = ? WHERE id = ?`, runID, id)
	if err != nil {
		return fmt.Errorf("record session %d publication: %w", id, err)
	}
	return nil
}
