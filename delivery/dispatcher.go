// Package delivery owns delivering review reports to channels: the
// dispatch state machine (see Status), the [dispatch] config, the Store it
// needs (implemented by package audit), per-destination token buckets and
// the dispatcher that sends. Channels make exactly one attempt per Send and
// know nothing of retries, limits or the database.
//
// Persist first, render late: the pipeline stores the validated result and
// one dispatch row per channel, each with its report (im.Report, built once
// under the channel's policy when the row is planned), then wakes the
// dispatcher. Every attempt renders the stored report through the channel
// looked up by name among those it was given, so a retry after a restart,
// a config reload or the removal of the run's files sends what the first
// attempt would have sent, and nothing calls back into the daemon. Each
// channel has its own sender goroutine, so a slow or rate-limited channel
// never delays another one, and a channel's own reports stay in order.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/idlegate"
)

// Options are the dispatcher's process-level inputs.
type Options struct {
	// Config is the defaulted [dispatch] table; zero keys take defaults.
	Config Config
	Logger *slog.Logger
	// Now is the clock retries are scheduled by; give the audit store the
	// same one (audit.Store.SetClock).
	Now func() time.Time
	// Jitter returns a number in [0, 1); default math/rand.
	Jitter func() float64
	// Poll bounds how long Run sleeps without a wake-up (work planned by
	// another process); default 1 minute.
	Poll time.Duration
	// OnRateLimitWait, when set, hears how long an attempt waited for
	// its channel's rate-limit token (the daemon's metrics); only
	// attempts that had to wait (a free token calls nothing).
	OnRateLimitWait func(channel string, waited time.Duration)
	// Quiet, when set, lets an idle Run sleep through its Poll and
	// retry_every wake-ups (Tick) without querying; Wake always queries.
	Quiet *QuietCheck
}

// QuietCheck tells an idle Run that nothing can be due.
type QuietCheck struct {
	// Mark fingerprints the store (see package idlegate); nil or ok
	// false: Run queries.
	Mark func() (mark any, ok bool)
	// NonePending says no dispatch is pending at all: none due, none
	// waiting for a retry, none leased to a sender that may die. Only a
	// commit changes that.
	NonePending func(ctx context.Context) (bool, error)
}

// Dispatcher delivers dispatches. It is safe for concurrent use.
type Dispatcher struct {
	store    Store
	channels map[string]im.Channel
	cfg      Config
	opts     Options
	log      *slog.Logger
	wake     chan struct{}
	tick     chan struct{}
	dead     atomic.Int64

	buckets *buckets

	mu       sync.Mutex
	active   map[string]bool   // channels with a running sender
	lastFail map[string]string // per channel, to log only changed failures
}

