package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/aicr-dev/aicr/im"
)

// buckets holds one token bucket per destination (channel), for channels
// that declare their platform's limit with im.RateLimited. A bucket built
// after a restart starts as if emptied at the channel's last recorded
// send, so a restart never buys a burst the platform would refuse.
type buckets struct {
	store Store
	log   *slog.Logger

	once         sync.Once
	lastSend     map[string]time.Time
	conservative bool // last sends unknown: every bucket starts empty

	mu sync.Mutex
	m  map[string]*rate.Limiter
}

func newBuckets(store Store, log *slog.Logger) *buckets {
	return &buckets{store: store, log: log, m: map[string]*rate.Limiter{}}
}

// SharedRateLimiter is a Store that keeps per-destination token buckets
// in the database, for several daemons sending to the same platforms
// (audit on PostgreSQL): an in-process limiter would let each daemon use
// the platform's whole limit.
type SharedRateLimiter interface {
	SharedRateLimits() bool
	// TakeRateToken takes a token now (0) or says how long to wait.
	TakeRateToken(ctx context.Context, channel string, interval time.Duration, burst int) (time.Duration, error)
}

// bucket is one destination's limiter; the zero value does not throttle.
type bucket struct {
	l      *rate.Limiter
	shared func(context.Context) (time.Duration, error)
}

// load reads the last sends once, before this process claims anything,
// so its own first attempt is not mistaken for a recent send.
func (b *buckets) load(ctx context.Context) {
	b.once.Do(func() {
		last, err := b.store.LastSends(ctx)
		if err != nil {
			b.log.Warn("read last sends; rate limits start empty", "err", err)
			b.conservative = true
		}
		b.lastSend = last
	})
}

func (b *buckets) forChannel(ctx context.Context, ch im.Channel) bucket {
	rl, ok := ch.(im.RateLimited)
	if !ok {
		return bucket{}
	}
	b.load(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	if l, ok := b.m[ch.Name()]; ok {
		return bucket{l: l}
	}
	lim, burst := rl.RateLimit()
	if lim == rate.Inf {
		return bucket{}
	}
	burst = max(burst, 1)
	if sh, ok := b.store.(SharedRateLimiter); ok && sh.SharedRateLimits() && lim > 0 {
		interval := time.Duration(float64(time.Second) / float64(lim))
		return bucket{shared: func(ctx context.Context) (time.Duration, error) {
			return sh.TakeRateToken(ctx, ch.Name(), interval, burst)
		}}
	}
	l := rate.NewLimiter(lim, burst)
	if at, ok := b.lastSend[ch.Name()]; ok {
		l.ReserveN(at, burst)
	} else if b.conservative {
		l.ReserveN(time.Now(), burst)
	}
	b.m[ch.Name()] = l
	return bucket{l: l}
}

// wait takes the destination's next token and returns how long it had to
// wait for it: 0 when a token was free (most sends), so the rate-limit
// wait metrics count real waits, not every delivery. A wait that ends
// without a token (ctx ended, or its deadline comes first) is an
// *im.RateWait saying when the token will be free: nothing was sent, so
// the caller leaves the dispatch for then rather than trying again at once.
func (b bucket) wait(ctx context.Context) (time.Duration, error) {
	if b.shared != nil {
		var waited time.Duration
		for {
			d, err := b.shared(ctx)
			if err != nil && ctx.Err() != nil {
				return waited, &im.RateWait{Err: ctx.Err()}
			}
			if err != nil || d <= 0 {
				return waited, err
			}
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
				return waited, &im.RateWait{Delay: d, Err: context.DeadlineExceeded}
			}
			start := time.Now()
			if err := sleepCtx(ctx, d); err != nil {
				return waited, &im.RateWait{Delay: max(d-time.Since(start), 0), Err: err}
			}
			waited += d
		}
	}
	if b.l == nil {
		return 0, nil
	}
	r := b.l.Reserve()
	if !r.OK() {
		return 0, fmt.Errorf("rate: no token with burst %d", b.l.Burst())
	}
	d := r.Delay()
	if d <= 0 {
		return 0, nil
	}
	// As rate.Limiter.Wait: a wait the caller's deadline would cut short
	// is refused at once, and its token given back.
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		r.Cancel()
		return 0, &im.RateWait{Delay: d, Err: context.DeadlineExceeded}
	}
	start := time.Now()
	if err := sleepCtx(ctx, d); err != nil {
		r.Cancel()
		return 0, &im.RateWait{Delay: max(d-time.Since(start), 0), Err: err}
	}
	return d, nil
}

// sleepCtx sleeps d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pacer is what a multi-request channel waits on before each request of
// one Send; the first request's token was taken before Send. The wait
// also ends when stop does (the daemon is stopping): the parts already
// delivered are recorded, and the next start sends the rest.
func (b bucket) pacer(stop context.Context) func(context.Context) error {
	if b.l == nil && b.shared == nil {
		return nil
	}
	var first atomic.Bool
	first.Store(true)
	return func(ctx context.Context) error {
		if first.CompareAndSwap(true, false) {
			return nil
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(stop, cancel)()
		_, err := b.wait(ctx)
		return err
	}
}
