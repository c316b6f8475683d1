package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/budget"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
)

// A [[digest]] is a periodic summary of the findings sent to one
// channel. Each tick of its schedule closes a period (the previous tick
// to this one) and plans one run-less dispatch for it, under a slot
// named after the digest and the period's start: planning is
// idempotent, so two daemons sharing a store, or a restart at the tick,
// send it once. At start the daemon plans the last closed period, in
// case its tick was missed while it was down: once, not every missed
// period.

// digestStore is what a digest needs of the store.
type digestStore interface {
	findings.Store
	// PlanNotice plans a dispatch of report to channel under slot, once:
	// a slot planned already is left as it is (created false).
	PlanNotice(ctx context.Context, runID int64, channel string, purpose delivery.Purpose, slot string, report *im.Report) (delivery.Dispatch, bool, error)
	ReviewCostIn(ctx context.Context, repos []string, since, until time.Time) (audit.ReviewCost, error)
	budget.Spender
}

// digester sends one [[digest]].
type digester struct {
	table config.DigestTable
	sched cron.Schedule
	// repos are the table's, else every configured repo.
	repos []string
	// budgets are the [[budget]]s covering any of repos.
	budgets []config.BudgetTable
	store   digestStore
	// wake tells the dispatcher a dispatch was planned.
	wake func()
	now  func() time.Time
	log  *slog.Logger
	// lang is the language of the digest's channel.
	lang im.Language
}

// Bounds of what a digest reads and keeps.
const (
	digestPage = 1000 // findings read per query
	// digestPaths bounds OpenByPath in the stored report; the rest is
	// counted in MorePaths.
	digestPaths = 100
)

// scheduleFindingJobs registers the findings' periodic work of one
// config generation: a job per [[digest]] on its schedule (a singleton
// across daemons), whose catch-ups join first, and the repos the
// findings gauges are labelled with.
func scheduleFindingJobs(ctx context.Context, j *jobs, parts *Components, store *audit.Store, opts Options, first *[]func()) error {
	cfg := parts.Config
	parts.metrics().watchRepos(cfg.RepoNames())
	parts.metrics().watchBudgets(cfg.Budgets)
	if len(cfg.Digests) == 0 {
		return nil
	}
	wake := func() {}
	if parts.Dispatcher != nil {
		wake = parts.Dispatcher.Wake
	}
	for _, t := range cfg.Digests {
		d, err := newDigester(cfg, t, store, wake, opts.Now, opts.Logger)
		if err != nil {
			return err
		}
		job := singleton(ctx, store, opts.Logger, "digest "+t.Name, func() { d.tick(ctx) })
		if _, err := j.sched.AddFunc(t.Every, job); err != nil {
			return fmt.Errorf("digest %s every %q: %w", t.Name, t.Every, err)
		}
		*first = append(*first, job)
	}
	return nil
}

