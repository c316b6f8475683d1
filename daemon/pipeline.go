package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// Fetcher fills a run directory with one revision of a configured repo
// (the repo's adapter's Fetch). Errors wrap the vcs sentinels.
type Fetcher interface {
	Fetch(ctx context.Context, repo, rev string, dst vcs.Dest) (*vcs.Change, error)
}

// Reviewer runs the agent's pass over a fetched run directory and returns
// the validated result it recorded. With an error, the result holds what
// survived the failure (the builtin pre-pass findings), if anything.
type Reviewer interface {
	Review(ctx context.Context, run *audit.Run, dir rundir.Layout) (review.Result, error)
}

// Publisher persists what a run delivers and hands it to the dispatcher:
// Plan before the run is recorded, Release after, so deliveries never run
// inside a review worker and never before the run's outcome is stored.
type Publisher interface {
	// Plan stores the validated result and one dispatch row per channel
	// selected for the change, pending with the report it sends, or
	// suppressed, under the channel's policy.
	Plan(ctx context.Context, run *audit.Run, change *vcs.Change, result review.Result) (Planned, error)
	// PlanFailure plans what a run that failed for good delivers: partial,
	// the builtin findings that survived, to the selected channels whose
	// policy publishes them; the short failure notice to the others whose
	// on_error is notify; failure is the run's error, which their report
	// names. Failures to plan are logged.
	PlanFailure(ctx context.Context, run *audit.Run, change *vcs.Change, partial review.Result, failure error)
	// Release hands the run's planned rows to the dispatcher; foreground
	// sends each once now (`aicr review`). It reports where each stands.
	Release(ctx context.Context, runID int64, foreground bool) ([]DispatchNote, error)
}

// Planned counts what Publisher.Plan planned.
type Planned struct {
	Selected   int // channels selected for the change
	Publishing int // of those, channels that get (or already got) the report
}

// Stages are the pipeline's three seams. Publish may be nil for a
// pipeline that only dry-runs.
type Stages struct {
	Fetch   Fetcher
	Review  Reviewer
	Publish Publisher
}

// Pipeline turns one queued run into a published, audited review. The
// daemon's workers and `aicr review` share it so a manual review behaves
// exactly like a triggered one.
type Pipeline struct {
	cfg    *config.Config
	store  *audit.Store
	log    *slog.Logger
	now    func() time.Time
	stages Stages
	// active and finished let the memory trimmer tell a daemon that has
	// just finished a burst of work from one that is busy.
	active, finished atomic.Int64
	// metrics is nil outside the daemon (aicr review).
	metrics *Metrics
}

// NewPipeline runs stages over deps.Store; Build wires the real stages.
func NewPipeline(cfg *config.Config, deps Deps, stages Stages) *Pipeline {
	deps = deps.withDefaults()
	return &Pipeline{cfg: cfg, store: deps.Store, log: deps.Logger, now: deps.Now, stages: stages, metrics: deps.Metrics}
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
	Channel string          `json:"channel"`
	Status  delivery.Status `json:"status"`
	Detail  string          `json:"detail,omitempty"`
}

// ProcessOptions changes how one run is processed.
type ProcessOptions struct {
	// DryRun reviews but publishes to no channel.
	DryRun bool
	// Foreground is set by `aicr review`: a failure is reported to the
	// operator at once instead of being retried later.
	Foreground bool
}

// ErrNoPublisher: a pipeline built without channels was asked to publish.
var ErrNoPublisher = errors.New("pipeline built without channels can only dry-run")

