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
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// Delivery wires package delivery into the daemon: the built channels and
// the resolver that rebuilds each dispatch's message from the audit trail
// (the daemon is the consumer that knows runs, change.json and [[user]]).
// The state machine, retries and rate limits are the dispatcher's.
type Delivery struct {
	cfg        *Config
	store      *audit.Store
	channels   map[string]im.Channel
	Dispatcher *delivery.Dispatcher
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
	d.Dispatcher = delivery.New(deps.Store, d, delivery.Options{Config: cfg.Dispatch, Logger: deps.Logger, Now: deps.Now})
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

// Resolve implements delivery.Resolver: what dispatch d sends, rebuilt
// from the run in the audit trail and the change.json in its run dir.
func (d *Delivery) Resolve(ctx context.Context, disp delivery.Dispatch) (im.Channel, im.Message, error) {
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

// publish hands a finished run's planned dispatches to the dispatcher. The
// daemon only wakes it: deliveries never run inside a review worker. A
// foreground review (`aicr review`) sends them itself, one goroutine per
// channel, so the report is out before the process exits; retries they
// need are left to the daemon.
func (d *Delivery) publish(ctx context.Context, runID int64, foreground bool) ([]DispatchNote, error) {
	if !foreground {
		d.Dispatcher.Wake()
		rows, err := d.store.RunDispatches(ctx, runID)
		return dispatchNotes(rows), err
	}
	rows, err := d.Dispatcher.Settle(ctx, runID)
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

// planFailureNotice plans the short error report of a failed run for
// every selected channel whose on_error is notify; publish sends it.
func (p *Pipeline) planFailureNotice(ctx context.Context, run *audit.Run, change *vcs.Change) {
	repo, ok := p.cfg.Repo(run.Repo)
	if !ok || p.delivery == nil {
		return
	}
	for _, name := range p.cfg.ChannelsFor(repo, changedPaths(change)) {
		ch, ok := p.cfg.Channel(name)
		if !ok || ch.OnError != im.OnErrorNotify {
			continue
		}
		if _, err := p.store.PlanDispatch(ctx, run.ID, name, audit.PurposeError, audit.DispatchPending, ""); err != nil {
			p.log.Error("plan error report", "run_id", run.ID, "channel", name, "err", err)
		}
	}
}
