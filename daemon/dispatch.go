package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/dispatch"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// Delivery is the daemon's side of publishing: the built channels, the
// resolver that rebuilds each dispatch's message from the audit trail, and
// the dispatcher that sends. The pipeline, the daemon's re-drive loop and
// `aicr dispatch retry` share it.
type Delivery struct {
	cfg        *Config
	store      *audit.Store
	channels   map[string]im.Channel
	Dispatcher *dispatch.Dispatcher
}

// DeliveryDeps are what channels and the dispatcher need from the process.
type DeliveryDeps struct {
	Store  *audit.Store
	Logger *slog.Logger
	Stdout io.Writer
	Now    func() time.Time
}

// NewDelivery builds every [[channel]] and a dispatcher over deps.Store.
func NewDelivery(cfg *Config, deps DeliveryDeps) (*Delivery, error) {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Delivery{cfg: cfg, store: deps.Store, channels: map[string]im.Channel{}}
	for _, ch := range cfg.Channels {
		c, err := BuildChannel(cfg, ch.Name, deps)
		if err != nil {
			return nil, err
		}
		d.channels[ch.Name] = c
	}
	d.Dispatcher = dispatch.New(deps.Store, d, dispatch.Options{
		MaxAttempts: cfg.Dispatch.MaxAttempts,
		BaseBackoff: cfg.Dispatch.Backoff,
		MaxBackoff:  cfg.Dispatch.MaxBackoff,
		SendTimeout: cfg.Dispatch.Timeout,
		Logger:      deps.Logger,
		Now:         deps.Now,
	})
	return d, nil
}

// BuildChannel builds one configured channel.
func BuildChannel(cfg *Config, name string, deps DeliveryDeps) (im.Channel, error) {
	ch, ok := cfg.Channel(name)
	if !ok {
		return nil, fmt.Errorf("no [[channel]] named %q in %s", name, cfg.Path)
	}
	c, err := ch.Settings.Build(ch.ChannelConfig, im.Deps{Stdout: deps.Stdout, Logger: deps.Logger,
		BaseDir: filepath.Dir(cfg.Path), Now: deps.Now})
	if err != nil {
		return nil, fmt.Errorf("channel %s: %w", name, err)
	}
	return c, nil
}

// Resolve implements dispatch.Resolver: what dispatch d sends, rebuilt
// from the run in the audit trail and the change.json in its run dir.
func (d *Delivery) Resolve(ctx context.Context, disp audit.Dispatch) (im.Channel, im.Message, error) {
	ch, ok := d.channels[disp.Channel]
	if !ok {
		return nil, im.Message{}, fmt.Errorf("channel %q is no longer in the config", disp.Channel)
	}
	run, err := d.store.GetRun(ctx, disp.RunID)
	if err != nil {
		return nil, im.Message{}, err
	}
	repo, _ := d.cfg.Repo(run.Repo)
	change := loadChange(run)
	msg := im.Message{RunID: run.ID, Change: change, Author: d.cfg.User(change.Author)}
	if repo != nil && repo.ChangeURL != "" {
		msg.ChangeURL = expandChangeURL(repo.ChangeURL, change)
	}
	if disp.Purpose == audit.PurposeError {
		msg.Result = errorReport(run.Error)
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
	msg.Result, _, _ = d.cfg.PolicyFor(repo, disp.Channel).Apply(res)
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

// errorReport is what on_error = "notify" channels get for a failed run.
func errorReport(errText string) review.Result {
	line, _, _ := strings.Cut(strings.TrimSpace(errText), "\n")
	if len(line) > maxErrorReport {
		line = strings.ToValidUTF8(line[:maxErrorReport], "") + "…"
	}
	if line == "" {
		line = "unknown error"
	}
	return review.Result{Problems: []review.Problem{}, Summaries: []review.Summary{{
		Title:    "Review failed",
		Markdown: "The review could not be completed: " + line + "\n\nSee `aicr audit show` for details.",
	}}}
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

// deliverPlanned makes the first attempt at each pending dispatch, inline,
// so a report is out when the run finishes; retries are left to the
// re-drive loop. It returns what each dispatch came to.
func (d *Delivery) deliverPlanned(ctx context.Context, planned []audit.Dispatch) ([]DispatchNote, []error) {
	var notes []DispatchNote
	var errs []error
	for _, disp := range planned {
		if disp.Status != audit.DispatchPending {
			notes = append(notes, DispatchNote{Channel: disp.Channel, Status: disp.Status, Detail: disp.LastError})
			continue
		}
		after, err := d.Dispatcher.Deliver(ctx, disp.ID)
		if errors.Is(err, audit.ErrNotClaimable) {
			// Queued behind an earlier retry on the channel, or being sent
			// by the re-drive loop: it goes out in its turn.
			after, err = d.store.GetDispatch(ctx, disp.ID)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("channel %s: %w", disp.Channel, err))
			continue
		}
		note := DispatchNote{Channel: after.Channel, Status: after.Status, Detail: after.LastError}
		switch after.Status {
		case audit.DispatchPending:
			if !after.NextAttemptAt.IsZero() {
				note.Detail = fmt.Sprintf("retry at %s: %s", after.NextAttemptAt.Format(time.RFC3339), after.LastError)
			} else {
				note.Detail = "queued"
			}
		case audit.DispatchFailed, audit.DispatchDead:
			errs = append(errs, fmt.Errorf("channel %s: %s", after.Channel, after.LastError))
		}
		notes = append(notes, note)
	}
	return notes, errs
}

// notifyFailure plans and sends the short error report of a failed run to
// every selected channel whose on_error is notify.
func (p *Pipeline) notifyFailure(ctx context.Context, run *audit.Run, change *vcs.Change) {
	repo, ok := p.cfg.Repo(run.Repo)
	if !ok || p.delivery == nil {
		return
	}
	var planned []audit.Dispatch
	for _, name := range p.cfg.ChannelsFor(repo, changedPaths(change)) {
		ch, ok := p.cfg.Channel(name)
		if !ok || ch.OnError != im.OnErrorNotify {
			continue
		}
		d, err := p.store.PlanDispatch(ctx, run.ID, name, audit.PurposeError, audit.DispatchPending, "")
		if err != nil {
			p.log.Error("plan error report", "run_id", run.ID, "channel", name, "err", err)
			continue
		}
		planned = append(planned, d)
	}
	_, errs := p.delivery.deliverPlanned(ctx, planned)
	for _, err := range errs {
		p.log.Warn("error report not delivered", "run_id", run.ID, "err", err)
	}
}
