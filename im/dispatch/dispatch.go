// Package dispatch delivers planned dispatches to their channels: it is
// the one place that claims a dispatch row, throttles per destination,
// makes one attempt through im.Channel.Send, records the attempt and
// decides whether and when to retry. Channels never loop.
//
// Persist first, render late: the pipeline stores the validated result and
// one audit dispatch row per channel, then asks the dispatcher to deliver.
// What to send is rebuilt from the database at every attempt through a
// Resolver, so a retry after a daemon restart sends what the first attempt
// would have sent.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/im"
)

// Defaults for Options left zero.
const (
	DefaultMaxAttempts = 6
	DefaultBaseBackoff = 2 * time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	DefaultSendTimeout = 30 * time.Second
)

// Resolver rebuilds what a dispatch sends: the channel it goes to and the
// message, from the audit trail. An error is permanent for the dispatch
// (the channel left the config, the run is gone).
type Resolver interface {
	Resolve(ctx context.Context, d audit.Dispatch) (im.Channel, im.Message, error)
}

// Options tune retries; zero values take the defaults.
type Options struct {
	// MaxAttempts bounds attempts before a retryable failure becomes dead.
	MaxAttempts int
	// BaseBackoff is the first retry delay; each retry doubles it, with
	// ±50% jitter, up to MaxBackoff. A platform's Retry-After wins when
	// longer.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// SendTimeout bounds one attempt.
	SendTimeout time.Duration
	Logger      *slog.Logger
	// Now is the clock retries are scheduled by; give the audit store the
	// same one (audit.Store.SetClock).
	Now func() time.Time
	// Jitter returns a number in [0, 1); default math/rand.
	Jitter func() float64
}

// Dispatcher delivers dispatches. It is safe for concurrent use: the
// pipeline's workers deliver their runs' dispatches inline while the
// daemon's re-drive loop handles retries.
type Dispatcher struct {
	store *audit.Store
	res   Resolver
	opts  Options
	log   *slog.Logger
	wake  chan struct{}

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
	lastFail map[string]string // per channel, to log only changed failures
}

