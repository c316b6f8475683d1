package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// Resolver rebuilds each dispatch's message from the audit trail for the
// dispatcher (delivery.Resolver): the daemon is the consumer that knows
// runs, change.json and [[user]]. The state machine, retries and rate
// limits are the dispatcher's.
type Resolver struct {
	cfg      *config.Config
	store    *audit.Store
	channels map[string]im.Channel
}

var _ delivery.Resolver = (*Resolver)(nil)

// Resolve implements delivery.Resolver: what dispatch d sends, rebuilt
// from the run in the audit trail and the change.json in its run dir.
func (rs *Resolver) Resolve(ctx context.Context, disp delivery.Dispatch) (im.Channel, im.Message, error) {
	ch, ok := rs.channels[disp.Channel]
	if !ok {
		return nil, im.Message{}, fmt.Errorf("%w: channel %q is no longer in the config", delivery.ErrUnresolvable, disp.Channel)
	}
	run, err := rs.store.GetRun(ctx, disp.RunID)
	if errors.Is(err, audit.ErrNotFound) {
		return nil, im.Message{}, fmt.Errorf("%w: %w", delivery.ErrUnresolvable, err)
	}
	if err != nil {
		return nil, im.Message{}, err // the store: transient
	}
	repo, _ := rs.cfg.Repo(run.Repo)
	change := loadChange(run)
	msg := im.Message{RunID: run.ID, Change: change, Author: rs.cfg.User(change.Author)}
	if run.Agent != nil {
		msg.Reviewer = im.Reviewer{Agent: run.Agent.Agent, Model: run.Agent.Model}
	}
	if repo != nil && repo.ChangeURL != "" {
		msg.ChangeURL = expandChangeURL(repo.ChangeURL, change)
	}
	if disp.Purpose == delivery.PurposeError {
		// A failed run: its builtin findings under the channel's policy
		// (a partial review), or none (the failure notice). Either way
		// the words are BuildReport's; the reviewer is not named, since
		// it did not finish.
		msg.Reviewer = im.Reviewer{}
		msg.Failure = failureReason(run.Error)
		filtered, _, _ := rs.cfg.PolicyFor(repo, disp.Channel).Apply(review.Result{Problems: run.Problems})
		msg.Result = review.Result{Problems: filtered.Problems, Summaries: []review.Summary{}}
		return ch, msg, nil
	}
	res := review.Result{Problems: run.Problems, Summaries: run.Summaries}
	if res.Problems == nil {
		res.Problems = []review.Problem{}
	}
	// skip_reason holds the agent's skip while the run is running and
	// no_problems_suppressed only once every channel suppressed, which
	// never reaches a channel.
	if run.SkipReason != "" && run.SkipReason != im.ReasonNoProblemsSuppressed && run.Status != audit.RunFailed {
		res.Skip = &review.Skip{Reason: run.SkipReason}
	}
	msg.Result, _, _ = rs.cfg.PolicyFor(repo, disp.Channel).Apply(res)
	return ch, msg, nil
}

// loadChange reads the change the run reviewed; when the run dir is gone
// (cleaned up, another host) the report still names repo and revision.
func loadChange(run *audit.RunDetail) *vcs.Change {
	fallback := &vcs.Change{VCS: vcs.Kind(run.VCS), Repo: run.Repo, Revision: run.Revision, Author: run.User}
	if run.RunDir == "" {
		return fallback
	}
	c, err := rundir.New(run.RunDir).ReadChange()
	if err != nil || c.Revision == "" {
		return fallback
	}
	c.Repo = run.Repo
	return c
}

func expandChangeURL(tmpl string, c *vcs.Change) string {
	return strings.NewReplacer("{repo}", url.PathEscape(c.Repo), "{revision}", url.PathEscape(c.Revision)).Replace(tmpl)
}

// maxErrorReport keeps a failed run's notice short: the audit trail has
// the whole error.
const maxErrorReport = 300

// failureReason is the first line of a failed run's error, capped, for
// its notice.
func failureReason(errText string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(errText), "\n")
	if len(line) > maxErrorReport {
		line = strings.ToValidUTF8(line[:maxErrorReport], "") + "…"
	}
	if line == "" {
		line = "unknown error"
	}
	return line
}

