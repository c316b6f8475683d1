package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// reconciler finds changes whose hook or trigger never fired (a hook
// removed by an upgrade, a VCS host whose network was down longer than the
// spool was kept) and enqueues them with source "reconcile". It walks each
// repo from a stored high-water mark, so a change is looked at once.
type reconciler struct {
	store *audit.Store
	log   *slog.Logger
	now   func() time.Time
	wake  func()
	// metrics is nil in tests that reconcile without a daemon.
	metrics *Metrics
	// mu serialises ticks of one repo when a slow tick meets the next.
	mu sync.Mutex
}

// tick reconciles one repo; it is safe to call concurrently.
func (r *reconciler) tick(ctx context.Context, repo config.Repo, adapter vcs.Adapter) (enqueued int, err error) {
	lister, ok := adapter.(vcs.Lister)
	if !ok {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	log := r.log.With("repo", repo.Name)

	mark, ok, err := r.store.RepoMark(ctx, repo.Name)
	if err != nil {
		return 0, err
	}
	if !ok {
		if !repo.ReconcileBackfill {
			// First start: history before aicr was installed is not
			// reviewed unless the operator asks for it.
			head, err := lister.Head(ctx)
			if err != nil {
				return 0, err
			}
			log.Info("reconciler starts at the current head", "head", head)
			return 0, r.store.SetRepoMark(ctx, repo.Name, head)
		}
		mark = "0"
	}
	ids, err := lister.ChangesAfter(ctx, mark, repo.ReconcileMax)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		ev := triggers.Event{V: triggers.ProtocolVersion, VCS: string(repo.Kind), Repo: repo.Name, Revision: id, Source: triggers.SourceReconcile, SentAt: r.now().UTC()}
		res, err := r.store.Enqueue(ctx, ev, triggers.SourceReconcile, r.now())
		if err != nil {
			return enqueued, err
		}
		r.metrics.enqueued(triggers.SourceReconcile, res)
		switch {
		case res.Requeued:
			enqueued++
			log.Info("reconciler re-queued a change whose review had failed", "revision", id, "run_id", res.RunID)
		case !res.Duplicate:
			enqueued++
			log.Info("reconciler found a change no hook reported", "revision", id, "run_id", res.RunID)
		}
		// Advance per change so a failure halfway keeps what was done.
		if err := r.store.SetRepoMark(ctx, repo.Name, id); err != nil {
			return enqueued, err
		}
	}
	if enqueued > 0 {
		r.wake()
	}
	return enqueued, nil
}
