package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/aicr-dev/aicr/audit"
)

// HoldLease renews the store's lease on a running run until the returned
// stop is called, so no daemon's recovery takes a run a live process is
// working on. Renewal failures are logged, not fatal: the worst case is a
// run recovered and done twice, which beats stopping the review.
func HoldLease(ctx context.Context, store *audit.Store, runID int64, log *slog.Logger) (stop func()) {
	every := store.LeaseTTL() / 4
	if every <= 0 {
		every = time.Second
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := store.RenewLease(ctx, runID); err != nil && ctx.Err() == nil {
					log.Warn("renew run lease", "run_id", runID, "err", err)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
