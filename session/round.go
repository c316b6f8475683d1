package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
)

// RoundDir is where a round's run directory lives: beside the daemon's
// runs/, under sessions/<id>/round-<n>.
func RoundDir(cfg *config.Config, id int64, round int) string {
	return filepath.Join(cfg.Daemon.DataDir, "sessions", strconv.FormatInt(id, 10), "round-"+strconv.Itoa(round))
}

// RunRound runs one round in this process (`aicr session run-round`):
// it claims the round, renews the claim while it works, reads the
// target, runs the configured agent on the review ladder and records the
// outcome. A round that is no longer running (ended, or declared dead)
// is left alone.
func RunRound(ctx context.Context, cfg *config.Config, store *audit.Store, id int64, round int, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("session", FormatID(id), "round", round)
	ok, err := store.ClaimRound(ctx, id, round, LeaseTTL)
	if err != nil {
		return err
	}
	if !ok {
		log.Info("round is not waiting for a reviewer; nothing to do")
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go holdRound(ctx, cancel, store, id, round, log)

	out := runRound(ctx, cfg, store, id, round, log)
	done, err := store.FinishRound(context.WithoutCancel(ctx), id, round, out)
	if err != nil {
		return err
	}
	if !done {
		log.Info("round was ended meanwhile; its outcome is not recorded", "status", out.Status)
	} else {
		log.Info("round finished", "status", out.Status, "reason", out.FailureReason)
	}
	return nil
}

var errLeaseLost = errors.New("the round is no longer this process's (ended, or declared dead)")

// holdRound renews the lease until ctx ends; a round taken away (ended)
// cancels the work.
func holdRound(ctx context.Context, cancel context.CancelCauseFunc, store *audit.Store, id int64, round int, log *slog.Logger) {
	t := time.NewTicker(LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ok, err := store.RenewRound(ctx, id, round, LeaseTTL)
		if err != nil {
			log.Warn("renew round lease", "err", err)
			continue
		}
		if !ok {
			cancel(errLeaseLost)
			return
		}
	}
}

func runRound(ctx context.Context, cfg *config.Config, store *audit.Store, id int64, round int, log *slog.Logger) audit.RoundOutcome {
	failed := func(reason string, err error) audit.RoundOutcome {
		return audit.RoundOutcome{Status: audit.RoundFailed, Error: err.Error(), FailureReason: reason}
	}
	sess, err := store.Session(ctx, id)
	if err != nil {
		return failed(ReasonReviewFailed, err)
	}
	cur, err := store.SessionRound(ctx, id, round)
	if err != nil {
		return failed(ReasonReviewFailed, err)
	}
	c, err := agentConfig(cfg, sess.Agent, sess.Model)
	if err != nil {
		return failed(ReasonReviewFailed, err)
	}
	parts, err := daemon.Build(c, daemon.Deps{Store: store, Logger: log}, daemon.BuildOptions{NoChannels: true})
	if err != nil {
		return failed(ReasonReviewFailed, fmt.Errorf("build the reviewer: %w", err))
	}
	layout := rundir.New(RoundDir(cfg, id, round))
	if err := os.RemoveAll(layout.Dir()); err != nil {
		return failed(ReasonReviewFailed, fmt.Errorf("clean round dir: %w", err))
	}
	if err := layout.Create(); err != nil {
		return failed(ReasonReviewFailed, err)
	}
	if err := store.SetRoundDir(ctx, id, round, layout.Dir()); err != nil {
		return failed(ReasonReviewFailed, err)
	}
	if sess.TimeoutSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(sess.TimeoutSeconds)*time.Second)
		defer cancel()
	}
	t, err := ParseTarget(sess.Target)
	if err != nil {
		return failed(ReasonFetchFailed, err)
	}
	f, err := t.fetch(ctx, parts.Adapters, sess.Repo, layout)
	if err != nil {
		return interrupted(ctx, failed(ReasonFetchFailed, err))
	}
	f.change.Repo = sess.Repo
	notes, err := discussion(ctx, store, sess, cur)
	if err != nil {
		return failed(ReasonReviewFailed, err)
	}
	if notes != "" {
		f.change.Description = strings.TrimSpace(f.change.Description + "\n\n" + notes)
	}
	if err := layout.WriteChange(f.change); err != nil {
		return failed(ReasonReviewFailed, err)
	}
	// What the team dismissed in these paths, so the model does not
	// raise it in a session either.
	parts.LeaveDismissals(ctx, sess.Repo, layout)
	out, err := parts.Ladder.Run(ctx, layout, agent.Target{Revision: f.revision, Replayer: f.replayer})
	res := audit.RoundOutcome{Agent: out.Stats.Agent, Model: out.Stats.Model, Passes: out.Passes,
		InputTokens: out.Stats.InputTokens, OutputTokens: out.Stats.OutputTokens}
	if err != nil {
		o := interrupted(ctx, failed(ReasonReviewFailed, err))
		o.Agent, o.Model, o.Passes, o.InputTokens, o.OutputTokens = res.Agent, res.Model, res.Passes, res.InputTokens, res.OutputTokens
		return o
	}
	result := out.Result
	res.Status, res.Result = audit.RoundCompleted, &result
	return res
}

