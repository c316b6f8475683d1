package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
)

// Issue 22 A2: what an attempt that does not reach the platform records.

// failingResolver fails every Resolve with err; when block is set it
// first waits for the context to end (a store stuck until shutdown).
type failingResolver struct {
	err   error
	block bool
}

func (r failingResolver) Resolve(ctx context.Context, _ delivery.Dispatch) (im.Channel, im.Message, error) {
	if r.block {
		<-ctx.Done()
		return nil, im.Message{}, fmt.Errorf("get run 1: read pause of main: %w", ctx.Err())
	}
	return nil, im.Message{}, r.err
}

// A store error while resolving is transient: a retry is scheduled. Only
// an unresolvable dispatch (channel gone, run gone) fails for good.
func TestResolveStoreErrorIsTransient(t *testing.T) {
	f := newFixture(t, 0)
	d := f.plan(1)
	disp := delivery.New(f.store, failingResolver{err: errors.New("get run 1: begin: database is locked")},
		delivery.Options{Now: f.clk.Now, Jitter: func() float64 { return 0.5 }})
	got, err := disp.AttemptNow(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != delivery.StatusPending || got.NextAttemptAt.IsZero() || got.Attempts != 1 {
		t.Fatalf("after a store error: %+v (want a scheduled retry)", got)
	}

	gone := delivery.New(f.store, failingResolver{err: fmt.Errorf("%w: channel \"hook\" is no longer in the config", delivery.ErrUnresolvable)},
		delivery.Options{Now: f.clk.Now})
	f.clk.Add(time.Hour)
	if got, err = gone.AttemptNow(context.Background(), d.ID); err != nil {
		t.Fatal(err)
	}
	if got.Status != delivery.StatusFailed {
		t.Fatalf("unresolvable: %+v (want failed)", got)
	}
}

// A resolve cut short by our own stop is not an attempt: the dispatch
// stays pending, due now, with no attempt counted or recorded.
func TestStopDuringResolveIsNotAnAttempt(t *testing.T) {
	f := newFixture(t, 0)
	d := f.plan(1)
	disp := delivery.New(f.store, failingResolver{block: true}, delivery.Options{Now: f.clk.Now})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); disp.Run(ctx) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-done
	got, err := f.store.GetDispatch(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != delivery.StatusPending || got.Attempts != 0 || !got.NextAttemptAt.IsZero() || !got.FirstAttemptAt.IsZero() {
		t.Fatalf("after the stop: %+v (want pending as planned)", got)
	}
	if a := f.attempts(d.ID); len(a) != 0 {
		t.Fatalf("attempt records after the stop: %+v", a)
	}
}

// A drain with a deadline before the next rate-limit token leaves each
// dispatch pending with its not-before: one claim each, no attempt
// counted, never spun (the bug: 1,061 claims in 1.7 s, then failed).
func TestDrainBeforeTokenLeavesNotBefore(t *testing.T) {
	f := newFixture(t, 1) // one per minute
	f.store.SetClock(time.Now)
	first := f.plan(1)
	disp := delivery.New(f.store, f.res, delivery.Options{Config: delivery.Config{MaxAttempts: 20}})
	if got, err := disp.AttemptNow(context.Background(), first.ID); err != nil || got.Status != delivery.StatusSent {
		t.Fatalf("first: %+v %v", got, err)
	}
	waiting := []delivery.Dispatch{f.plan(2), f.plan(3)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	n, err := disp.DriveDue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n > len(waiting) {
		t.Errorf("drain claimed %d times for %d dispatches", n, len(waiting))
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("drain took %s; refusing a far token is immediate", took)
	}
	for i, w := range waiting {
		got, err := f.store.GetDispatch(context.Background(), w.ID)
		if err != nil {
			t.Fatal(err)
		}
		// The first waits for the token; the next waits behind it, in order.
		if got.Status != delivery.StatusPending || got.Attempts != 0 || (i == 0 && got.NextAttemptAt.Before(time.Now().Add(30*time.Second))) {
			t.Errorf("rate-limited dispatch after the drain: %+v (want pending, no attempt, the first not before the token)", got)
		}
		if a := f.attempts(w.ID); len(a) != 0 {
			t.Errorf("attempt records: %+v", a)
		}
	}
	if n := f.srv.arrived.Load(); n != 1 {
		t.Errorf("platform got %d requests", n)
	}
}