// changedPaths lists the paths of a change, for routes.
func changedPaths(c *vcs.Change) []string {
	if c == nil {
		return nil
	}
	out := make([]string, 0, len(c.Files))
	for _, f := range c.Files {
		out = append(out, f.Path)
	}
	return out
}

// publisher is the pipeline's Publisher over the audit store and the
// dispatcher. Persist first, send second: rows are planned before the run
// is recorded and handed over after, so a resumed run finds its rows and
// never posts twice where it already posted.
type publisher struct {
	cfg        *config.Config
	store      *audit.Store
	log        *slog.Logger
	dispatcher *delivery.Dispatcher
}

var _ Publisher = (*publisher)(nil)

// Plan stores the validated result and plans one dispatch row per
// selected channel (the repo's channels plus those its routes add for
// this change), pending or suppressed under the channel's policy.
func (p *publisher) Plan(ctx context.Context, run *audit.Run, change *vcs.Change, result review.Result) (Planned, error) {
	repo, _ := p.cfg.Repo(run.Repo)
	if repo == nil {
		return Planned{}, nil
	}
	names := channelsForRun(p.cfg, repo, run, change)
	planned := Planned{Selected: len(names)}
	if len(names) == 0 {
		return planned, nil
	}
	if err := p.store.SaveResult(ctx, run.ID, result); err != nil {
		return planned, fmt.Errorf("store result: %w", err)
	}
	var errs []error
	for _, name := range names {
		_, publish, reason := p.cfg.PolicyFor(repo, name).Apply(result)
		status := delivery.StatusPending
		if !publish {
			status = delivery.StatusSuppressed
		}
		d, err := p.store.PlanDispatch(ctx, run.ID, name, delivery.PurposeReport, status, reason)
		if err != nil {
			errs = append(errs, fmt.Errorf("channel %s: record dispatch: %w", name, err))
			continue
		}
		if d.Status != delivery.StatusSuppressed {
			planned.Publishing++
		}
	}
	return planned, errors.Join(errs...)
}

// PlanFailure plans what a run that failed for good delivers, under each
// selected channel's normal policy: the builtin findings that survived
// (partial) where the policy publishes them, else the short failure notice
// where on_error is notify. Both are PurposeError rows, which a report
// planned by a later successful retry replaces (PlanDispatch).
func (p *publisher) PlanFailure(ctx context.Context, run *audit.Run, change *vcs.Change, partial review.Result) {
	repo, ok := p.cfg.Repo(run.Repo)
	if !ok {
		return
	}
	for _, name := range channelsForRun(p.cfg, repo, run, change) {
		ch, ok := p.cfg.Channel(name)
		if !ok {
			continue
		}
		filtered, _, _ := p.cfg.PolicyFor(repo, name).Apply(review.Result{Problems: partial.Problems})
		if len(filtered.Problems) == 0 && ch.OnError != im.OnErrorNotify {
			continue
		}
		if _, err := p.store.PlanDispatch(ctx, run.ID, name, delivery.PurposeError, delivery.StatusPending, ""); err != nil {
			p.log.Error("plan failure report", "run_id", run.ID, "channel", name, "err", err)
		}
	}
}

// Release hands a recorded run's planned dispatches to the dispatcher.
// The daemon only wakes it: deliveries never run inside a review worker.
// A foreground review (`aicr review`) sends them itself, one goroutine per
// channel, so the report is out before the process exits; retries they
// need are left to the daemon.
func (p *publisher) Release(ctx context.Context, runID int64, foreground bool) ([]DispatchNote, error) {
	if !foreground {
		p.dispatcher.Wake()
		rows, err := p.store.RunDispatches(ctx, runID)
		return dispatchNotes(rows), err
	}
	rows, err := p.dispatcher.Settle(ctx, runID)
	var errs []error
	for _, r := range rows {
		if r.Status.Undelivered() {
			errs = append(errs, fmt.Errorf("channel %s: %s", r.Channel, r.LastError))
		}
	}
	return dispatchNotes(rows), errors.Join(append(errs, err)...)
}

func dispatchNotes(rows []delivery.Dispatch) []DispatchNote {
	notes := make([]DispatchNote, 0, len(rows))
	for _, r := range rows {
		notes = append(notes, DispatchNote{Channel: r.Channel, Status: r.Status, Detail: r.Detail()})
	}
	return notes
}
