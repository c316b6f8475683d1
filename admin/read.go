package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/budget"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/doctor"
	"github.com/aicr-dev/aicr/mcperr"
)

// RunsListInput filters runs_list (aicr audit list).
type RunsListInput struct {
	Repo   string `json:"repo,omitempty" jsonschema:"only runs of this repo"`
	Status string `json:"status,omitempty" jsonschema:"only runs with this status: queued, retrying (queued for its next attempt), held (queued, repo paused), running, succeeded, failed or skipped"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many runs, newest first (default 20)"`
}

// RunsListOutput is runs_list's result; Runs is exactly what
// `aicr audit list --format json` prints.
type RunsListOutput struct {
	Runs []audit.RunSummary `json:"runs"`
}

// DefaultRunsLimit is runs_list's and aicr audit list's default.
const DefaultRunsLimit = 20

// RunsList lists runs, newest first.
func (a *Admin) RunsList(ctx context.Context, in RunsListInput) (RunsListOutput, error) {
	if in.Status != "" && !audit.RunStatus(in.Status).Listable() {
		return RunsListOutput{}, invalid("use queued, retrying, held, running, succeeded, failed or skipped", "status %q is not a run status", in.Status)
	}
	if in.Limit < 0 {
		return RunsListOutput{}, invalid("give a positive limit, or leave it out for 20", "limit %d is negative", in.Limit)
	}
	if in.Limit == 0 {
		in.Limit = DefaultRunsLimit
	}
	store, _, err := a.readStore(ctx)
	if err != nil {
		return RunsListOutput{}, err
	}
	defer store.Close()
	runs, err := store.ListRuns(ctx, audit.ListOptions{Limit: in.Limit, Repo: in.Repo, Status: audit.RunStatus(in.Status)})
	if err != nil {
		return RunsListOutput{}, storeErr(err)
	}
	if runs == nil {
		runs = []audit.RunSummary{}
	}
	return RunsListOutput{Runs: runs}, nil
}

// RunInput names one run.
type RunInput struct {
	RunID int64 `json:"run_id" jsonschema:"the run's id (see runs_list)"`
}

func checkRunID(id int64) error {
	if id < 1 {
		return invalidOnCLI("give run_id, a positive run id from runs_list", "give RUN_ID, a positive run id from aicr audit list", "run_id %d is not a run id", id)
	}
	return nil
}

