package daemon

import (
	"context"
	"log/slog"
	"runtime"
	"time"

	"github.com/aicr-dev/aicr/internal/memtrim"
)

// trimSettle lets the workers' first queue poll and the jobs' first runs
// touch what they need before the start-up pages are given back.
const trimSettle = time.Second

// trimEvery is how often an idle daemon checks whether a burst of work
// has ended since it last gave memory back.
const trimEvery = 5 * time.Minute

// gcTrimGap is the least time between two trims after garbage
// collections: an idle daemon collects every two minutes (the runtime
// forces it), a busy intake many times a second.
const gcTrimGap = time.Minute

// trimWhenIdle gives back the memory start-up needed (package
// initialisers, building the parts) and, after each burst of reviews, what
// the burst needed (model SDKs, Markdown rendering, review rules), so an
// idle daemon holds only what idling takes. Each garbage collection reads
// stack maps and type data spread over the executable (measured: 5 MB of
// pages back after the collection the runtime forces every two minutes),
// so a collection while no review runs is followed by a trim too. It never
// trims while a review runs: the pages it drops would fault straight back
// in.
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
	lastTrim := time.Now()
	trimmedAt := pipe.finished.Load()
	collected := afterEachGC(ctx)
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-collected:
			// The trim's own collection lands here too, inside the gap.
			if pipe.active.Load() == 0 && time.Since(lastTrim) >= gcTrimGap {
				trim("garbage collection")
				lastTrim = time.Now()
			}
		case <-t.C:
			if done := pipe.finished.Load(); done != trimmedAt && pipe.active.Load() == 0 {
				trim("reviews")
				lastTrim = time.Now()
				trimmedAt = done
			}
		}
	}
}

// gcSentinel is big enough to stay out of the tiny allocator, whose
// shared blocks can keep a finalizer from ever running.
type gcSentinel struct{ _ [16]byte }

// afterEachGC signals once per garbage collection until ctx ends: a
// finalizer runs once the collector found its object unreachable, and
// arms the next one. The runtime offers no other hook.
func afterEachGC(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	var arm func()
	arm = func() {
		runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
			if ctx.Err() != nil {
				return
			}
			select {
			case ch <- struct{}{}:
			default:
			}
			arm()
		})
	}
	arm()
	return ch
}
