// Package session runs review sessions: a developer's review of a change
// before it is submitted (an svn working copy, a shelved Perforce change,
// a patch) or of a committed one, in rounds. Round 1 reviews the target;
// each reply starts the next round, which re-reads the target and gives
// the agent the previous findings and the reply. The same Service backs
// the MCP tools of `aicr mcp review` and the `aicr session` verbs, so a
// tool and its verb do exactly the same thing.
//
// Every round runs in a detached `aicr session run-round` process under a
// lease it renews, with its state in the audit database: a session
// survives the process that began it, a wait from another process
// continues it, and a round whose process died is reported failed
// (next: stopped, next_reason: reviewer_process_exit) rather than waited
// on for ever; review_reply then starts a fresh round.
package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/review"
)

// WaitDefaultEnv names the environment variable with review_wait's
// default max_wait_seconds.
const WaitDefaultEnv = "AICR_REVIEW_WAIT_DEFAULT_S"

// DefaultWait is review_wait's default when WaitDefaultEnv is not set:
// under the tool-call timeouts of common MCP clients.
const DefaultWait = 50 * time.Second

// MaxWait caps one review_wait call.
const MaxWait = 10 * time.Minute

// StartGrace is how long a new round may stay unclaimed by its worker
// process before it counts as abandoned.
const StartGrace = 2 * time.Minute

// LeaseTTL is how long a worker's claim on its round holds without a
// renewal; it renews at a third of it.
const LeaseTTL = 45 * time.Second

// Next values and reasons of review_wait (issue 16).
const (
	NextRunning = "running"
	NextRespond = "respond"
	NextDone    = "done"
	NextStopped = "stopped"

	ReasonReviewerRunning = "reviewer_running"
	ReasonOpenProblems    = "open_problems"
	ReasonNoProblems      = "no_problems"
	// ReasonProcessExit: the process running the round died.
	ReasonProcessExit = "reviewer_process_exit"
	// ReasonTimeout: the round ran past timeout_seconds.
	ReasonTimeout = "timeout"
	// ReasonFetchFailed: the target could not be read.
	ReasonFetchFailed = "fetch_failed"
	// ReasonReviewFailed: the agent failed (model error, no result).
	ReasonReviewFailed = "review_failed"
	// ReasonStartFailed: the round's process could not be started.
	ReasonStartFailed = "reviewer_start_failed"
	// ReasonSessionEnded: the session was ended while the round ran.
	ReasonSessionEnded = "session_ended"
)

// Verdicts review_end reports.
const (
	VerdictApproved         = "approved"
	VerdictChangesRequested = "changes_requested"
)

// Starter starts the process that runs one round and returns once it is
// started (not finished).
type Starter func(ctx context.Context, sessionID int64, round int) error

// Service is one process's handle on review sessions.
type Service struct {
	Config *config.Config
	Store  *audit.Store
	// Start runs a round in the background (DetachedStarter in aicr).
	Start Starter
	// WaitDefault is review_wait's default; zero reads WaitDefaultEnv.
	WaitDefault time.Duration
	// Poll is how often a wait re-reads the round (default 250ms).
	Poll   time.Duration
	Logger *slog.Logger
}

