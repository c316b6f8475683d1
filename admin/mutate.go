package admin

import (
	"context"
	"errors"
	"fmt"
	"github.com/aicr-dev/aicr/config"
	"os"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// RunRetryInput is run_retry's input (aicr run retry): one failed run by
// id, or every failed run since a time.
type RunRetryInput struct {
	RunID       int64  `json:"run_id,omitempty" jsonschema:"the failed run to queue again; or give failed_since"`
	FailedSince string `json:"failed_since,omitempty" jsonschema:"queue again every run that failed within this duration (24h) or since this RFC 3339 time"`
	Repo        string `json:"repo,omitempty" jsonschema:"with failed_since: only runs of this repo"`
	TwoPhase
}

// RunRetryOutput is run_retry's result; Queued lists the runs queued
// again (what aicr run retry --format json printed before plans).
type RunRetryOutput struct {
	Outcome
	Queued []int64 `json:"queued"`
}

// RunRetry queues failed runs again, keeping their ids.
func (a *Admin) RunRetry(ctx context.Context, in RunRetryInput) (RunRetryOutput, error) {
	switch {
	case in.RunID != 0 && in.FailedSince != "":
		return RunRetryOutput{}, invalid("give run_id or failed_since, not both", "both run_id and failed_since were given")
	case in.RunID == 0 && in.FailedSince == "":
		return RunRetryOutput{}, invalidOnCLI("give run_id (a failed run from runs_list with status failed) or failed_since (e.g. 24h)",
			"give RUN_ID (a failed run from aicr audit list --status failed) or --failed --since T (e.g. 24h)", "no run_id and no failed_since")
	case in.RunID < 0:
		return RunRetryOutput{}, checkRunID(in.RunID)
	case in.Repo != "" && in.FailedSince == "":
		return RunRetryOutput{}, invalid("repo narrows failed_since; leave it out with run_id", "repo given without failed_since")
	}
	var since time.Time
	if in.FailedSince != "" {
		var err error
		if since, err = ParseSince(in.FailedSince, a.d.Now()); err != nil {
			return RunRetryOutput{}, err
		}
	}
	out, err := a.run(ctx, mutation{
		tool: "run_retry",
		plan: func(ctx context.Context, store *audit.Store, _ *config.Config) ([]Change, string, error) {
			if in.RunID != 0 {
				r, err := getRun(ctx, store, in.RunID)
				if err != nil {
					return nil, "", err
				}
				switch {
				case r.DryRun:
					return nil, "", mcperr.New(mcperr.PolicyBlocked, "run aicr review --dry-run again for a new dry run",
						"%s was a dry run; dry runs are never queued again", describe(r.RunSummary))
				case r.Status != audit.RunFailed:
					return nil, "", mcperr.New(mcperr.PolicyBlocked, "only failed runs are queued again; for a new review of the revision run aicr review",
						"%s has not failed (it is %s)", describe(r.RunSummary), r.Status)
				}
				return []Change{retryChange(r.RunSummary)}, "", nil
			}
			runs, err := store.FailedSince(ctx, since, in.Repo)
			if err != nil {
				return nil, "", storeErr(err)
			}
			changes := make([]Change, 0, len(runs))
			for _, r := range runs {
				changes = append(changes, retryChange(r))
			}
			return changes, "", nil
		},
		apply: func(ctx context.Context, store *audit.Store, _ *config.Config, c Change) error {
			return storeErr(store.RetryRun(ctx, c.ID))
		},
		verify: func(ctx context.Context, store *audit.Store, _ *config.Config, c Change) error {
			r, err := getRun(ctx, store, c.ID)
			if err != nil {
				return err
			}
			// A daemon may claim it at once; failed again is impossible
			// this fast, but anything but failed means it was re-queued.
			if r.Status == audit.RunFailed {
				return fmt.Errorf("run %d is still failed", c.ID)
			}
			return nil
		},
	}, in.TwoPhase)
	if err != nil {
		return RunRetryOutput{}, err
	}
	res := RunRetryOutput{Outcome: out, Queued: []int64{}}
	for _, c := range out.Applied {
		res.Queued = append(res.Queued, c.ID)
	}
	return res, nil
}

func retryChange(r audit.RunSummary) Change {
	return Change{Action: "retry_run", Kind: "run", ID: r.ID, Repo: r.Repo, From: string(audit.RunFailed), To: string(audit.RunQueued),
		Detail: fmt.Sprintf("%s, failed %s: %s", vcs.RevisionText(vcs.Kind(r.VCS), r.Revision), r.FinishedAt.UTC().Format(time.RFC3339), firstLine(r.Error, 200))}
}

func getRun(ctx context.Context, store *audit.Store, id int64) (*audit.RunDetail, error) {
	r, err := store.GetRun(ctx, id)
	if errors.Is(err, audit.ErrNotFound) {
		return nil, mcperr.New(mcperr.NotFound, "list runs with runs_list", "no run %d in %s", id, store.Path()).OnCLI("list runs with aicr audit list")
	}
	if err != nil {
		return nil, storeErr(err)
	}
	return r, nil
}

// RunCancelInput is run_cancel's input (aicr run cancel).
type RunCancelInput struct {
	RunID  int64  `json:"run_id" jsonschema:"the queued run to cancel"`
	Reason string `json:"reason,omitempty" jsonschema:"why, kept in the run's record"`
	TwoPhase
}

// RunCancel ends a queued run (waiting, retrying or held by a pause) as
// skipped with reason cancelled. A running run is refused: the worker
// that claimed it owns it until it finishes.
func (a *Admin) RunCancel(ctx context.Context, in RunCancelInput) (Outcome, error) {
	if err := checkRunID(in.RunID); err != nil {
		return Outcome{}, err
	}
	why := "cancelled"
	if a.d.Actor != "" {
		why += " by " + a.d.Actor
	}
	if in.Reason != "" {
		why += ": " + in.Reason
	}
	return a.run(ctx, mutation{
		tool: "run_cancel",
		plan: func(ctx context.Context, store *audit.Store, _ *config.Config) ([]Change, string, error) {
			r, err := getRun(ctx, store, in.RunID)
			if err != nil {
				return nil, "", err
			}
			switch {
			case r.Status == audit.RunRunning:
				return nil, "", mcperr.New(mcperr.PolicyBlocked,
					"wait for it to finish (runs_list), or pause the repo (repo_pause) to hold its next runs",
					"%s is running (pid %d on %s); a run cannot be cancelled mid-review", describe(r.RunSummary), r.Lease.PID, r.Lease.Host).
					OnCLI("wait for it to finish (aicr audit list), or pause the repo (aicr repo pause NAME) to hold its next runs")
			case r.Status != audit.RunQueued:
				return nil, "", mcperr.New(mcperr.PolicyBlocked, "only queued runs can be cancelled",
					"%s is already %s", describe(r.RunSummary), r.Status)
			}
			from := "queued"
			switch {
			case r.RepoPaused:
				from = "queued (held: repo paused)"
			case r.Retrying():
				from = "queued (retrying)"
			}
			return []Change{{Action: "cancel_run", Kind: "run", ID: r.ID, Repo: r.Repo, From: from,
				To: "skipped (" + audit.SkipCancelled + ")", Detail: vcs.RevisionText(vcs.Kind(r.VCS), r.Revision) + prefixed(": ", in.Reason)}}, "", nil
		},
		apply: func(ctx context.Context, store *audit.Store, _ *config.Config, c Change) error {
			err := store.CancelRun(ctx, c.ID, why)
			if errors.Is(err, audit.ErrNotQueued) {
				return mcperr.New(mcperr.PolicyBlocked, "only queued runs can be cancelled", "%v", err)
			}
			return storeErr(err)
		},
		verify: func(ctx context.Context, store *audit.Store, _ *config.Config, c Change) error {
			r, err := getRun(ctx, store, c.ID)
			if err != nil {
				return err
			}
			if r.Status != audit.RunSkipped || r.SkipReason != audit.SkipCancelled {
				return fmt.Errorf("run %d is %s (%s)", c.ID, r.Status, r.SkipReason)
			}
			return nil
		},
	}, in.TwoPhase)
}

// DispatchRetryInput is dispatch_retry's input (aicr dispatch retry --queue).
type DispatchRetryInput struct {
	DispatchID int64 `json:"dispatch_id" jsonschema:"the failed, dead or unknown-outcome delivery to re-drive (see dispatch_list)"`
	TwoPhase
}

// DispatchRetryOutput is dispatch_retry's result: the row after the
// retry and whether it was only queued for the daemon.
type DispatchRetryOutput struct {
	Outcome
	Dispatch *delivery.Dispatch `json:"dispatch,omitempty"`
	Queued   bool               `json:"queued"`
}

// DispatchRetry puts a failed, dead or unknown delivery back to pending
// with a fresh give-up window; the daemon's dispatcher sends it. (The
// CLI without --queue also makes the first attempt itself.)
func (a *Admin) DispatchRetry(ctx context.Context, in DispatchRetryInput) (DispatchRetryOutput, error) {
	if in.DispatchID < 1 {
		return DispatchRetryOutput{}, invalidOnCLI("give dispatch_id, a positive id from dispatch_list", "give ID, a positive id from aicr dispatch list", "dispatch_id %d is not a delivery id", in.DispatchID)
	}
	out, err := a.run(ctx, mutation{
		tool: "dispatch_retry",
		plan: func(ctx context.Context, store *audit.Store, _ *config.Config) ([]Change, string, error) {
			d, err := getDispatch(ctx, store, in.DispatchID)
			if err != nil {
				return nil, "", err
			}
			switch d.Status {
			case delivery.StatusFailed, delivery.StatusDead, delivery.StatusUnknown:
			default:
				return nil, "", mcperr.New(mcperr.PolicyBlocked, "only failed, dead or unknown-outcome deliveries are re-driven",
					"dispatch %d (run %d to %s) is %s", d.ID, d.RunID, d.Channel, d.Status)
			}
			return []Change{{Action: "retry_dispatch", Kind: "dispatch", ID: d.ID, From: string(d.Status), To: string(delivery.StatusPending),
				Detail: fmt.Sprintf("run %d to %s after %d attempt(s): %s", d.RunID, d.Channel, d.Attempts, firstLine(d.LastError, 200))}}, "", nil
		},
		apply: func(ctx context.Context, store *audit.Store, _ *config.Config, c Change) error {
			_, err := store.RetryDispatch(ctx, c.ID)
			if errors.Is(err, audit.ErrNotRetryable) {
				return mcperr.New(mcperr.PolicyBlocked, "only failed, dead or unknown-outcome deliveries are re-driven", "%v", err)
			}
			return storeErr(err)
		},
		verify: func(ctx context.Context, store *audit.Store, _ *config.Config, c Change) error {
			d, err := getDispatch(ctx, store, c.ID)
			if err != nil {
				return err
			}
			// The daemon may have sent it already; still failed with no
			// attempt since is what must not be.
			if d.Status != delivery.StatusPending && d.Status != delivery.StatusSent && d.Attempts == 0 {
				return fmt.Errorf("dispatch %d is %s", c.ID, d.Status)
			}
			return nil
		},
	}, in.TwoPhase)
	if err != nil {
		return DispatchRetryOutput{}, err
	}
	res := DispatchRetryOutput{Outcome: out, Queued: out.Confirmed}
	if out.Confirmed {
		store, _, err := a.readStore(ctx)
		if err != nil {
			return DispatchRetryOutput{}, err
		}
		defer store.Close()
		d, err := getDispatch(ctx, store, in.DispatchID)
		if err != nil {
			return DispatchRetryOutput{}, err
		}
		res.Dispatch = &d
	}
	return res, nil
}

func getDispatch(ctx context.Context, store *audit.Store, id int64) (delivery.Dispatch, error) {
	d, err := store.GetDispatch(ctx, id)
	if errors.Is(err, audit.ErrNotFound) {
		return delivery.Dispatch{}, mcperr.New(mcperr.NotFound, "list deliveries with dispatch_list", "no dispatch %d in %s", id, store.Path()).OnCLI("list deliveries with aicr dispatch list")
	}
	if err != nil {
		return delivery.Dispatch{}, storeErr(err)
	}
	return d, nil
}

// RepoPauseInput is repo_pause's input (aicr repo pause).
type RepoPauseInput struct {
	Repo   string `json:"repo" jsonschema:"the [[repo]] name"`
	Reason string `json:"reason,omitempty" jsonschema:"why, shown by queue_status and aicr queue status"`
	TwoPhase
}

// RepoInput names a repo (repo_resume).
type RepoInput struct {
	Repo string `json:"repo" jsonschema:"the [[repo]] name"`
	TwoPhase
}

// RepoPause holds a repo's reviews: its events are still recorded and
// queued, no worker claims its runs until RepoResume.
func (a *Admin) RepoPause(ctx context.Context, in RepoPauseInput) (Outcome, error) {
	if in.Repo == "" {
		return Outcome{}, invalid("give repo, a [[repo]] name of the config", "repo is required")
	}
	return a.run(ctx, mutation{
		tool: "repo_pause",
		plan: func(ctx context.Context, store *audit.Store, cfg *config.Config) ([]Change, string, error) {
			if _, ok := cfg.Repo(in.Repo); !ok {
				return nil, "", unknownRepo(cfg, in.Repo)
			}
			p, paused, err := store.RepoPaused(ctx, in.Repo)
			if err != nil {
				return nil, "", storeErr(err)
			}
			if paused {
				return nil, fmt.Sprintf("repo %s is already paused since %s%s.", in.Repo, p.PausedAt.UTC().Format(time.RFC3339), prefixed(" by ", p.PausedBy)), nil
			}
			q, err := store.Queue(ctx)
			if err != nil {
				return nil, "", storeErr(err)
			}
			return []Change{{Action: "pause_repo", Kind: "repo", Repo: in.Repo, From: "active", To: "paused",
				Detail: fmt.Sprintf("%d queued run(s) will be held; new events are still recorded and queued; running reviews finish", queuedOf(q, in.Repo))}}, "", nil
		},
		apply: func(ctx context.Context, store *audit.Store, _ *config.Config, c Change) error {
			_, _, err := store.PauseRepo(ctx, c.Repo, a.d.Actor, in.Reason)
			return storeErr(err)
		},
		verify: func(ctx context.Context, store *audit.Store, _ *config.Config, c Change) error {
			_, paused, err := store.RepoPaused(ctx, c.Repo)
			if err != nil {
				return fmt.Errorf("repo %s is not paused (%w)", c.Repo, err)
			}
			if !paused {
				return fmt.Errorf("repo %s is not paused", c.Repo)
			}
			return nil
		},
	}, in.TwoPhase)
}

// RepoResume releases a paused repo's held runs, in queue order.
func (a *Admin) RepoResume(ctx context.Context, in RepoInput) (Outcome, error) {
	if in.Repo == "" {
		return Outcome{}, invalidOnCLI("give repo, a paused repo's name (queue_status lists them)", "give NAME, a paused repo's name (aicr queue status lists them)", "repo is required")
	}
	return a.run(ctx, mutation{
		tool: "repo_resume",
		plan: func(ctx context.Context, store *audit.Store, cfg *config.Config) ([]Change, string, error) {
			_, paused, err := store.RepoPaused(ctx, in.Repo)
			if err != nil {
				return nil, "", storeErr(err)
			}
			if !paused {
				// A repo removed from the config may still be paused; one
				// neither paused nor configured is a typo.
				if _, ok := cfg.Repo(in.Repo); !ok {
					return nil, "", unknownRepo(cfg, in.Repo)
				}
				return nil, fmt.Sprintf("repo %s is not paused.", in.Repo), nil
			}
			q, err := store.Queue(ctx)
			if err != nil {
				return nil, "", storeErr(err)
			}
			return []Change{{Action: "resume_repo", Kind: "repo", Repo: in.Repo, From: "paused", To: "active",
				Detail: fmt.Sprintf("%d held run(s) will be reviewed in queue order", queuedOf(q, in.Repo))}}, "", nil
		},
		apply: func(ctx context.Context, store *audit.Store, _ *config.Config, c Change) error {
			_, err := store.ResumeRepo(ctx, c.Repo)
			return storeErr(err)
		},
		verify: func(ctx context.Context, store *audit.Store, _ *config.Config, c Change) error {
			_, paused, err := store.RepoPaused(ctx, c.Repo)
			if err != nil {
				return fmt.Errorf("repo %s is still paused (%w)", c.Repo, err)
			}
			if paused {
				return fmt.Errorf("repo %s is still paused", c.Repo)
			}
			return nil
		},
	}, in.TwoPhase)
}

func unknownRepo(cfg *config.Config, name string) error {
	return mcperr.New(mcperr.NotFound, "use one of: "+strings.Join(cfg.RepoNames(), ", "), "no [[repo]] named %q in %s", name, cfg.Path)
}

func queuedOf(q audit.QueueStatus, repo string) int {
	for _, r := range q.Repos {
		if r.Repo == repo {
			return r.Queued
		}
	}
	return 0
}

// PruneInput is prune's input (aicr prune).
type PruneInput struct {
	OlderThan string `json:"older_than,omitempty" jsonschema:"remove the directories of runs finished longer ago than this duration (720h); default [retention] run_dirs"`
	TwoPhase
}

// pruneBatch bounds one prune's plan, so a plan stays readable; the
// message says when more remain.
const pruneBatch = 500

// Prune removes the run directories (<data_dir>/runs/<id>) of runs
// finished before the cutoff, as the daemon's retention job does; the
// rows, problems and dispatches stay in the audit.
func (a *Admin) Prune(ctx context.Context, in PruneInput) (Outcome, error) {
	var keep time.Duration
	if in.OlderThan != "" {
		d, err := time.ParseDuration(in.OlderThan)
		if err != nil || d <= 0 {
			return Outcome{}, invalid("give a positive duration such as 720h", "older_than %q is not a positive duration", in.OlderThan)
		}
		keep = d
	}
	return a.run(ctx, mutation{
		tool: "prune",
		plan: func(ctx context.Context, store *audit.Store, cfg *config.Config) ([]Change, string, error) {
			keep := keep
			if keep == 0 {
				keep = cfg.Daemon.KeepRunsFor
			}
			if keep <= 0 {
				return nil, "", mcperr.New(mcperr.PolicyBlocked, "give older_than to prune anyway, or set [retention] run_dirs",
					"[retention] run_dirs = 0 keeps run directories forever")
			}
			cutoff := a.d.Now().Add(-keep)
			ids, err := store.RunsToPrune(ctx, cutoff, pruneBatch)
			if err != nil {
				return nil, "", storeErr(err)
			}
			changes := make([]Change, 0, len(ids))
			for _, id := range ids {
				changes = append(changes, Change{Action: "remove_run_dir", Kind: "run", ID: id, From: "kept", To: "pruned",
					Detail: runDir(cfg, id)})
			}
			note := fmt.Sprintf("Runs finished before %s (older than %s).", cutoff.UTC().Format(time.RFC3339), keep)
			if len(ids) == pruneBatch {
				note += fmt.Sprintf(" More than %d are due: call again after this one.", pruneBatch)
			}
			return changes, note, nil
		},
		apply: func(ctx context.Context, store *audit.Store, cfg *config.Config, c Change) error {
			ok, err := store.MarkRunDirPruned(ctx, c.ID)
			if err != nil {
				return storeErr(err)
			}
			if !ok {
				return mcperr.New(mcperr.ConfirmationRequired, "call prune without confirm to see the current plan",
					"run %d was queued or claimed again since the plan; its directory is in use", c.ID)
			}
			if err := os.RemoveAll(runDir(cfg, c.ID)); err != nil {
				return mcperr.New(mcperr.Internal, "remove it by hand as the data_dir's owner", "run %d is marked pruned but its directory stays: %v", c.ID, err)
			}
			return nil
		},
		verify: func(_ context.Context, _ *audit.Store, cfg *config.Config, c Change) error {
			_, err := os.Lstat(runDir(cfg, c.ID))
			if err == nil {
				return fmt.Errorf("%s still exists", runDir(cfg, c.ID))
			}
			if !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s still exists (%w)", runDir(cfg, c.ID), err)
			}
			return nil
		},
	}, in.TwoPhase)
}

// runDir is derived from the id, never from the run_dir column, so a
// row cannot point a removal elsewhere (as the retention job does).
func runDir(cfg *config.Config, id int64) string {
	return rundir.ForRun(cfg.Daemon.DataDir, id).Dir()
}

func firstLine(s string, max int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