// New returns a dispatcher over store that sends through channels, by
// name; a dispatch to a channel not among them fails (ErrUnresolvable).
func New(store Store, channels map[string]im.Channel, opts Options) *Dispatcher {
	opts.Config.ApplyDefaults()
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Jitter == nil {
		opts.Jitter = rand.Float64
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Minute
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{store: store, channels: channels, cfg: opts.Config, opts: opts, log: log,
		wake: make(chan struct{}, 1), tick: make(chan struct{}, 1), buckets: newBuckets(store, log),
		active: map[string]bool{}, lastFail: map[string]string{}}
}

// lease is how long a claimed dispatch stays with its sender: longer than
// any attempt can take, including the wait for a rate-limit token.
func (d *Dispatcher) lease() time.Duration { return 2*d.cfg.Timeout + time.Minute }

// DedupeKey is the key every attempt of one dispatch carries.
func DedupeKey(runID int64, channel string) string {
	return "aicr-" + strconv.FormatInt(runID, 10) + "-" + channel
}

// NoticeDedupeKey is the key of a notice (a dispatch with a slot): a
// run's resolution follow-up is aicr-<run>-<channel>-<slot>, a digest
// (no run) aicr-<purpose>-<channel>-<slot>, so a receiver that dedupes
// keeps each apart from the run's report and from each other.
func NoticeDedupeKey(d Dispatch) string {
	if d.RunID == 0 {
		return "aicr-" + string(d.Purpose) + "-" + d.Channel + "-" + d.Slot
	}
	return DedupeKey(d.RunID, d.Channel) + "-" + d.Slot
}

// DeadCount is how many deliveries this process gave up on, for metrics.
func (d *Dispatcher) DeadCount() int64 { return d.dead.Load() }

// AttemptNow makes one attempt at dispatch id, if it is claimable now, and
// returns the dispatch as it stands afterwards; a retry it needs is left
// to Run. ErrNotClaimable means someone else has it, it is not pending,
// or it is not due yet.
func (d *Dispatcher) AttemptNow(ctx context.Context, id int64) (Dispatch, error) {
	d.buckets.load(ctx)
	c, err := d.store.ClaimDispatch(ctx, id, d.lease())
	if err != nil {
		return Dispatch{}, err
	}
	return d.attempt(ctx, ctx, c)
}

// Settle makes one attempt at each pending dispatch of a finished run,
// one goroutine per channel, and returns the run's dispatches afterwards.
// `aicr review` uses it so a foreground review is published before the
// process exits; retries it schedules are left to the daemon.
func (d *Dispatcher) Settle(ctx context.Context, runID int64) ([]Dispatch, error) {
	d.buckets.load(ctx)
	rows, err := d.store.RunDispatches(ctx, runID)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(rows))
	for i, row := range rows {
		if row.Status != StatusPending {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			after, err := d.AttemptNow(ctx, row.ID)
			if errors.Is(err, ErrNotClaimable) {
				// Queued behind an earlier retry on the channel, or being
				// sent by a daemon: it goes out in its turn.
				after, err = d.store.GetDispatch(ctx, row.ID)
			}
			if err != nil {
				errs[i] = fmt.Errorf("channel %s: %w", row.Channel, err)
				return
			}
			rows[i] = after
		}()
	}
	wg.Wait()
	return rows, errors.Join(errs...)
}