// Process reviews a claimed run and records its outcome. The returned
// error is only for failures to record; review failures end up in the
// Report's Status and Error and in the audit trail.
func (p *Pipeline) Process(ctx context.Context, run *audit.Run, opts ProcessOptions) (*Report, error) {
	if !opts.DryRun && p.stages.Publish == nil {
		return nil, ErrNoPublisher
	}
	p.active.Add(1)
	defer func() { p.active.Add(-1); p.finished.Add(1) }()
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
		now := p.now()
		if wait, ok := retryDelay(err, run, p.cfg.Daemon, now); ok && !opts.Foreground && !opts.DryRun {
			rep.Status, rep.Error = audit.RunQueued, err.Error()
			if rerr := p.store.RetryLater(context.WithoutCancel(ctx), run.ID, err.Error(), now.Add(wait)); rerr != nil {
				return rep, fmt.Errorf("requeue run %d: %w", run.ID, rerr)
			}
			log.Warn("review failed, will retry", "attempt", run.Attempts, "next_at", now.Add(wait).UTC().Format(time.RFC3339), "err", err)
			p.metrics.retry("run")
			return rep, nil
		}
		// The builtin findings that survived are recorded with the
		// failure, so the audit trail shows what the partial review said.
		outcome = audit.Outcome{Status: audit.RunFailed, Error: err.Error(), Problems: outcome.Problems}
		rep.Status, rep.Error = audit.RunFailed, err.Error()
		// A dry run's failure is the operator's to read, not a failing
		// review: it counts in no failure metric or alert.
		if !opts.DryRun {
			runsFailed.Add(1)
		}
		log.Error("review failed for good", "attempts", run.Attempts, "problems", len(outcome.Problems),
			"runs_failed_total", runsFailed.Value(), "err", err)
		if !opts.DryRun {
			// Planned while the run is still running, like a report: the
			// dispatcher takes no row of an unfinished run, and a crash
			// before FinishRun redoes the run rather than losing its notice.
			p.stages.Publish.PlanFailure(ctx, run, rep.Change, rep.Result, err)
		}
	}
	if err := p.store.FinishRun(context.WithoutCancel(ctx), run.ID, outcome); err != nil {
		return rep, fmt.Errorf("record run %d: %w", run.ID, err)
	}
	if !opts.DryRun {
		p.metrics.runFinished(outcome.Status, outcome.SkipReason)
	}
	p.metrics.stage("total", time.Since(started))
	if !opts.DryRun {
		// Delivery happens after the run is recorded, outside this worker.
		notes, err := p.stages.Publish.Release(ctx, run.ID, opts.Foreground)
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

// review fetches, runs the agent's pass and plans the deliveries; an
// error is the run's failure, judged by retryDelay.
func (p *Pipeline) review(ctx context.Context, run *audit.Run, rep *Report, opts ProcessOptions) (audit.Outcome, error) {
	if _, ok := p.cfg.Repo(run.Repo); !ok {
		return audit.Outcome{}, fmt.Errorf("%w: repo %q is no longer in the config", errPermanent, run.Repo)
	}
	layout := rundir.ForRun(p.cfg.Daemon.DataDir, run.ID)
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

	fetchStart := time.Now()
	change, err := p.stages.Fetch.Fetch(ctx, run.Repo, run.Revision, layout)
	p.metrics.stage("fetch", time.Since(fetchStart))
	if err != nil {
		return audit.Outcome{}, fmt.Errorf("fetch %s %s: %w", run.Repo, vcs.RevisionText(vcs.Kind(run.VCS), run.Revision), err)
	}
	change.Repo = run.Repo
	rep.Change = change
	if change.Author != "" {
		if err := p.store.SetRunAuthor(ctx, run.ID, change.Author); err != nil {
			return audit.Outcome{}, err
		}
	}
	if err := layout.WriteChange(change); err != nil {
		return audit.Outcome{}, err
	}

	reviewStart := time.Now()
	result, err := p.stages.Review.Review(ctx, run, layout)
	p.metrics.stage("review", time.Since(reviewStart))
	if err != nil {
		rep.Result = result
		return audit.Outcome{Problems: result.Problems}, err
	}
	rep.Result = result

	// A clean review is a review that succeeded with no problems, whether
	// the agent said so with a summary or with skip "lgtm": one outcome,
	// one status. "skipped" means the change was not reviewed.
	outcome := audit.Outcome{Status: audit.RunSucceeded, Problems: result.Problems, Summaries: result.Summaries}
	reviewed := result.Skip == nil || result.Skip.Reason == review.SkipReasonLGTM
	if result.Skip != nil {
		outcome.SkipReason = result.Skip.Reason
		if !reviewed {
			outcome.Status = audit.RunSkipped
		}
	}
	if !opts.DryRun {
		planned, planErr := p.stages.Publish.Plan(ctx, run, change, result)
		if planErr != nil {
			outcome.Error = planErr.Error()
		}
		// Every selected channel suppressed the report: nobody hears of
		// this review, and the audit trail says why; it still succeeded.
		if planned.Selected > 0 && planned.Publishing == 0 && planErr == nil && reviewed {
			outcome.SkipReason = im.ReasonNoProblemsSuppressed
		}
	}
	rep.Status, rep.SkipReason, rep.Error = outcome.Status, outcome.SkipReason, outcome.Error
	return outcome, nil
}

// repoAdapters is the Fetcher over each configured repo's adapter.
type repoAdapters map[string]vcs.Adapter

func (a repoAdapters) Fetch(ctx context.Context, repo, rev string, dst vcs.Dest) (*vcs.Change, error) {
	ad, ok := a[repo]
	if !ok {
		return nil, fmt.Errorf("%w: repo %q has no adapter", errPermanent, repo)
	}
	if change, ok := triggers.ParseShelfRevision(rev); ok {
		return fetchShelf(ctx, ad, repo, change, dst)
	}
	return ad.Fetch(ctx, rev, dst)
}