// interrupted turns a failure caused by the round's deadline or by the
// session ending into that outcome.
func interrupted(ctx context.Context, o audit.RoundOutcome) audit.RoundOutcome {
	switch {
	case errors.Is(context.Cause(ctx), errLeaseLost):
		o.FailureReason = ReasonSessionEnded
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		o.Status, o.FailureReason = audit.RoundTimeout, ReasonTimeout
		o.Error = "the round ran past timeout_seconds: " + o.Error
	}
	return o
}

// discussion is what the agent is told of the session so far: the
// developer's notes when beginning it, and for a later round the previous
// round's findings and the reply. It goes into the change's description,
// which the prompt fences as untrusted data: a reply argues, it never
// instructs the reviewer.
func discussion(ctx context.Context, store *audit.Store, sess audit.ReviewSession, cur audit.SessionRound) (string, error) {
	var b strings.Builder
	first := cur
	if cur.Round > 1 {
		r, err := store.SessionRound(ctx, sess.ID, 1)
		if err != nil {
			return "", err
		}
		first = r
	}
	if in := strings.TrimSpace(first.Input); in != "" {
		fmt.Fprintf(&b, "Developer's notes on this change:\n%s\n", in)
	}
	if cur.Round == 1 {
		return b.String(), nil
	}
	prev, err := store.SessionRound(ctx, sess.ID, cur.Round-1)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "\nThis is round %d of a review session: the change was reviewed before, and the target was read again for this round.\n", cur.Round)
	fmt.Fprintf(&b, "Findings of round %d:\n", prev.Round)
	switch {
	case prev.Result == nil:
		fmt.Fprintf(&b, "(none: that round did not complete: %s)\n", prev.Error)
	case len(prev.Result.Problems) == 0:
		b.WriteString("(no problems)\n")
	default:
		for i, p := range prev.Result.Problems {
			fmt.Fprintf(&b, "%d. %s:%d [%s %s] %s\n", i+1, p.File, p.Line, p.Severity, p.Category, oneLine(p.Message))
		}
	}
	fmt.Fprintf(&b, "\nDeveloper's reply to round %d:\n%s\n", prev.Round, strings.TrimSpace(cur.Input))
	b.WriteString("\nReview the change as it is now. Report again each earlier finding that still applies (at its current line); do not report one the change fixed or that the reply shows is wrong.\n")
	return b.String(), nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// resultOf is a round's result, or an empty one.
func resultOf(r audit.SessionRound) review.Result {
	if r.Result == nil {
		return review.Result{Problems: []review.Problem{}, Summaries: []review.Summary{}}
	}
	return *r.Result
}
