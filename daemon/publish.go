package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/weblink"
)

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
	// findings tracks the reviews' problems across commits; nil tracks
	// nothing (every problem reported in full, as before findings).
	findings findingsStore
	// signer signs the reports' finding links; the zero Signer (no [web]
	// base_url) signs none.
	signer weblink.Signer
	now    func() time.Time
}

var _ Publisher = (*publisher)(nil)

// Plan stores the validated result, tracks its findings (what is new,
// what is a repeat, what this change resolved) and plans one dispatch row
// per selected channel (the repo's channels plus those its routes add for
// this change; digest-only channels get none), pending or suppressed
// under the channel's policy, then one resolution follow-up per channel
// that was told of a finding this change resolved. Tracking failing does
// not lose the report: it is planned as without findings (every problem
// in full), and the error, returned, is recorded on the run.
func (p *publisher) Plan(ctx context.Context, run *audit.Run, change *vcs.Change, result review.Result) (Planned, error) {
	repo, _ := p.cfg.Repo(run.Repo)
	if repo == nil {
		return Planned{}, nil
	}
	names := p.reportChannels(channelsForRun(p.cfg, repo, run, change))
	planned := Planned{Selected: len(names)}
	if err := p.store.SaveResult(ctx, run.ID, result); err != nil {
		return planned, fmt.Errorf("store result: %w", err)
	}
	// The reports are built from the run as stored, the way an older
	// aicr rebuilt them at every attempt, so they read the same.
	detail, err := p.store.GetRun(ctx, run.ID)
	if err != nil {
		return planned, fmt.Errorf("read run for its reports: %w", err)
	}
	stored := loadChange(detail)
	var errs []error
	tr, err := p.track(ctx, run, detail, stored, result)
	if err != nil {
		p.log.Error("findings not tracked: every problem is reported in full", "run_id", run.ID, "err", err)
		errs = append(errs, err)
	}
	for _, name := range names {
		published, err := p.planReport(ctx, tr, repo, detail, stored, result, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("channel %s: %w", name, err))
			continue
		}
		if published {
			planned.Publishing++
		}
	}
	if tr != nil {
		if err := p.planResolutions(ctx, tr, detail, stored); err != nil {
			errs = append(errs, err)
		}
	}
	return planned, errors.Join(errs...)
}

// reportChannels leaves out of names the channels that get digests only.
func (p *publisher) reportChannels(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(name string) bool {
		ch, ok := p.cfg.Channel(name)
		return ok && ch.DigestOnly()
	})
}

// planReport plans the report of one channel and reports whether the
// channel gets it (or already got it).
func (p *publisher) planReport(ctx context.Context, tr *tracking, repo *config.Repo, detail *audit.RunDetail, stored *vcs.Change, result review.Result, name string) (bool, error) {
	var report *im.Report
	status, reason := delivery.StatusPending, ""
	ch, known := p.cfg.Channel(name)
	var view im.Findings
	if tr != nil && known {
		v, err := p.view(ctx, tr, repo, detail.ID, ch)
		if err != nil {
			p.log.Error("findings view: every problem is reported in full", "run_id", detail.ID, "channel", name, "err", err)
			tr = nil
		}
		view = v
	}
	if tr != nil && known {
		r, publish, why := trackedReport(p.cfg, detail, stored, name, view)
		if publish {
			report = &r
		} else {
			status, reason = delivery.StatusSuppressed, why
		}
	} else {
		_, publish, why := p.cfg.PolicyFor(repo, name).Apply(result)
		if publish {
			r := dispatchReport(p.cfg, detail, stored, delivery.PurposeReport, name)
			report = &r
		} else {
			status, reason = delivery.StatusSuppressed, why
		}
	}
	d, err := p.store.PlanDispatch(ctx, detail.ID, name, delivery.PurposeReport, status, reason, report)
	if err != nil {
		return false, fmt.Errorf("record dispatch: %w", err)
	}
	return d.Status != delivery.StatusSuppressed, nil
}

// PlanFailure plans what a run that failed for good delivers, under each
// selected channel's normal policy: the builtin findings that survived
// (partial) where the policy publishes them, else the short failure notice
// where on_error is notify. Both are PurposeError rows, which a report
// planned by a later successful retry replaces (PlanDispatch).
func (p *publisher) PlanFailure(ctx context.Context, run *audit.Run, change *vcs.Change, partial review.Result, failure error) {
	repo, ok := p.cfg.Repo(run.Repo)
	if !ok {
		return
	}
	var detail *audit.RunDetail
	var stored *vcs.Change
	for _, name := range p.reportChannels(channelsForRun(p.cfg, repo, run, change)) {
		ch, ok := p.cfg.Channel(name)
		if !ok {
			continue
		}
		filtered, _, _ := p.cfg.PolicyFor(repo, name).Apply(review.Result{Problems: partial.Problems})
		if len(filtered.Problems) == 0 && ch.OnError != im.OnErrorNotify {
			continue
		}
		if detail == nil {
			got, err := p.store.GetRun(ctx, run.ID)
			if err != nil {
				p.log.Error("plan failure report: read run", "run_id", run.ID, "err", err)
				return
			}
			// FinishRun records the failure and its findings after this
			// plan: the report has them from here.
			got.Problems, got.Error = partial.Problems, failure.Error()
			detail, stored = got, loadChange(got)
		}
		report := dispatchReport(p.cfg, detail, stored, delivery.PurposeError, name)
		if _, err := p.store.PlanDispatch(ctx, run.ID, name, delivery.PurposeError, delivery.StatusPending, "", &report); err != nil {
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
			errs = append(errs, fmt.Errorf("channel %s: %s%s", r.Channel, purposeLabel(r), r.LastError))
		}
	}
	return dispatchNotes(rows), errors.Join(append(errs, err)...)
}

func dispatchNotes(rows []delivery.Dispatch) []DispatchNote {
	notes := make([]DispatchNote, 0, len(rows))
	for _, r := range rows {
		notes = append(notes, DispatchNote{Channel: r.Channel, Status: r.Status, Detail: purposeLabel(r) + r.Detail()})
	}
	return notes
}

// purposeLabel tells a run's follow-ups from its report where both name
// the channel: "resolution: ".
func purposeLabel(d delivery.Dispatch) string {
	if d.Purpose == delivery.PurposeResolution {
		return string(d.Purpose) + ": "
	}
	return ""
}
