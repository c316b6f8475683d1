package delivery_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
)

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Issue 10 #11: with the default settings a platform outage is retried
// for hours (the old default gave up after 6 attempts, ~90 s), then the
// delivery goes dead, is logged at ERROR, counted and listed as dead.
func TestDefaultsRetryForHoursThenDeadLoudly(t *testing.T) {
	f := newFixture(t, 0)
	f.srv.always = http.StatusServiceUnavailable
	d := f.plan(1)
	var logs syncBuffer
	disp := delivery.New(f.store, f.channels, delivery.Options{Now: f.clk.Now, Jitter: func() float64 { return 0.5 },
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	start := f.clk.Now()
	got, err := disp.AttemptNow(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	for got.Status == delivery.StatusPending {
		if got.Attempts == 6 && f.clk.Now().Sub(start) < time.Hour && strings.Contains(logs.String(), "level=ERROR") {
			t.Fatal("logged an error while still retrying")
		}
		f.clk.Add(got.NextAttemptAt.Sub(f.clk.Now()))
		if _, err := disp.DriveDue(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err = f.store.GetDispatch(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		if got.Status != delivery.StatusPending && got.Attempts <= 6 {
			t.Fatalf("gave up after %d attempts over %s: %s", got.Attempts, f.clk.Now().Sub(start), got.Status)
		}
	}
	elapsed := f.clk.Now().Sub(start)
	if elapsed < 12*time.Hour {
		t.Fatalf("gave up after %s of outage (%d attempts); the default must be hours", elapsed, got.Attempts)
	}
	if got.Status != delivery.StatusDead || elapsed < delivery.DefaultGiveUpAfter || elapsed > delivery.DefaultGiveUpAfter+delivery.DefaultMaxBackoff {
		t.Fatalf("final %s after %s and %d attempts, want dead after %s", got.Status, elapsed, got.Attempts, delivery.DefaultGiveUpAfter)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "delivery dead") {
		t.Fatalf("going dead was not logged at ERROR:\n%s", logs.String())
	}
	if n := disp.DeadCount(); n != 1 {
		t.Fatalf("dead count %d, want 1", n)
	}
	dead, err := f.store.ListDispatches(ctx, audit.DispatchFilter{Status: delivery.StatusDead})
	if err != nil || len(dead) != 1 || dead[0].ID != d.ID {
		t.Fatalf("dead list: %+v %v", dead, err)
	}
}

// Issue 10 #15: a platform slower than the timeout gets the same message
// (same dedupe key) at most twice, and the audit says "unknown", not dead.
func TestTimedOutAttemptIsUnknownAndRetriedOnce(t *testing.T) {
	f := newFixture(t, 0)
	f.srv.block = make(chan struct{})
	defer close(f.srv.block)
	var seen []im.Message
	var mu sync.Mutex
	f.channels["hook"] = recordingFunc{Channel: f.channels["hook"], seen: func(m im.Message) { mu.Lock(); seen = append(seen, m); mu.Unlock() }}
	d := f.plan(1)
	disp := delivery.New(f.store, f.channels, delivery.Options{Config: delivery.Config{Timeout: 50 * time.Millisecond}, Now: f.clk.Now})
	ctx := context.Background()
	got, err := disp.AttemptNow(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10 && got.Status == delivery.StatusPending; i++ {
		f.clk.Add(time.Hour)
		if _, err := disp.DriveDue(ctx); err != nil {
			t.Fatal(err)
		}
		got, _ = f.store.GetDispatch(ctx, d.ID)
	}
	if got.Status != delivery.StatusUnknown {
		t.Fatalf("final %s after %d attempts, want unknown", got.Status, got.Attempts)
	}
	if n := f.srv.arrived.Load(); n != 2 {
		t.Fatalf("platform got %d requests, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0].DedupeKey != seen[1].DedupeKey || !seen[1].MaybeDelivered {
		t.Fatalf("attempts carried %+v", seen)
	}
	a := f.attempts(d.ID)
	if len(a) != 2 || a[0].Outcome != delivery.OutcomeUnknown || a[1].Outcome != delivery.OutcomeUnknown {
		t.Fatalf("attempt log: %+v", a)
	}
	// An operator who checked the channel can still send it again.
	if r, err := f.store.RetryDispatch(ctx, d.ID); err != nil || r.Status != delivery.StatusPending || r.UnknownOutcomes != 0 {
		t.Fatalf("retry of an unknown delivery: %+v %v", r, err)
	}
}

type recordingFunc struct {
	im.Channel
	seen func(im.Message)
}

func (r recordingFunc) Send(ctx context.Context, msg im.Message) (im.Receipt, error) {
	r.seen(msg)
	return r.Channel.Send(ctx, msg)
}

// RateLimit passes through to the wrapped channel so the bucket applies.
func (r recordingFunc) RateLimit() (rate.Limit, int) {
	if rl, ok := r.Channel.(im.RateLimited); ok {
		return rl.RateLimit()
	}
	return rate.Inf, 1
}

// Issue 10 #13: a restarted dispatcher remembers the destination's last
// send. With one message a minute allowed and one just sent, the next
// cannot go out within a 5 s deadline; a fresh bucket would send at once.
func TestRateLimitSurvivesRestart(t *testing.T) {
	f := newFixture(t, 1) // one per minute
	f.store.SetClock(time.Now)
	ctx := context.Background()
	first := f.plan(1)
	disp := delivery.New(f.store, f.channels, delivery.Options{})
	if got, err := disp.AttemptNow(ctx, first.ID); err != nil || got.Status != delivery.StatusSent {
		t.Fatalf("first: %+v %v", got, err)
	}

	restarted := delivery.New(f.store, f.channels, delivery.Options{})
	second := f.plan(2)
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := restarted.AttemptNow(short, second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.srv.arrived.Load(); n != 1 {
		t.Fatalf("platform got %d requests within a minute after a restart, limit is 1", n)
	}
	// Waiting for the token is not an attempt (issue 22 A2): left pending
	// for when the token is free.
	if got.Status != delivery.StatusPending || got.Attempts != 0 || !got.NextAttemptAt.After(time.Now().Add(30*time.Second)) {
		t.Fatalf("second after restart: %+v", got)
	}
}

// multiRequest is a rate-limited channel that makes parts requests per
// Send, pacing each through the dispatcher as the contract asks.
type multiRequest struct {
	parts int
	made  int
}

func (m *multiRequest) Name() string                 { return "hook" }
func (m *multiRequest) Kind() string                 { return "multi" }
func (m *multiRequest) RateLimit() (rate.Limit, int) { return rate.Every(time.Minute), 1 }
func (m *multiRequest) Send(ctx context.Context, _ im.Message) (im.Receipt, error) {
	for range m.parts {
		if err := im.Pace(ctx); err != nil {
			return im.Receipt{}, &im.SendError{Reason: im.ReasonRateLimited, Retryable: true, Err: err}
		}
		m.made++
	}
	return im.Receipt{Parts: m.parts}, nil
}

// The dispatcher takes the token for a Send's first request; every later
// request of the same Send waits on the destination's bucket.
func TestPacerThrottlesEveryRequestAfterTheFirst(t *testing.T) {
	f := newFixture(t, 0)
	ch := &multiRequest{parts: 3}
	f.channels["hook"] = ch
	d := f.plan(1)
	disp := delivery.New(f.store, f.channels, delivery.Options{Config: delivery.Config{Timeout: 2 * time.Second}, Now: f.clk.Now})
	got, err := disp.AttemptNow(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	// One per minute: the first request goes, the second would wait past
	// the attempt's timeout.
	if ch.made != 1 || got.Status != delivery.StatusPending {
		t.Fatalf("made %d requests, status %s; want 1 and a retry", ch.made, got.Status)
	}
	if im.Pace(context.Background()) != nil {
		t.Fatal("Pace without a pacer must return at once")
	}
}
