package daemon

import (
	"context"
	"errors"
	"expvar"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// Pipeline turns one queued run into a published, audited review. The
// daemon's workers and `aicr review` share it so a manual review behaves
// exactly like a triggered one.
type Pipeline struct {
	cfg      *Config
	store    *audit.Store
	log      *slog.Logger
	agent    agent.Agent
	adapters map[string]vcs.Adapter
	delivery *Delivery
}

// PipelineDeps are the process-level things a pipeline needs.
type PipelineDeps struct {
	Store  *audit.Store
	Logger *slog.Logger
	// Stdout receives the console channel's reports.
	Stdout io.Writer
	// AicrBinary is spawned as the agent's MCP server; default: this executable.
	AicrBinary string
	// Now is the clock delivery retries are scheduled by; nil is time.Now.
	Now func() time.Time
}

// NewPipeline builds adapters, the agent and channels from cfg.
func NewPipeline(cfg *Config, deps PipelineDeps) (*Pipeline, error) {
	p := &Pipeline{
		cfg:      cfg,
		store:    deps.Store,
		log:      deps.Logger,
		adapters: map[string]vcs.Adapter{},
	}
	for _, r := range cfg.Repos {
		a, err := newAdapter(r)
		if err != nil {
			return nil, fmt.Errorf("repo %s: %w", r.Name, err)
		}
		p.adapters[r.Name] = a
	}
	delivery, err := NewDelivery(cfg, DeliveryDeps{Store: deps.Store, Logger: deps.Logger, Stdout: deps.Stdout, Now: deps.Now})
	if err != nil {
		return nil, err
	}
	p.delivery = delivery
	bin := deps.AicrBinary
	if bin == "" {
		bin = cfg.Daemon.AicrBinary
	}
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find aicr binary for the agent's MCP server: %w (set [daemon] aicr_binary)", err)
		}
		bin = exe
	}
	ag, err := agent.New(cfg.Agent, agent.Deps{MCPCommand: []string{bin, "mcp", "serve"}, Limits: cfg.Agent.Limits(), Logger: deps.Logger})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	p.agent = ag
	return p, nil
}

func newAdapter(r RepoConfig) (vcs.Adapter, error) {
	if r.Settings == nil {
		return nil, fmt.Errorf("repo kind %q has no adapter", r.Kind)
	}
	return r.Settings.NewAdapter()
}

// Report is what one processed run came to.
type Report struct {
	RunID      int64           `json:"run_id"`
	Repo       string          `json:"repo"`
	Revision   string          `json:"revision"`
	Status     audit.RunStatus `json:"status"`
	SkipReason string          `json:"skip_reason,omitempty"`
	Error      string          `json:"error,omitempty"`
	RunDir     string          `json:"run_dir"`
	Change     *vcs.Change     `json:"change,omitempty"`
	Result     review.Result   `json:"result"`
	Dispatches []DispatchNote  `json:"dispatches,omitempty"`
}

// DispatchNote is the outcome of publishing to one channel.
type DispatchNote struct {
	Channel string               `json:"channel"`
	Status  audit.DispatchStatus `json:"status"`
	Detail  string               `json:"detail,omitempty"`
}

// ProcessOptions changes how one run is processed.
type ProcessOptions struct {
	// DryRun reviews but publishes to no channel.
	DryRun bool
	// Foreground is set by `aicr review`: a failure is reported to the
	// operator at once instead of being retried later.
	Foreground bool
}

// Retry backoff: 30s doubling per attempt up to maxRetryDelay; retries
// go on for [daemon] retry_for from the first failure.
const (
	firstRetryDelay = 30 * time.Second
	maxRetryDelay   = 30 * time.Minute
)