// BeginInput is review_begin's input.
type BeginInput struct {
	Target         string `json:"target"`
	Repo           string `json:"repo,omitempty"`
	Input          string `json:"input,omitempty"`
	Agent          string `json:"agent,omitempty"`
	Model          string `json:"model,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
}

// Started is what review_begin and review_reply return.
type Started struct {
	SessionID string `json:"session_id"`
	Round     int    `json:"round"`
	Status    string `json:"status"`
}

// WaitInput is review_wait's input; a nil MaxWaitSeconds is the default.
type WaitInput struct {
	SessionID      string `json:"session_id"`
	MaxWaitSeconds *int   `json:"max_wait_seconds,omitempty"`
}

// Waited is review_wait's result: where the last round stands and what
// the caller does next.
type Waited struct {
	SessionID      string            `json:"session_id"`
	Target         string            `json:"target"`
	Round          int               `json:"round"`
	Status         audit.RoundStatus `json:"status"`
	ElapsedSeconds int               `json:"elapsed_seconds"`
	// Problems, Summary and Skip are the validated result of a completed
	// round.
	Problems      []review.Problem `json:"problems,omitempty"`
	Summary       string           `json:"summary,omitempty"`
	Skip          string           `json:"skip,omitempty"`
	Error         string           `json:"error,omitempty"`
	FailureReason string           `json:"failure_reason,omitempty"`
	Next          string           `json:"next"`
	NextReason    string           `json:"next_reason"`
}

// ReplyInput is review_reply's input.
type ReplyInput struct {
	SessionID string `json:"session_id"`
	Input     string `json:"input"`
}

// EndInput is review_end's input.
type EndInput struct {
	SessionID string `json:"session_id"`
	// Publish sends the final round to the repo's channels.
	Publish bool `json:"publish,omitempty"`
}

// Ended is review_end's result.
type Ended struct {
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
	// Finalized: the last round completed, so the verdict stands on a
	// review.
	Finalized bool   `json:"finalized"`
	Verdict   string `json:"verdict,omitempty"`
	Rounds    int    `json:"rounds"`
	Published bool   `json:"published,omitempty"`
	// PublishedRunID is the audit run the publication is recorded as.
	PublishedRunID int64  `json:"published_run_id,omitempty"`
	PublishError   string `json:"publish_error,omitempty"`
}

const idPrefix = "rs-"

// FormatID is a session's id as tools and verbs show it.
func FormatID(id int64) string { return idPrefix + strconv.FormatInt(id, 10) }

// ParseID reads an id FormatID wrote (a bare number is accepted).
func ParseID(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(s), idPrefix), 10, 64)
	if err != nil || n < 1 {
		return 0, mcperr.New(mcperr.SessionInvalid, "pass the session_id review_begin returned (rs-N)", "session_id %q is not a session id", s)
	}
	return n, nil
}

func (s *Service) log() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// Begin starts a session and its round 1 in the background.
func (s *Service) Begin(ctx context.Context, in BeginInput) (Started, error) {
	t, err := ParseTarget(in.Target)
	if err != nil {
		return Started{}, err
	}
	repo, err := resolveRepo(s.Config, t, in.Repo)
	if err != nil {
		return Started{}, err
	}
	if repo == "" && t.Kind == TargetSVNWorkingCopy {
		repo = workingCopyRepo(ctx, s.Config, t.Arg)
	}
	if in.TimeoutSeconds < 0 {
		return Started{}, mcperr.New(mcperr.InvalidInput, "give a positive number of seconds, or leave it out", "timeout_seconds %d is negative", in.TimeoutSeconds)
	}
	if _, err := agentConfig(s.Config, in.Agent, in.Model); err != nil {
		return Started{}, err
	}
	id, err := s.Store.CreateSession(ctx, audit.ReviewSession{Target: t.String(), Repo: repo, Agent: in.Agent, Model: in.Model,
		TimeoutSeconds: in.TimeoutSeconds, ConfigPath: s.Config.Path}, in.Input, StartGrace)
	if err != nil {
		return Started{}, mcperr.New(mcperr.Internal, "check the data_dir and its database", "store the session: %v", err)
	}
	if err := s.start(ctx, id, 1); err != nil {
		return Started{}, err
	}
	s.log().Info("review session begun", "session", FormatID(id), "target", t.String(), "repo", repo)
	return Started{SessionID: FormatID(id), Round: 1, Status: string(audit.RoundRunning)}, nil
}

// start runs the round's process; a failure to start fails the round, so
// no wait hangs on it.
func (s *Service) start(ctx context.Context, id int64, round int) error {
	err := s.Start(ctx, id, round)
	if err == nil {
		return nil
	}
	_, _ = s.Store.FinishRound(context.WithoutCancel(ctx), id, round, audit.RoundOutcome{Status: audit.RoundFailed,
		Error: "start the reviewer: " + err.Error(), FailureReason: ReasonStartFailed})
	return mcperr.New(mcperr.Internal, "check that the aicr binary can be run ([daemon] aicr_binary) and the data_dir is writable", "start round %d of %s: %v", round, FormatID(id), err)
}

// agentConfig is the config's agent with a session's overrides, checked.
func agentConfig(cfg *config.Config, kind, model string) (*config.Config, error) {
	if kind == "" && model == "" {
		return cfg, nil
	}
	c := *cfg
	if kind != "" {
		c.Agent.Kind = kind
	}
	if model != "" {
		c.Agent.LLM.Model = model
	}
	if err := c.Agent.Validate(); err != nil {
		if kind != "" && c.Agent.Kind != cfg.Agent.Kind {
			return nil, mcperr.New(mcperr.ReviewerNotFound, "use an agent kind aicr knows (builtin, llm or an agent CLI) with its [agent.*] settings in "+cfg.Path, "agent %q: %v", kind, err)
		}
		return nil, mcperr.New(mcperr.ConfigInvalid, "fix [agent] in "+cfg.Path, "agent config: %v", err)
	}
	return &c, nil
}

// load reads a session by its shown id.
func (s *Service) load(ctx context.Context, sid string) (audit.ReviewSession, error) {
	id, err := ParseID(sid)
	if err != nil {
		return audit.ReviewSession{}, err
	}
	sess, err := s.Store.Session(ctx, id)
	if errors.Is(err, audit.ErrNotFound) {
		return sess, mcperr.New(mcperr.SessionInvalid, "begin a session with review_begin and pass the session_id it returns", "no session %s in %s", sid, s.Store.Path())
	}
	if err != nil {
		return sess, mcperr.New(mcperr.Internal, "check the data_dir and its database", "%v", err)
	}
	return sess, nil
}

// lastRound reads the session's last round, first failing it when the
// process running it is gone.
func (s *Service) lastRound(ctx context.Context, sess audit.ReviewSession) (audit.SessionRound, error) {
	r, err := s.Store.SessionRound(ctx, sess.ID, sess.Rounds)
	if err != nil {
		return r, mcperr.New(mcperr.Internal, "check the data_dir and its database", "%v", err)
	}
	if s.Store.RoundOwnerGone(r) {
		msg := fmt.Sprintf("the process running round %d stopped before finishing it", r.Round)
		if r.LeasePID > 0 {
			msg = fmt.Sprintf("the process running round %d (pid %d on %s) stopped before finishing it", r.Round, r.LeasePID, r.LeaseHost)
		}
		if _, err := s.Store.FinishRound(ctx, sess.ID, r.Round, audit.RoundOutcome{Status: audit.RoundFailed,
			Error: msg + "; review_reply starts a new round", FailureReason: ReasonProcessExit}); err != nil {
			return r, mcperr.New(mcperr.Internal, "check the data_dir and its database", "%v", err)
		}
		s.log().Warn("review session round abandoned", "session", FormatID(sess.ID), "round", r.Round, "pid", r.LeasePID)
		return s.Store.SessionRound(ctx, sess.ID, sess.Rounds)
	}
	return r, nil
}

// Wait waits up to max_wait_seconds for the session's last round to end
// and says what to do next.
func (s *Service) Wait(ctx context.Context, in WaitInput) (Waited, error) {
	limit := s.waitDefault()
	if in.MaxWaitSeconds != nil {
		if *in.MaxWaitSeconds < 0 {
			return Waited{}, mcperr.New(mcperr.InvalidInput, "give 0 or more seconds", "max_wait_seconds %d is negative", *in.MaxWaitSeconds)
		}
		limit = min(time.Duration(*in.MaxWaitSeconds)*time.Second, MaxWait)
	}
	sess, err := s.load(ctx, in.SessionID)
	if err != nil {
		return Waited{}, err
	}
	deadline := time.Now().Add(limit)
	poll := s.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	for {
		r, err := s.lastRound(ctx, sess)
		if err != nil {
			return Waited{}, err
		}
		left := time.Until(deadline)
		if r.Status != audit.RoundRunning || left <= 0 {
			return waited(sess, r), nil
		}
		select {
		case <-ctx.Done():
			return waited(sess, r), nil
		case <-time.After(min(poll, left)):
		}
	}
}

func (s *Service) waitDefault() time.Duration {
	if s.WaitDefault > 0 {
		return s.WaitDefault
	}
	return WaitDefaultFromEnv()
}

// WaitDefaultFromEnv reads WaitDefaultEnv (whole seconds); DefaultWait
// when it is unset or not a number.
func WaitDefaultFromEnv() time.Duration {
	if v := os.Getenv(WaitDefaultEnv); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return min(time.Duration(n)*time.Second, MaxWait)
		}
	}
	return DefaultWait
}

func waited(sess audit.ReviewSession, r audit.SessionRound) Waited {
	w := Waited{SessionID: FormatID(sess.ID), Target: sess.Target, Round: r.Round, Status: r.Status,
		Error: r.Error, FailureReason: r.FailureReason}
	end := time.Now()
	if !r.FinishedAt.IsZero() {
		end = r.FinishedAt
	}
	w.ElapsedSeconds = int(end.Sub(r.StartedAt).Seconds())
	if r.Result != nil {
		w.Problems = r.Result.Problems
		var sums []string
		for _, sm := range r.Result.Summaries {
			if sm.Title != "" {
				sums = append(sums, "## "+sm.Title+"\n\n"+sm.Markdown)
			} else {
				sums = append(sums, sm.Markdown)
			}
		}
		w.Summary = strings.Join(sums, "\n\n")
		if r.Result.Skip != nil {
			w.Skip = r.Result.Skip.Reason
		}
	}
	w.Next, w.NextReason = next(sess, r)
	return w
}

// next is what the caller does after a wait, as issue 16 lists it. An
// ended session takes no reply and needs no end, whatever its last round
// found: stopped / session_ended, so a wait never sends the caller to a
// review_reply that is refused with SESSION_INVALID.
func next(sess audit.ReviewSession, r audit.SessionRound) (string, string) {
	if sess.Status == audit.SessionEnded {
		return NextStopped, ReasonSessionEnded
	}
	switch r.Status {
	case audit.RoundRunning:
		return NextRunning, ReasonReviewerRunning
	case audit.RoundCompleted:
		if r.Result != nil && len(r.Result.Problems) > 0 {
			return NextRespond, ReasonOpenProblems
		}
		return NextDone, ReasonNoProblems
	case audit.RoundTimeout:
		return NextStopped, ReasonTimeout
	}
	reason := r.FailureReason
	if reason == "" {
		reason = ReasonReviewFailed
	}
	return NextStopped, reason
}

// Reply starts the next round with the developer's reply; the round
// re-reads the target and sees the previous findings.
func (s *Service) Reply(ctx context.Context, in ReplyInput) (Started, error) {
	if strings.TrimSpace(in.Input) == "" {
		return Started{}, mcperr.New(mcperr.InvalidInput, "say what changed or why a finding is wrong", "input is empty")
	}
	sess, err := s.load(ctx, in.SessionID)
	if err != nil {
		return Started{}, err
	}
	if sess.Status == audit.SessionEnded {
		return Started{}, mcperr.New(mcperr.SessionInvalid, "begin a new session with review_begin", "session %s has ended", in.SessionID)
	}
	// Fails a round whose process died, so a reply can start over.
	if _, err := s.lastRound(ctx, sess); err != nil {
		return Started{}, err
	}
	round, err := s.Store.StartRound(ctx, sess.ID, in.Input, StartGrace)
	switch {
	case errors.Is(err, audit.ErrRoundRunning):
		return Started{}, mcperr.New(mcperr.RoundStillRunning, "call review_wait until the round ends, then reply", "round %d of %s is still running", sess.Rounds, in.SessionID)
	case errors.Is(err, audit.ErrSessionEnded):
		return Started{}, mcperr.New(mcperr.SessionInvalid, "begin a new session with review_begin", "session %s has ended", in.SessionID)
	case err != nil:
		return Started{}, mcperr.New(mcperr.Internal, "check the data_dir and its database", "%v", err)
	}
	if err := s.start(ctx, sess.ID, round); err != nil {
		return Started{}, err
	}
	return Started{SessionID: FormatID(sess.ID), Round: round, Status: string(audit.RoundRunning)}, nil
}

// End ends the session: a running round is stopped, and the verdict
// comes from the last round when it completed.
func (s *Service) End(ctx context.Context, in EndInput) (Ended, error) {
	sess, err := s.load(ctx, in.SessionID)
	if err != nil {
		return Ended{}, err
	}
	r, err := s.lastRound(ctx, sess)
	if err != nil {
		return Ended{}, err
	}
	out := Ended{SessionID: FormatID(sess.ID), Status: string(audit.SessionEnded), Rounds: sess.Rounds}
	if sess.Status == audit.SessionEnded {
		// Ending again is harmless; a publication asked for now is tried.
		out.Finalized, out.Verdict, out.PublishedRunID = sess.Finalized, sess.Verdict, sess.PublishedRunID
		out.Published = sess.PublishedRunID != 0
		if in.Publish && !out.Published {
			s.publishEnded(ctx, sess, r, &out)
		}
		return out, nil
	}
	if r.Status == audit.RoundRunning {
		if _, err := s.Store.FinishRound(ctx, sess.ID, r.Round, audit.RoundOutcome{Status: audit.RoundFailed,
			Error: "the session was ended while this round ran", FailureReason: ReasonSessionEnded}); err != nil {
			return Ended{}, mcperr.New(mcperr.Internal, "check the data_dir and its database", "%v", err)
		}
		stopWorker(r, s.Store.Self().Host)
	}
	if r.Status == audit.RoundCompleted && r.Result != nil {
		out.Finalized = true
		out.Verdict = VerdictApproved
		if len(r.Result.Problems) > 0 {
			out.Verdict = VerdictChangesRequested
		}
	}
	if _, err := s.Store.EndSession(ctx, sess.ID, out.Finalized, out.Verdict); err != nil {
		return Ended{}, mcperr.New(mcperr.Internal, "check the data_dir and its database", "%v", err)
	}
	if in.Publish {
		s.publishEnded(ctx, sess, r, &out)
	}
	return out, nil
}

// publishEnded publishes the last round of an ended session into out.
func (s *Service) publishEnded(ctx context.Context, sess audit.ReviewSession, last audit.SessionRound, out *Ended) {
	if !out.Finalized {
		out.PublishError = "nothing to publish: the last round did not complete"
		return
	}
	runID, err := s.publish(ctx, sess, last)
	if err != nil {
		out.PublishError = err.Error()
		return
	}
	out.Published, out.PublishedRunID = true, runID
}
