package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/internal/pgtest"
)

// Two daemons (two stores, two dispatchers) on one PostgreSQL send to a
// destination allowed one message a minute. B read the last sends before
// A sent, so a per-process bucket would let B send at once; the bucket in
// the database makes B wait.
func TestRateLimitIsSharedBetweenDaemons(t *testing.T) {
	srv := pgtest.Start(t)
	t.Cleanup(pgtest.Stop)
	f := newFixture(t, 1) // one per minute
	ctx := context.Background()
	dsn := srv.NewDatabase(t)
	open := func() *audit.Store {
		s, err := audit.OpenPostgres(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	f.store = a
	d1, d2 := f.plan(1), f.plan(2)

	dispB := delivery.New(b, f.channels, delivery.Options{})
	// B loads its (empty) view of the last sends now.
	if _, err := dispB.AttemptNow(ctx, 1<<40); err == nil {
		t.Fatal("attempt of a dispatch that does not exist succeeded")
	}
	dispA := delivery.New(a, f.channels, delivery.Options{})
	if got, err := dispA.AttemptNow(ctx, d1.ID); err != nil || got.Status != delivery.StatusSent {
		t.Fatalf("A's send: %+v %v", got, err)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := dispB.AttemptNow(short, d2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.srv.arrived.Load(); n != 1 {
		t.Fatalf("the platform got %d requests within a minute from two daemons, its limit is 1", n)
	}
	if got.Status != delivery.StatusPending {
		t.Fatalf("B's send: %+v", got)
	}
}