// retryDelay says whether err is worth another attempt and after how
// long. Bad input (a malformed revision, a missing client binary, a repo
// no longer configured) never gets better by waiting; everything else is
// retried, with a capped backoff, until retry_for has passed since the
// first failure. "No such revision" is transient for
// missing_revision_grace after the event: a p4 replica or edge server
// may not have the change yet.
func retryDelay(err error, run *audit.Run, d DaemonConfig, now time.Time) (time.Duration, bool) {
	if errors.Is(err, errPermanent) || errors.Is(err, vcs.ErrBadRevision) || errors.Is(err, vcs.ErrToolMissing) {
		return 0, false
	}
	if errors.Is(err, vcs.ErrNoSuchRevision) && now.Sub(run.QueuedAt) >= d.MissingRevisionGrace {
		return 0, false
	}
	since := run.RetrySince
	if since.IsZero() {
		since = now
	}
	wait := firstRetryDelay
	for i := 1; i < run.Attempts && wait < maxRetryDelay; i++ {
		wait *= 2
	}
	wait = min(wait, maxRetryDelay)
	// No attempt is scheduled after the window closes.
	if now.Add(wait).Sub(since) > d.RetryFor {
		return 0, false
	}
	return wait, true
}

// runsFailed counts runs that failed for good in this process, exported
// as the expvar aicr_runs_failed_total and logged with each failure.
var runsFailed = expvar.NewInt("aicr_runs_failed_total")

// errPermanent marks pipeline failures that retrying cannot fix.
var errPermanent = errors.New("not retryable")

// Process reviews a claimed run and records its outcome. The returned
// error is only for failures to record; review failures end up in the
// Report's Status and Error and in the audit trail.
func (p *Pipeline) Process(ctx context.Context, run *audit.Run, opts ProcessOptions) (*Report, error) {
	rep := &Report{RunID: run.ID, Repo: run.Repo, Revision: run.Revision}
	log := p.log.With("run_id", run.ID, "repo", run.Repo, "revision", run.Revision)
	started := time.Now()

	outcome, err := p.review(ctx, run, rep, opts)
	if err != nil {
		if ctx.Err() != nil {
			// Shutting down: leave the run in `running`; the next start
			// re-queues it rather than recording a spurious failure.
			return rep, ctx.Err()
		}
		now := time.Now()
		if wait, ok := retryDelay(err, run, p.cfg.Daemon, now); ok && !opts.Foreground && !opts.DryRun {
			rep.Status, rep.Error = audit.RunQueued, err.Error()
			if rerr := p.store.RetryLater(context.WithoutCancel(ctx), run.ID, err.Error(), now.Add(wait)); rerr != nil {
				return rep, fmt.Errorf("requeue run %d: %w", run.ID, rerr)
			}
			log.Warn("review failed, will retry", "attempt", run.Attempts, "next_at", now.Add(wait).UTC().Format(time.RFC3339), "err", err)
			return rep, nil
		}
		outcome = audit.Outcome{Status: audit.RunFailed, Error: err.Error()}
		rep.Status, rep.Error = audit.RunFailed, err.Error()
		runsFailed.Add(1)
		log.Error("review failed for good", "attempts", run.Attempts, "runs_failed_total", runsFailed.Value(), "err", err)
	}
	if err := p.store.FinishRun(context.WithoutCancel(ctx), run.ID, outcome); err != nil {
		return rep, fmt.Errorf("record run %d: %w", run.ID, err)
	}
	if !opts.DryRun {
		if outcome.Status == audit.RunFailed {
			p.planFailureNotice(ctx, run, rep.Change)
		}
		// Delivery happens after the run is recorded, outside this worker.
		notes, err := p.delivery.publish(ctx, run.ID, opts.Foreground)
		rep.Dispatches = notes
		if err != nil {
			log.Warn("delivery", "err", err)
			if rep.Error == "" {
				rep.Error = err.Error()
			}
		}
	}
	log.Info("review finished", "status", rep.Status, "skip_reason", rep.SkipReason, "problems", len(rep.Result.Problems), "duration_ms", time.Since(started).Milliseconds())
	return rep, nil
}

