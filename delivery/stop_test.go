package delivery_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
)

// Issue 22 A2: what an attempt that does not reach the platform records.

// A dispatch that can never be sent fails for good at its first attempt,
// with its reason recorded: its channel left the config, or it has no
// planned report (an older aicr planned it and the daemon's start could
// not fill it).
func TestUnsendableDispatchFailsForGood(t *testing.T) {
	f := newFixture(t, 0)
	d := f.plan(1)
	gone := delivery.New(f.store, map[string]im.Channel{}, delivery.Options{Now: f.clk.Now})
	got, err := gone.AttemptNow(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != delivery.StatusFailed || !strings.Contains(got.LastError, `channel "hook" is no longer in the config`) {
		t.Fatalf("channel gone: %+v (want failed, saying why)", got)
	}

	ctx := context.Background()
	run, err := f.store.GetRun(ctx, d.RunID)
	if err != nil {
		t.Fatal(err)
	}
	old, err := f.store.PlanDispatch(ctx, run.ID, "other", delivery.PurposeReport, delivery.StatusPending, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.channels["other"] = f.channels["hook"]
	if got, err = f.dispatcher(3).AttemptNow(ctx, old.ID); err != nil {
		t.Fatal(err)
	}
	if got.Status != delivery.StatusFailed || !strings.Contains(got.LastError, "no report was planned") {
		t.Fatalf("no report: %+v (want failed, saying why)", got)
	}
	if a := f.attempts(old.ID); len(a) != 1 || a[0].Reason != "config" {
		t.Fatalf("attempt log: %+v (want the failure recorded)", a)
	}
	if n := f.srv.arrived.Load(); n != 0 {
		t.Fatalf("platform got %d requests", n)
	}
}

// A stop before anything went out is not an attempt: the dispatch stays
// pending (due when its token is free), with no attempt counted or
// recorded.
func TestStopBeforeSendIsNotAnAttempt(t *testing.T) {
	f := newFixture(t, 1) // one per minute: the second waits for its token
	f.store.SetClock(time.Now)
	first := f.plan(1)
	disp := delivery.New(f.store, f.channels, delivery.Options{})
	if got, err := disp.AttemptNow(context.Background(), first.ID); err != nil || got.Status != delivery.StatusSent {
		t.Fatalf("first: %+v %v", got, err)
	}
	d := f.plan(2)
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
	if got.Status != delivery.StatusPending || got.Attempts != 0 || !got.FirstAttemptAt.IsZero() {
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
	disp := delivery.New(f.store, f.channels, delivery.Options{Config: delivery.Config{MaxAttempts: 20}})
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