func newDigester(cfg *config.Config, t config.DigestTable, store digestStore, wake func(), now func() time.Time, log *slog.Logger) (*digester, error) {
	sched, err := t.Schedule()
	if err != nil {
		return nil, fmt.Errorf("digest %s every %q: %w", t.Name, t.Every, err)
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	repos := t.Repos
	if len(repos) == 0 {
		repos = cfg.RepoNames()
	}
	return &digester{table: t, sched: sched, repos: repos, budgets: budgetsCovering(cfg.Budgets, repos), store: store, wake: wake, now: now, log: log,
		lang: cfg.ChannelLanguage(t.Channel)}, nil
}

// tick plans the digest of the last period that closed by now: the one
// this tick closes, or at start the one a stopped daemon missed.
func (d *digester) tick(ctx context.Context) {
	end := lastTick(d.sched, d.now())
	start := lastTick(d.sched, end.Add(-time.Second))
	if end.IsZero() || start.IsZero() {
		return
	}
	if _, err := d.send(ctx, start, end); err != nil && ctx.Err() == nil {
		d.log.Error("digest", "digest", d.table.Name, "period_start", start, "err", err)
	}
}

// DigestSlot names a digest's dispatch for the period that starts at
// start: the same on every daemon.
func DigestSlot(name string, start time.Time) string {
	return "digest:" + name + ":" + start.UTC().Format(time.RFC3339)
}

// send plans the period's digest (once: a planned slot stays as it is)
// and wakes the dispatcher.
func (d *digester) send(ctx context.Context, start, end time.Time) (delivery.Dispatch, error) {
	rep, err := d.report(ctx, start, end)
	if err != nil {
		return delivery.Dispatch{}, err
	}
	disp, created, err := d.store.PlanNotice(ctx, 0, d.table.Channel, delivery.PurposeDigest, DigestSlot(d.table.Name, start), &rep)
	if err != nil {
		return delivery.Dispatch{}, fmt.Errorf("plan digest %s: %w", d.table.Name, err)
	}
	if !created {
		d.log.Debug("digest already planned", "digest", d.table.Name, "dispatch", disp.ID, "period_start", start)
		return disp, nil
	}
	d.log.Info("digest planned", "digest", d.table.Name, "channel", d.table.Channel, "dispatch", disp.ID,
		"period_start", start, "period_end", end)
	d.wake()
	return disp, nil
}

// report is the digest of [start, end) as every channel gets it.
func (d *digester) report(ctx context.Context, start, end time.Time) (im.Report, error) {
	fig, err := d.figures(ctx, start, end)
	if err != nil {
		return im.Report{}, err
	}
	return im.BuildDigest(fig, d.lang), nil
}

// figures counts the findings of the digest's repos and paths: open ones
// by path and age at end, new, resolved and dismissed in [start, end),
// the false-positive share of the new ones, and what the period's
// reviews cost.
func (d *digester) figures(ctx context.Context, start, end time.Time) (im.Digest, error) {
	fig := im.Digest{Name: d.table.Name, Period: periodText(d.lang, start, end), Repos: d.table.Repos, Paths: d.table.Paths}
	open := map[string]*im.DigestPath{}
	oldest := map[string]time.Time{}
	in := func(t time.Time) bool { return !t.IsZero() && !t.Before(start) && t.Before(end) }
	for _, repo := range d.repos {
		err := d.eachFinding(ctx, repo, func(f findings.Finding) {
			if in(f.FirstSeenAt) {
				fig.New++
				if f.State == findings.StateDismissed && f.Dismissal == findings.ActionFalsePositive {
					fig.FalsePositives++
				}
			}
			switch {
			case f.State.Active() && f.FirstSeenAt.Before(end):
				fig.Open++
				key := repo + "\x00" + f.Path
				p := open[key]
				if p == nil {
					p = &im.DigestPath{Path: digestPath(d.repos, repo, f.Path)}
					open[key] = p
				}
				p.Open++
				if o, ok := oldest[key]; !ok || f.FirstSeenAt.Before(o) {
					oldest[key] = f.FirstSeenAt
				}
			case f.State == findings.StateResolved && in(f.ResolvedAt):
				fig.Resolved++
			case f.State == findings.StateDismissed && in(f.ActedAt):
				fig.Dismissed++
			}
		})
		if err != nil {
			return fig, err
		}
	}
	fig.Reported = fig.New
	fig.FalsePositiveRate = -1
	if fig.Reported > 0 {
		fig.FalsePositiveRate = float64(fig.FalsePositives) / float64(fig.Reported)
	}
	fig.OpenByPath, fig.MorePaths = byAge(open, oldest, end)
	cost, err := d.store.ReviewCostIn(ctx, d.repos, start, end)
	if err != nil {
		return fig, err
	}
	fig.Reviews, fig.CostUSD = cost.Reviews, cost.CostUSD
	// The budgets as they stand as the period closes: the day or month
	// (in the daemon's zone, not the schedule's) that holds its last instant.
	at := end.Add(-time.Nanosecond).In(d.now().Location())
	for _, t := range d.budgets {
		s, err := budget.StatusOf(ctx, d.store, t, at)
		if err != nil {
			return fig, err
		}
		fig.Budgets = append(fig.Budgets, im.DigestBudget{Name: s.Name, Period: s.Period, State: s.State, Action: s.Action,
			FallbackModel: s.FallbackModel, SpentUSD: s.SpentUSD, LimitUSD: s.LimitUSD, RemainingUSD: s.RemainingUSD,
			SpentTokens: s.SpentTokens, LimitTokens: s.LimitTokens, RemainingTokens: s.RemainingTokens,
			PeriodEnd: s.PeriodEnd, Zone: s.PeriodEnd.Format("MST")})
	}
	return fig, nil
}

// eachFinding calls fn once for every finding of repo in the digest's
// paths, a page at a time.
func (d *digester) eachFinding(ctx context.Context, repo string, fn func(findings.Finding)) error {
	// Pages are newest first: a finding a review adds meanwhile pushes
	// the rest one place on, and the next page would count one again.
	seen := map[int64]bool{}
	for offset := 0; ; offset += digestPage {
		page, err := d.store.ListFindings(ctx, findings.Filter{Repo: repo, Limit: digestPage, Offset: offset})
		if err != nil {
			return fmt.Errorf("digest %s: list findings of %s: %w", d.table.Name, repo, err)
		}
		for _, f := range page {
			if !seen[f.ID] && inPaths(d.table.Paths, f.Path) {
				fn(f)
			}
			seen[f.ID] = true
		}
		if len(page) < digestPage {
			return nil
		}
	}
}

// inPaths reports whether path is one of prefixes or under one; no
// prefixes means every path.
func inPaths(prefixes []string, path string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		dir := strings.TrimSuffix(p, "/")
		if path == dir || strings.HasPrefix(path, dir+"/") || (strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
			return true
		}
	}
	return false
}