func (p *Pipeline) review(ctx context.Context, run *audit.Run, rep *Report, opts ProcessOptions) (audit.Outcome, error) {
	repo, ok := p.cfg.Repo(run.Repo)
	if !ok {
		return audit.Outcome{}, fmt.Errorf("%w: repo %q is no longer in the config", errPermanent, run.Repo)
	}
	adapter := p.adapters[run.Repo]

	layout := rundir.New(filepath.Join(p.cfg.Daemon.DataDir, "runs", strconv.FormatInt(run.ID, 10)))
	// A resumed run starts from a clean directory: a half-written fetch
	// from the interrupted attempt must not leak into this one.
	if err := os.RemoveAll(layout.Dir()); err != nil {
		return audit.Outcome{}, fmt.Errorf("clean run dir: %w", err)
	}
	if err := layout.Create(); err != nil {
		return audit.Outcome{}, err
	}
	rep.RunDir = layout.Dir()
	if err := p.store.SetRunDir(ctx, run.ID, layout.Dir()); err != nil {
		return audit.Outcome{}, fmt.Errorf("record run dir: %w", err)
	}

	change, err := adapter.Fetch(ctx, run.Revision, layout)
	if err != nil {
		return audit.Outcome{}, fmt.Errorf("fetch %s r%s: %w", run.Repo, run.Revision, err)
	}
	change.Repo = run.Repo
	rep.Change = change
	if err := layout.WriteChange(change); err != nil {
		return audit.Outcome{}, err
	}

	if err := review.ClearState(layout.StatePath()); err != nil {
		return audit.Outcome{}, fmt.Errorf("clear stale state: %w", err)
	}
	if err := p.agent.Review(ctx, layout); err != nil {
		return audit.Outcome{}, fmt.Errorf("agent review: %w", err)
	}
	state, err := review.LoadState(layout.StatePath())
	if err != nil {
		return audit.Outcome{}, fmt.Errorf("read agent state: %w", err)
	}
	// Until the agent ladder has a repair pass, a summary that claims
	// problems nobody reported is at least visible to operators.
	for _, f := range review.CheckSummaryHonesty(state) {
		p.log.Warn("agent summary claims problems it did not report", "run_id", run.ID, "repo", run.Repo, "revision", run.Revision, "claim", f.Claim, "reason", f.Reason)
	}
	if state.RejectedTotal > 0 {
		p.log.Warn("agent tool calls were refused; findings may be missing", "run_id", run.ID, "repo", run.Repo, "revision", run.Revision,
			"rejected", state.RejectedTotal, "kept", len(state.Rejected), "state", layout.StatePath)
	}
	result := state.Result()
	rep.Result = result

	outcome := audit.Outcome{Status: audit.RunSucceeded, Problems: result.Problems, Summaries: result.Summaries}
	if result.Skip != nil {
		outcome.Status, outcome.SkipReason = audit.RunSkipped, result.Skip.Reason
	}
	if !opts.DryRun {
		published, dispatchErr := p.dispatch(ctx, run, repo, change, result, rep)
		if dispatchErr != nil {
			outcome.Error = dispatchErr.Error()
		}
		if !published && len(rep.Dispatches) > 0 && dispatchErr == nil && result.Skip == nil {
			outcome.Status, outcome.SkipReason = audit.RunSkipped, im.ReasonNoProblemsSuppressed
		}
	}
	rep.Status, rep.SkipReason, rep.Error = outcome.Status, outcome.SkipReason, outcome.Error
	return outcome, nil
}

// dispatch persists first and sends second: it stores the validated
// result, plans one dispatch row per selected channel (the repo's channels
// plus those its routes add for this change), pending or suppressed under
// the channel's policy; Process hands them to the dispatcher once the run
// is recorded. A resumed run finds its rows and never posts twice where it
// already posted. published is true when any channel is to get the report.
func (p *Pipeline) dispatch(ctx context.Context, run *audit.Run, repo *RepoConfig, change *vcs.Change, result review.Result, rep *Report) (published bool, err error) {
	names := p.cfg.ChannelsFor(repo, changedPaths(change))
	if len(names) == 0 {
		return false, nil
	}
	if err := p.store.SaveResult(ctx, run.ID, result); err != nil {
		return false, fmt.Errorf("store result: %w", err)
	}
	var errs []error
	for _, name := range names {
		_, publish, reason := p.cfg.PolicyFor(repo, name).Apply(result)
		status := audit.DispatchPending
		if !publish {
			status = audit.DispatchSuppressed
		}
		d, err := p.store.PlanDispatch(ctx, run.ID, name, audit.PurposeReport, status, reason)
		if err != nil {
			errs = append(errs, fmt.Errorf("channel %s: record dispatch: %w", name, err))
			continue
		}
		if d.Status != audit.DispatchSuppressed {
			published = true
		}
	}
	return published, errors.Join(errs...)
}
