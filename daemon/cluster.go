package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/aicr-dev/aicr/audit"
)

// HeartbeatEvery is how often a daemon records that it is alive;
// LiveWithin is how recent a heartbeat must be for the daemon to count as
// alive (three missed beats).
const (
	HeartbeatEvery = 10 * time.Second
	LiveWithin     = 3 * HeartbeatEvery
)

// heartbeat records this daemon (its Options.Version and listen address)
// in the store's daemons table until ctx ends, then removes its row (a
// killed daemon's row just goes stale).
func heartbeat(ctx context.Context, store *audit.Store, version, listen string, log *slog.Logger) {
	beat := func() {
		if err := store.Heartbeat(ctx, version, listen); err != nil && ctx.Err() == nil {
			log.Warn("heartbeat", "err", err)
		}
	}
	beat()
	t := time.NewTicker(HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			bye, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = store.Farewell(bye)
			return
		case <-t.C:
			beat()
		}
	}
}

// singleton wraps a job that must not run on two daemons (or twice in one)
// at once: reconcilers, the spool drain, retention. A tick that finds the
// job running elsewhere is skipped; the holder does the work.
func singleton(ctx context.Context, store *audit.Store, log *slog.Logger, name string, job func()) func() {
	return func() {
		release, ok, err := store.TryJobLock(ctx, name)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("job lock; skipping this tick", "job", name, "err", err)
			}
			return
		}
		if !ok {
			log.Debug("job runs elsewhere; skipping this tick", "job", name)
			return
		}
		defer release()
		job()
	}
}
