package daemon

import (
	"context"
	"os"

	"github.com/aicr-dev/aicr/rundir"
)

// pruneBatch bounds one pass's listing; the pass repeats until nothing is
// left, so a backlog of months is still cleared in one run of the job.
const pruneBatch = 500

// pruneRunDirs removes the directories of runs finished longer than
// [retention] run_dirs ago and returns how many it removed; their rows,
// problems and dispatches stay in the audit.
func (r *retention) pruneRunDirs(ctx context.Context) (int, error) {
	keep := r.cfg.RunDirs
	if keep <= 0 {
		return 0, nil
	}
	cutoff := r.now().Add(-keep)
	removed := 0
	for ctx.Err() == nil {
		ids, err := r.store.RunsToPrune(ctx, cutoff, pruneBatch)
		if err != nil {
			return removed, err
		}
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			ok, err := r.store.MarkRunDirPruned(ctx, id)
			if err != nil {
				return removed, err
			}
			if !ok {
				continue // re-queued or claimed since listed: in use again
			}
			dir := r.runDir(id)
			if err := os.RemoveAll(dir); err != nil {
				// Marked already, so the next pass will not retry: say so
				// loudly, with the path for the operator.
				r.log.Error("prune run dir", "run_id", id, "dir", dir, "err", err)
				continue
			}
			removed++
		}
		if len(ids) < pruneBatch {
			break
		}
	}
	return removed, ctx.Err()
}

// pruneAllRunDirs is the run-directory step of the job: errors are
// logged, the daemon keeps serving.
func (r *retention) pruneAllRunDirs(ctx context.Context) {
	n, err := r.pruneRunDirs(ctx)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("prune run directories", "err", err)
	}
	if n > 0 {
		r.log.Info("pruned run directories", "count", n, "keep_runs_for", r.cfg.RunDirs.String())
	}
	n, err = r.pruneFinishedElsewhere(ctx)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("remove directories of runs another daemon finished", "err", err)
	}
	if n > 0 {
		r.log.Info("removed directories of runs another daemon finished", "count", n)
	}
}

// pruneFinishedElsewhere removes this data_dir's directories of runs that
// another daemon on the shared store took over and finished (this one was
// killed mid-review): no retention query lists them here any more, and
// they may hold copies of a leaked secret. Only on a shared store.
func (r *retention) pruneFinishedElsewhere(ctx context.Context) (int, error) {
	if r.store.RunHome() == "" {
		return 0, nil
	}
	entries, err := os.ReadDir(rundir.RunsDir(r.dataDir))
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	var ids []int64
	for _, e := range entries {
		if id, ok := rundir.ParseRunID(e.Name()); ok && e.IsDir() {
			ids = append(ids, id)
		}
	}
	removed := 0
	for len(ids) > 0 && ctx.Err() == nil {
		batch := ids[:min(len(ids), pruneBatch)]
		ids = ids[len(batch):]
		gone, err := r.store.RunsFinishedElsewhere(ctx, batch)
		if err != nil {
			return removed, err
		}
		for _, id := range gone {
			dir := r.runDir(id)
			if err := os.RemoveAll(dir); err != nil {
				r.log.Error("remove the directory of a run another daemon finished", "run_id", id, "dir", dir, "err", err)
				continue
			}
			removed++
		}
	}
	return removed, ctx.Err()
}
