package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
)

// agentPass is the Reviewer over an agent: one pass against a fresh state
// file, then the state file read back and checked.
type agentPass struct {
	agent agent.Agent
	log   *slog.Logger
}

func (a *agentPass) Review(ctx context.Context, run *audit.Run, dir rundir.Layout) (review.Result, error) {
	if err := review.ClearState(dir.StatePath()); err != nil {
		return review.Result{}, fmt.Errorf("clear stale state: %w", err)
	}
	if err := a.agent.Review(ctx, dir); err != nil {
		return review.Result{}, fmt.Errorf("agent review: %w", err)
	}
	state, err := review.LoadState(dir.StatePath())
	if err != nil {
		return review.Result{}, fmt.Errorf("read agent state: %w", err)
	}
	log := a.log.With("run_id", run.ID, "repo", run.Repo, "revision", run.Revision)
	// Until the agent ladder has a repair pass, a summary that claims
	// problems nobody reported is at least visible to operators.
	for _, f := range review.CheckSummaryHonesty(state) {
		log.Warn("agent summary claims problems it did not report", "claim", f.Claim, "reason", f.Reason)
	}
	if state.RejectedTotal > 0 {
		log.Warn("agent tool calls were refused; findings may be missing",
			"rejected", state.RejectedTotal, "kept", len(state.Rejected), "state", dir.StatePath())
	}
	return state.Result(), nil
}