// digestPath names a path; with several repos, with its repo.
func digestPath(repos []string, repo, path string) string {
	if len(repos) == 1 {
		return path
	}
	return repo + ": " + path
}

// byAge orders the paths oldest open finding first (then by count and
// name, so the order is stable), keeping the first digestPaths.
func byAge(open map[string]*im.DigestPath, oldest map[string]time.Time, end time.Time) ([]im.DigestPath, int) {
	keys := make([]string, 0, len(open))
	for k := range open {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if !oldest[a].Equal(oldest[b]) {
			return oldest[a].Before(oldest[b])
		}
		if open[a].Open != open[b].Open {
			return open[a].Open > open[b].Open
		}
		return a < b
	})
	out := make([]im.DigestPath, 0, min(len(keys), digestPaths))
	for _, k := range keys[:min(len(keys), digestPaths)] {
		p := *open[k]
		p.OldestDays = int(max(end.Sub(oldest[k]), 0) / (24 * time.Hour))
		out = append(out, p)
	}
	return out, len(keys) - len(out)
}

func periodText(lang im.Language, start, end time.Time) string {
	return lang.T(im.KeyDigestPeriodRange, lang.DateTime(start.UTC()), lang.DateTime(end.UTC()))
}

// lastTick is the latest tick of s at or before t; zero when s has none
// in the last 800 days. Schedules only say what comes next, so it looks
// back twice as far each time until a tick is found, then walks forward.
func lastTick(s cron.Schedule, t time.Time) time.Time {
	for back := time.Hour; back <= 800*24*time.Hour; back *= 2 {
		next := s.Next(t.Add(-back))
		if next.IsZero() || next.After(t) {
			continue
		}
		for {
			n := s.Next(next)
			if n.IsZero() || n.After(t) {
				return next
			}
			next = n
		}
	}
	return time.Time{}
}

var _ digestStore = (*audit.Store)(nil)

// DigestNow is the named [[digest]]'s report of the period from its last
// tick to now: what the next tick will send so far (aicr digest send).
// With plan it is also planned as a dispatch, under a slot of its own so
// the scheduled digest of the period is still sent; the caller sends it
// (or the daemon's dispatcher does).
func DigestNow(ctx context.Context, cfg *config.Config, store *audit.Store, name string, now time.Time, plan bool) (im.Report, *delivery.Dispatch, error) {
	var table *config.DigestTable
	names := make([]string, 0, len(cfg.Digests))
	for i, t := range cfg.Digests {
		names = append(names, t.Name)
		if t.Name == name {
			table = &cfg.Digests[i]
		}
	}
	if table == nil {
		return im.Report{}, nil, fmt.Errorf("%w: no [[digest]] named %q in %s (digests: %s)", ErrUnknownDigest, name, cfg.Path, strings.Join(names, ", "))
	}
	d, err := newDigester(cfg, *table, store, func() {}, func() time.Time { return now }, nil)
	if err != nil {
		return im.Report{}, nil, err
	}
	start := lastTick(d.sched, now)
	if start.IsZero() {
		return im.Report{}, nil, fmt.Errorf("digest %s: schedule %q had no tick in the last 800 days", name, table.Every)
	}
	rep, err := d.report(ctx, start, now)
	if err != nil || !plan {
		return rep, nil, err
	}
	slot := "digest:" + name + ":manual:" + now.UTC().Format(time.RFC3339Nano)
	disp, _, err := store.PlanNotice(ctx, 0, table.Channel, delivery.PurposeDigest, slot, &rep)
	if err != nil {
		return rep, nil, fmt.Errorf("plan digest %s: %w", name, err)
	}
	return rep, &disp, nil
}

// ErrUnknownDigest: the config has no [[digest]] of that name.
var ErrUnknownDigest = errors.New("unknown digest")