// New returns a dispatcher over store.
func New(store *audit.Store, res Resolver, opts Options) *Dispatcher {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = DefaultBaseBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = DefaultSendTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Jitter == nil {
		opts.Jitter = rand.Float64
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{store: store, res: res, opts: opts, log: log, wake: make(chan struct{}, 1),
		limiters: map[string]*rate.Limiter{}, lastFail: map[string]string{}}
}

// lease is how long a claimed dispatch stays with its sender: longer than
// any attempt can take, including the wait for a rate-limit token.
func (d *Dispatcher) lease() time.Duration { return 2*d.opts.SendTimeout + time.Minute }

// DedupeKey is the key every attempt of one dispatch carries.
func DedupeKey(runID int64, channel string) string {
	return "aicr-" + strconv.FormatInt(runID, 10) + "-" + channel
}

// Deliver makes one attempt at dispatch id if it is claimable now and
// returns the dispatch as it stands afterwards. audit.ErrNotClaimable means
// someone else has it, it is not pending, or it is not due yet.
func (d *Dispatcher) Deliver(ctx context.Context, id int64) (audit.Dispatch, error) {
	c, err := d.store.ClaimDispatch(ctx, id, d.lease())
	if err != nil {
		return audit.Dispatch{}, err
	}
	return d.attempt(ctx, c)
}

// DriveDue attempts every due dispatch of a finished run, oldest first,
// until none is due, and returns how many attempts it made.
func (d *Dispatcher) DriveDue(ctx context.Context) (int, error) {
	n := 0
	for ctx.Err() == nil {
		c, err := d.store.ClaimDue(ctx, d.lease())
		if errors.Is(err, audit.ErrNoWork) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
		if _, err := d.attempt(ctx, c); err != nil {
			return n, err
		}
	}
	return n, ctx.Err()
}

// Wake makes Run look for due dispatches now.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run re-drives due dispatches until ctx ends: at start (rows a previous
// process left unsent), whenever Wake is called, when the next scheduled
// retry falls due, and at least every poll.
func (d *Dispatcher) Run(ctx context.Context, poll time.Duration) {
	for ctx.Err() == nil {
		if _, err := d.DriveDue(ctx); err != nil && ctx.Err() == nil {
			d.log.Error("re-drive dispatches", "err", err)
		}
		wait := poll
		if at, ok, err := d.store.NextDispatchDue(ctx); err == nil && ok {
			if until := at.Sub(d.opts.Now()); until < wait {
				wait = max(until, 10*time.Millisecond)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (d *Dispatcher) attempt(ctx context.Context, c *audit.Claim) (audit.Dispatch, error) {
	disp := c.Dispatch
	// The outcome is recorded even when the daemon is shutting down, so
	// the row is not left looking like an interrupted send.
	record := context.WithoutCancel(ctx)
	ch, msg, err := d.res.Resolve(ctx, disp)
	if err != nil {
		d.noteFailure(disp.Channel, "resolve: "+err.Error())
		return d.store.FinishAttempt(record, c, audit.AttemptResult{Status: audit.DispatchFailed, Reason: "config", Error: err.Error()})
	}
	msg.DedupeKey = DedupeKey(disp.RunID, disp.Channel)
	msg.PriorMessageID = disp.MessageID
	msg.MaybeDelivered = c.Interrupted || c.Attempt > 1
	msg.PartsDelivered = disp.PartsDelivered

	if err := d.limiter(ch).Wait(ctx); err != nil {
		// Only a cancelled context gets here; try again at once next time.
		return d.store.FinishAttempt(record, c, audit.AttemptResult{Status: audit.DispatchPending,
			NextAttemptAt: d.opts.Now(), Reason: string(im.ReasonTimeout), Error: "shutting down before the send"})
	}
	sendCtx, cancel := context.WithTimeout(ctx, d.opts.SendTimeout)
	rec, sendErr := ch.Send(sendCtx, msg)
	cancel()
	if sendErr == nil {
		d.noteSuccess(disp.Channel)
		return d.store.FinishAttempt(record, c, audit.AttemptResult{Status: audit.DispatchSent,
			StatusCode: rec.StatusCode, Response: rec.Response, Rendered: rec.Rendered, MessageID: rec.MessageID})
	}

	r := d.classify(ctx, c, sendErr)
	d.noteFailure(disp.Channel, failureKey(r))
	return d.store.FinishAttempt(record, c, r)
}

// classify turns a failed Send into the dispatch's next state.
func (d *Dispatcher) classify(ctx context.Context, c *audit.Claim, err error) audit.AttemptResult {
	r := audit.AttemptResult{Error: err.Error()}
	var se *im.SendError
	retryable, retryAfter := false, time.Duration(0)
	switch {
	case errors.As(err, &se):
		r.Reason, r.StatusCode, r.PlatformCode, r.Response = string(se.Reason), se.StatusCode, se.PlatformCode, se.Response
		r.MessageID, r.PartsDelivered = se.MessageID, se.PartsDelivered
		retryable, retryAfter = se.Retryable, se.RetryAfter
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		// Our own per-attempt timeout: the platform did not answer.
		r.Reason, retryable = string(im.ReasonTimeout), true
	case ctx.Err() != nil:
		// Shutdown cut the send short; the next start sends it again.
		r.Reason, retryable = string(im.ReasonTimeout), true
	default:
		r.Reason = "error"
	}
	if !retryable {
		r.Status = audit.DispatchFailed
		return r
	}
	// c.Dispatch.Attempts counts finished attempts before this one.
	if c.Dispatch.Attempts+1 >= d.opts.MaxAttempts {
		r.Status = audit.DispatchDead
		r.Error = fmt.Sprintf("gave up after %d attempts: %s", c.Dispatch.Attempts+1, r.Error)
		return r
	}
	r.Status = audit.DispatchPending
	r.NextAttemptAt = d.opts.Now().Add(d.backoff(c.Dispatch.Attempts, retryAfter))
	return r
}

// backoff is BaseBackoff·2^n with ±50% jitter, capped at MaxBackoff; a
// longer Retry-After from the platform wins over both.
func (d *Dispatcher) backoff(n int, retryAfter time.Duration) time.Duration {
	exp := float64(d.opts.BaseBackoff) * math.Pow(2, float64(n))
	exp = min(exp, float64(d.opts.MaxBackoff))
	delay := time.Duration(exp * (0.5 + d.opts.Jitter()))
	delay = min(delay, d.opts.MaxBackoff)
	return max(delay, retryAfter)
}

func (d *Dispatcher) limiter(ch im.Channel) *rate.Limiter {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.limiters[ch.Name()]
	if !ok {
		l = rate.NewLimiter(rate.Inf, 1)
		if rl, ok := ch.(im.RateLimited); ok {
			lim, burst := rl.RateLimit()
			l = rate.NewLimiter(lim, max(burst, 1))
		}
		d.limiters[ch.Name()] = l
	}
	return l
}

func failureKey(r audit.AttemptResult) string {
	return fmt.Sprintf("%s %d %s", r.Reason, r.StatusCode, r.PlatformCode)
}

// noteFailure logs a channel's failure only when it differs from the last
// one, so a platform that is down for an hour logs once, not every retry.
func (d *Dispatcher) noteFailure(channel, key string) {
	d.mu.Lock()
	changed := d.lastFail[channel] != key
	d.lastFail[channel] = key
	d.mu.Unlock()
	if changed {
		d.log.Warn("delivery failing", "channel", channel, "failure", key)
	}
}

func (d *Dispatcher) noteSuccess(channel string) {
	d.mu.Lock()
	was := d.lastFail[channel]
	delete(d.lastFail, channel)
	d.mu.Unlock()
	if was != "" {
		d.log.Info("delivery recovered", "channel", channel, "after", was)
	}
}