// RunInspect is everything recorded about one run (aicr audit show).
func (a *Admin) RunInspect(ctx context.Context, in RunInput) (*audit.RunDetail, error) {
	if err := checkRunID(in.RunID); err != nil {
		return nil, err
	}
	store, _, err := a.readStore(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	d, err := store.GetRun(ctx, in.RunID)
	if errors.Is(err, audit.ErrNotFound) {
		return nil, mcperr.New(mcperr.NotFound, "list runs with runs_list", "no run %d in %s", in.RunID, store.Path()).OnCLI("list runs with aicr audit list")
	}
	if err != nil {
		return nil, storeErr(err)
	}
	return d, nil
}

// DispatchListInput filters dispatch_list (aicr dispatch list).
type DispatchListInput struct {
	Status  string `json:"status,omitempty" jsonschema:"only deliveries with this status: pending, sent, suppressed, failed, dead or unknown"`
	Channel string `json:"channel,omitempty" jsonschema:"only deliveries to this channel"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many deliveries, newest first (default 50)"`
}

// DispatchView is one delivery with its attempts.
type DispatchView struct {
	delivery.Dispatch
	AttemptLog []delivery.Attempt `json:"attempt_log"`
}

// DispatchListOutput is dispatch_list's result; Dispatches is exactly
// what `aicr dispatch list --format json` prints.
type DispatchListOutput struct {
	Dispatches []DispatchView `json:"dispatches"`
}

// DefaultDispatchLimit is dispatch_list's and aicr dispatch list's default.
const DefaultDispatchLimit = 50

// DispatchList lists deliveries, newest first, each with its attempts.
func (a *Admin) DispatchList(ctx context.Context, in DispatchListInput) (DispatchListOutput, error) {
	if in.Status != "" && !delivery.Status(in.Status).Valid() {
		return DispatchListOutput{}, invalid("use pending, sent, suppressed, failed, dead or unknown", "status %q is not a delivery status", in.Status)
	}
	if in.Limit < 0 {
		return DispatchListOutput{}, invalid("give a positive limit, or leave it out for 50", "limit %d is negative", in.Limit)
	}
	if in.Limit == 0 {
		in.Limit = DefaultDispatchLimit
	}
	store, _, err := a.readStore(ctx)
	if err != nil {
		return DispatchListOutput{}, err
	}
	defer store.Close()
	list, err := store.ListDispatches(ctx, audit.DispatchFilter{Status: delivery.Status(in.Status), Channel: in.Channel, Limit: in.Limit})
	if err != nil {
		return DispatchListOutput{}, storeErr(err)
	}
	out := DispatchListOutput{Dispatches: make([]DispatchView, 0, len(list))}
	for _, d := range list {
		v, err := ViewDispatch(ctx, store, d)
		if err != nil {
			return DispatchListOutput{}, storeErr(err)
		}
		out.Dispatches = append(out.Dispatches, v)
	}
	return out, nil
}

// ViewDispatch adds d's attempts.
func ViewDispatch(ctx context.Context, store *audit.Store, d delivery.Dispatch) (DispatchView, error) {
	attempts, err := store.DispatchAttempts(ctx, d.ID)
	if err != nil {
		return DispatchView{}, err
	}
	if attempts == nil {
		attempts = []delivery.Attempt{}
	}
	return DispatchView{Dispatch: d, AttemptLog: attempts}, nil
}

// QueueView is the queue by repo and the [[budget]]s' spend in their
// current periods.
type QueueView struct {
	audit.QueueStatus
	// Budgets are the config's budgets, in config order; empty without any.
	Budgets []budget.Status `json:"budgets"`
}

// QueueStatus is the queue by repo, with paused repos and held runs, and
// what each budget has spent of its limit (aicr queue status).
func (a *Admin) QueueStatus(ctx context.Context, _ NoInput) (QueueView, error) {
	store, cfg, err := a.readStore(ctx)
	if err != nil {
		return QueueView{}, err
	}
	defer store.Close()
	q, err := store.Queue(ctx)
	if err != nil {
		return QueueView{}, storeErr(err)
	}
	// The period is the daemon's: the same zone as this process's clock.
	bs, err := budget.Statuses(ctx, store, cfg.Budgets, a.d.Now())
	if err != nil {
		return QueueView{}, storeErr(err)
	}
	return QueueView{QueueStatus: q, Budgets: bs}, nil
}

// DoctorInput narrows doctor to one repo.
type DoctorInput struct {
	Repo string `json:"repo,omitempty" jsonschema:"check only this [[repo]] (by name)"`
}

// Doctor runs aicr doctor's checks; a failed check is in the report
// (OK false), not an error.
func (a *Admin) Doctor(ctx context.Context, in DoctorInput) (doctor.Report, error) {
	cfg, err := a.config()
	if err != nil {
		return doctor.Report{}, err
	}
	exe := ""
	if a.d.Executable != nil {
		// Used only when the hook cannot be run; a missing path just
		// skips that fallback.
		exe, _ = a.d.Executable()
	}
	rep, err := doctor.Diagnose(ctx, doctor.Options{Config: cfg, Repo: in.Repo, Exe: exe, Version: a.d.Version})
	if errors.Is(err, doctor.ErrUnknownRepo) {
		return doctor.Report{}, mcperr.New(mcperr.NotFound, "name a [[repo]] of the config, or leave repo out", "%v", err)
	}
	if err != nil {
		return doctor.Report{}, mcperr.From(err)
	}
	return rep, nil
}

// ConfigCheckOutput is config_check's result and `aicr config check
// --format json`'s output.
type ConfigCheckOutput struct {
	File     string   `json:"file"`
	OK       bool     `json:"ok"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
	Repos    int      `json:"repos"`
	Channels int      `json:"channels"`
	DataDir  string   `json:"data_dir,omitempty"`
}

// CheckConfig validates path the way the daemon loads it and runs the
// daemon's preflight. Problems are in the output (OK false), not an
// error: reporting them is the tool's job.
func CheckConfig(path string) ConfigCheckOutput {
	res := ConfigCheckOutput{File: path, Errors: []string{}, Warnings: []string{}}
	cfg, err := config.Load(path)
	if err != nil {
		// LoadConfig's message already names file:line for each problem.
		for _, e := range splitJoined(err) {
			res.Errors = append(res.Errors, e.Error())
		}
	} else {
		res.Repos, res.Channels, res.DataDir = len(cfg.Repos), len(cfg.Channels), cfg.Daemon.DataDir
		warnings, err := config.Preflight(cfg)
		// An agent key that cannot be read lets the daemon start but fails
		// every review: for the admin checking the file, it is an error.
		keyErr := config.AgentKeyError(cfg)
		for _, w := range warnings {
			if keyErr == nil || w != keyErr.Error() {
				res.Warnings = append(res.Warnings, w)
			}
		}
		errs := splitJoined(err)
		if keyErr != nil {
			errs = append(errs, fmt.Errorf("%w (every review fails until it can be read)", keyErr))
		}
		for _, e := range errs {
			var located *config.Error
			if errors.As(e, &located) {
				res.Errors = append(res.Errors, e.Error())
				continue
			}
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", path, e))
		}
	}
	res.OK = len(res.Errors) == 0
	return res
}

// ConfigCheck is CheckConfig of the server's config file.
func (a *Admin) ConfigCheck(context.Context, NoInput) (ConfigCheckOutput, error) {
	return CheckConfig(a.d.ConfigPath), nil
}

// splitJoined undoes errors.Join so each problem is its own entry.
func splitJoined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, splitJoined(e)...)
		}
		return out
	}
	return []error{err}
}
