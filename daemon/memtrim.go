package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/aicr-dev/aicr/internal/memtrim"
)

// trimSettle lets the workers' first queue poll and the jobs' first runs
// touch what they need before the start-up pages are given back.
const trimSettle = time.Second

// trimEvery is how often an idle daemon checks whether a burst of work
// has ended since it last gave memory back.
const trimEvery = 5 * time.Minute

// trimWhenIdle gives back the memory start-up needed (package
// initialisers, building the parts) and, after each burst of reviews, what
// the burst needed (model SDKs, Markdown rendering, review rules), so an
// idle daemon holds only what idling takes. It never trims while a review
// runs: the pages it drops would fault straight back in.
func trimWhenIdle(ctx context.Context, pipe *Pipeline, log *slog.Logger) {
	trim := func(why string) {
		st, err := memtrim.Trim()
		if err != nil {
			log.Debug("give memory back", "after", why, "err", err)
			return
		}
		log.Debug("gave memory back", "after", why, "executable_bytes", st.ExecutableBytes)
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(trimSettle):
	}
	trim("start")
	trimmedAt := pipe.finished.Load()
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if done := pipe.finished.Load(); done != trimmedAt && pipe.active.Load() == 0 {
			trim("reviews")
			trimmedAt = done
		}
	}
}
