package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aicr-dev/aicr/audit"
)

// pruneBatch bounds one pass's listing; the pass repeats until nothing is
// left, so a backlog of months is still cleared in one run of the job.
const pruneBatch = 500

// runPruner removes the directories of runs finished longer than keep
// ago. Their rows, problems and dispatches stay in the audit.
type runPruner struct {
	store   *audit.Store
	dataDir string
	keep    time.Duration
	now     func() time.Time
	log     *slog.Logger
}

// prune removes what is due and returns how many directories it removed.
// The path removed is always <data_dir>/runs/<id>, derived from the id,
// never the run_dir column, so a row cannot point the job elsewhere.
func (p *runPruner) prune(ctx context.Context) (int, error) {
	if p.keep <= 0 {
		return 0, nil
	}
	cutoff := p.now().Add(-p.keep)
	removed := 0
	for ctx.Err() == nil {
		ids, err := p.store.RunsToPrune(ctx, cutoff, pruneBatch)
		if err != nil {
			return removed, err
		}
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			ok, err := p.store.MarkRunDirPruned(ctx, id)
			if err != nil {
				return removed, err
			}
			if !ok {
				continue // re-queued or claimed since listed: in use again
			}
			dir := filepath.Join(p.dataDir, "runs", strconv.FormatInt(id, 10))
			if err := os.RemoveAll(dir); err != nil {
				// Marked already, so the next pass will not retry: say so
				// loudly, with the path for the operator.
				p.log.Error("prune run dir", "run_id", id, "dir", dir, "err", err)
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

// run is the job body: errors are logged, the daemon keeps serving.
func (p *runPruner) run(ctx context.Context) {
	n, err := p.prune(ctx)
	if err != nil && ctx.Err() == nil {
		p.log.Warn("prune run directories", "err", err)
	}
	if n > 0 {
		p.log.Info("pruned run directories", "count", n, "keep_runs_for", p.keep.String())
	}
	n, err = p.pruneFinishedElsewhere(ctx)
	if err != nil && ctx.Err() == nil {
		p.log.Warn("remove directories of runs another daemon finished", "err", err)
	}
	if n > 0 {
		p.log.Info("removed directories of runs another daemon finished", "count", n)
	}
}

// pruneFinishedElsewhere removes this data_dir's directories of runs that
// another daemon on the shared store took over and finished (this one was
// killed mid-review): no retention query lists them here any more, and
// they may hold copies of a leaked secret. Only on a shared store.
func (p *runPruner) pruneFinishedElsewhere(ctx context.Context) (int, error) {
	if p.store.RunHome() == "" {
		return 0, nil
	}
	entries, err := os.ReadDir(filepath.Join(p.dataDir, "runs"))
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	var ids []int64
	for _, e := range entries {
		if id, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && e.IsDir() && id > 0 {
			ids = append(ids, id)
		}
	}
	removed := 0
	for len(ids) > 0 && ctx.Err() == nil {
		batch := ids[:min(len(ids), pruneBatch)]
		ids = ids[len(batch):]
		gone, err := p.store.RunsFinishedElsewhere(ctx, batch)
		if err != nil {
			return removed, err
		}
		for _, id := range gone {
			dir := filepath.Join(p.dataDir, "runs", strconv.FormatInt(id, 10))
			if err := os.RemoveAll(dir); err != nil {
				p.log.Error("remove the directory of a run another daemon finished", "run_id", id, "dir", dir, "err", err)
				continue
			}
			removed++
		}
	}
	return removed, ctx.Err()
}