// DriveDue sends every due dispatch now, channel after channel, in this
// goroutine, and returns how many attempts it made; for tests and tools
// that have no Run loop.
func (d *Dispatcher) DriveDue(ctx context.Context) (int, error) {
	d.buckets.load(ctx)
	n := 0
	for ctx.Err() == nil {
		channels, err := d.store.DueChannels(ctx)
		if err != nil {
			return n, err
		}
		progress := false
		for _, ch := range channels {
			for ctx.Err() == nil {
				c, err := d.store.ClaimDue(ctx, ch, d.lease())
				if err != nil {
					return n, err
				}
				if c == nil {
					break
				}
				n, progress = n+1, true
				if _, err := d.attempt(ctx, ctx, c); err != nil {
					return n, err
				}
			}
		}
		if !progress { // nothing due, or all of it leased by another sender
			return n, nil
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

// Run delivers due dispatches until ctx ends: at start (rows a previous
// process left unsent), whenever Wake is called (a run planned its rows),
// when the next scheduled retry falls due, and at least every Poll. Each
// channel with due work gets its own sender goroutine. A send in flight
// when ctx ends is cut short with it; see RunDraining.
func (d *Dispatcher) Run(ctx context.Context) { d.RunDraining(ctx, ctx) }

// RunDraining is Run where the end of ctx stops claiming and waiting for
// rate-limit tokens, but a send already on the wire goes on until it
// finishes (within [dispatch] timeout) or sendCtx ends: a stopping daemon
// lets it finish within its grace, so a message the platform accepted is
// recorded as sent rather than sent again by the next start.
func (d *Dispatcher) RunDraining(ctx, sendCtx context.Context) {
	d.buckets.load(ctx)
	var senders sync.WaitGroup
	defer senders.Wait()
	var mark func() (any, bool)
	if d.opts.Quiet != nil {
		mark = d.opts.Quiet.Mark
	}
	gate := idlegate.New(mark)
	forced := true
	for ctx.Err() == nil {
		gate.Poll(forced, func() bool { return d.pass(ctx, sendCtx, &senders) })
		wait := d.opts.Poll
		if !gate.Quiet() {
			if at, ok, err := d.store.NextDispatchDue(ctx); err == nil && ok {
				if until := at.Sub(d.opts.Now()); until < wait {
					wait = max(until, 10*time.Millisecond)
				}
			}
		}
		t := time.NewTimer(wait)
		forced = false
		select {
		case <-ctx.Done():
		case <-d.wake:
			forced = true
		case <-d.tick:
		case <-t.C:
		}
		t.Stop()
	}
}

// Tick is the safety-net wake-up ([dispatch] retry_every): Run looks for
// due dispatches unless nothing was pending at its last look and nobody
// has committed since.
func (d *Dispatcher) Tick() {
	select {
	case d.tick <- struct{}{}:
	default:
	}
}

// pass starts a sender for each channel with due work and reports whether
// nothing at all is pending.
func (d *Dispatcher) pass(ctx, sendCtx context.Context, senders *sync.WaitGroup) (nonePending bool) {
	channels, err := d.store.DueChannels(ctx)
	if err != nil && ctx.Err() == nil {
		d.log.Error("find due dispatches", "err", err)
	}
	for _, ch := range channels {
		d.mu.Lock()
		busy := d.active[ch]
		d.active[ch] = true
		d.mu.Unlock()
		if busy {
			continue
		}
		senders.Add(1)
		go func() { defer senders.Done(); d.send(ctx, sendCtx, ch) }()
	}
	if err != nil || len(channels) > 0 || d.opts.Quiet == nil || d.opts.Quiet.NonePending == nil {
		return false
	}
	none, err := d.opts.Quiet.NonePending(ctx)
	return err == nil && none
}

// send delivers channel's due dispatches in order until none is due, then
// wakes Run so a retry it scheduled, or a row planned meanwhile, is seen.
func (d *Dispatcher) send(ctx, sendCtx context.Context, channel string) {
	defer func() {
		d.mu.Lock()
		delete(d.active, channel)
		d.mu.Unlock()
		d.Wake()
	}()
	for ctx.Err() == nil && sendCtx.Err() == nil {
		c, err := d.store.ClaimDue(ctx, channel, d.lease())
		if err != nil {
			if ctx.Err() == nil {
				d.log.Error("claim dispatch", "channel", channel, "err", err)
			}
			return
		}
		if c == nil {
			return
		}
		if _, err := d.attempt(ctx, sendCtx, c); err != nil && ctx.Err() == nil {
			d.log.Error("record dispatch attempt", "channel", channel, "dispatch_id", c.Dispatch.ID, "err", err)
			return
		}
	}
}

// attempt makes one attempt at claim c. ctx is the sender's: when it
// ends, no wait for a rate-limit token starts or goes on. sendCtx bounds
// the rest (the requests on the wire). Work cut short by our own stop,
// and waits for a token, are not attempts: the claim is given back with
// the dispatch pending, and only a platform's permanent answer, or a
// dispatch that can never be sent, fails it for good.
func (d *Dispatcher) attempt(ctx, sendCtx context.Context, c *Claim) (Dispatch, error) {
	disp := c.Dispatch
	// The outcome is recorded even when the daemon is shutting down, so
	// the row is not left looking like an interrupted send.
	record := context.WithoutCancel(ctx)
	ch, msg, err := d.message(c)
	if err != nil {
		d.noteFailure(disp.Channel, "resolve: "+err.Error())
		return d.store.FinishAttempt(record, c, AttemptResult{Status: StatusFailed, Outcome: OutcomeFailed, Reason: "config", Error: err.Error()})
	}

	bucket := d.buckets.forChannel(ctx, ch)
	waited, err := bucket.wait(ctx)
	if d.opts.OnRateLimitWait != nil && waited > 0 {
		d.opts.OnRateLimitWait(disp.Channel, waited)
	}
	if err != nil {
		// Stopping, or a caller's deadline before the token: nothing was
		// sent. Left for when the token is free, so a drain never spins
		// on a rate-limited channel.
		return d.store.ReleaseClaim(record, c, d.notBefore(err), ReleaseUnsent)
	}
	progress := func(parts int, messageID string) {
		if err := d.store.RecordParts(record, c, parts, messageID); err != nil {
			d.log.Warn("record delivered parts; a restart before this attempt ends sends them again",
				"channel", disp.Channel, "dispatch_id", disp.ID, "parts", parts, "err", err)
		}
	}
	attemptCtx, cancel := context.WithTimeout(im.WithProgress(im.WithPacer(sendCtx, bucket.pacer(ctx)), progress), d.cfg.Timeout)
	rec, sendErr := ch.Send(attemptCtx, msg)
	cancel()
	if sendErr == nil {
		d.noteSuccess(disp.Channel)
		return d.store.FinishAttempt(record, c, AttemptResult{Status: StatusSent, Outcome: OutcomeSent,
			StatusCode: rec.StatusCode, Response: rec.Response, Rendered: rec.Rendered, MessageID: rec.MessageID,
			PartsDelivered: max(rec.Parts, 1)})
	}
	var se *im.SendError
	answered := errors.As(sendErr, &se) && se.StatusCode != 0
	var rw *im.RateWait
	if errors.As(sendErr, &rw) || (sendCtx.Err() != nil && !answered) {
		how := ReleaseMaybeSent // our stop cut a request on the wire short
		if rw != nil {
			how = ReleaseUnsent // a later part waits for its token
		}
		if se != nil && se.PartsDelivered > disp.PartsDelivered {
			progress(se.PartsDelivered, se.MessageID)
			if how == ReleaseUnsent {
				how = ReleasePartial
			}
		}
		return d.store.ReleaseClaim(record, c, d.notBefore(sendErr), how)
	}

	r := d.classify(sendCtx, c, sendErr)
	d.noteFailure(disp.Channel, failureKey(r))
	d.noteFinal(disp, r)
	return d.store.FinishAttempt(record, c, r)
}

// message is what claim c sends and the channel it goes through: the
// report planned with the dispatch, with this attempt's delivery state.
// An error wraps ErrUnresolvable: the dispatch can never be sent.
func (d *Dispatcher) message(c *Claim) (im.Channel, im.Message, error) {
	disp := c.Dispatch
	ch, ok := d.channels[disp.Channel]
	if !ok {
		return nil, im.Message{}, fmt.Errorf("%w: channel %q is no longer in the config", ErrUnresolvable, disp.Channel)
	}
	if c.Report == nil {
		return nil, im.Message{}, fmt.Errorf("%w: no report was planned with it", ErrUnresolvable)
	}
	msg := im.Message{Report: c.Report, DedupeKey: DedupeKey(disp.RunID, disp.Channel),
		PriorMessageID: disp.MessageID, MaybeDelivered: c.Interrupted || c.Attempt > 1, PartsDelivered: disp.PartsDelivered}
	if disp.Slot != "" {
		msg.DedupeKey = NoticeDedupeKey(disp)
	} else if disp.Purpose == PurposeError {
		// A failed run's notice and the report a retry later sends are two
		// messages: a receiver that dedupes must not drop the report.
		msg.DedupeKey += "-failure"
	}
	return ch, msg, nil
}

// notBefore is when a claim given back because of err may be tried
// again: when the rate-limit token it waited for is free, else now.
func (d *Dispatcher) notBefore(err error) time.Time {
	var rw *im.RateWait
	if errors.As(err, &rw) && rw.Delay > 0 {
		return d.opts.Now().Add(rw.Delay)
	}
	return time.Time{}
}

// noteFinal logs a dispatch that is given up on.
func (d *Dispatcher) noteFinal(disp Dispatch, r AttemptResult) {
	switch r.Status {
	case StatusDead:
		d.dead.Add(1)
		d.log.Error("delivery dead: gave up", "channel", disp.Channel, "run_id", disp.RunID, "dispatch_id", disp.ID,
			"attempts", disp.Attempts+1, "err", r.Error, "hint", "aicr dispatch list --status dead; aicr dispatch retry ID")
	case StatusUnknown:
		d.log.Error("delivery outcome unknown: timed out again, not sending a third time", "channel", disp.Channel,
			"run_id", disp.RunID, "dispatch_id", disp.ID, "hint", "check the channel, then aicr dispatch retry ID if it is missing")
	}
}

// classify turns a failed Send into the dispatch's next state.
func (d *Dispatcher) classify(ctx context.Context, c *Claim, err error) AttemptResult {
	r := AttemptResult{Error: err.Error()}
	var se *im.SendError
	retryable, retryAfter, timedOut := false, time.Duration(0), false
	switch {
	case errors.As(err, &se):
		r.Reason, r.StatusCode, r.PlatformCode, r.Response = string(se.Reason), se.StatusCode, se.PlatformCode, se.Response
		r.MessageID, r.PartsDelivered = se.MessageID, se.PartsDelivered
		retryable, retryAfter = se.Retryable, se.RetryAfter
		timedOut = se.Reason == im.ReasonTimeout && ctx.Err() == nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		// Our own per-attempt timeout: the platform did not answer.
		r.Reason, retryable, timedOut = string(im.ReasonTimeout), true, true
	case ctx.Err() != nil:
		// Shutdown cut the send short; the next start sends it again,
		// flagged as maybe delivered.
		r.Reason, retryable = string(im.ReasonTimeout), true
	default:
		r.Reason = "error"
	}
	if !retryable {
		r.Status, r.Outcome = StatusFailed, OutcomeFailed
		return r
	}
	if timedOut {
		// The platform may have the message: send the same content (same
		// dedupe key) once more, never a third time.
		r.Outcome = OutcomeUnknown
		if c.Dispatch.UnknownOutcomes >= 1 {
			r.Status = StatusUnknown
			r.Error = "timed out twice, may have been delivered: " + r.Error
			return r
		}
	}
	return d.schedule(c, r, retryAfter)
}

// schedule makes r, a retryable failure, a retry after the backoff, or
// dead when give_up_after or max_attempts has run out.
func (d *Dispatcher) schedule(c *Claim, r AttemptResult, retryAfter time.Duration) AttemptResult {
	now := d.opts.Now()
	first := c.Dispatch.FirstAttemptAt
	if first.IsZero() {
		first = now
	}
	attempts := c.Dispatch.Attempts + 1 // c.Dispatch.Attempts counts finished attempts before this one
	if now.Sub(first) >= d.cfg.GiveUpAfter || (d.cfg.MaxAttempts > 0 && attempts >= d.cfg.MaxAttempts) {
		r.Status = StatusDead
		if r.Outcome == "" {
			r.Outcome = OutcomeDead
		}
		r.Error = fmt.Sprintf("gave up after %d attempts over %s: %s", attempts, now.Sub(first).Round(time.Second), r.Error)
		return r
	}
	r.Status = StatusPending
	if r.Outcome == "" {
		r.Outcome = OutcomeRetry
	}
	r.NextAttemptAt = now.Add(d.backoff(c.Dispatch.Attempts, retryAfter))
	return r
}

// backoff is Backoff·2^n with ±50% jitter, capped at MaxBackoff; a
// longer Retry-After from the platform wins over both.
func (d *Dispatcher) backoff(n int, retryAfter time.Duration) time.Duration {
	exp := float64(d.cfg.Backoff) * math.Pow(2, float64(n))
	exp = min(exp, float64(d.cfg.MaxBackoff))
	delay := time.Duration(exp * (0.5 + d.opts.Jitter()))
	delay = min(delay, d.cfg.MaxBackoff)
	return max(delay, retryAfter)
}

func failureKey(r AttemptResult) string {
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
