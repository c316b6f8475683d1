package daemon

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// The trimmer hears of every collection, not only the first: each one
// re-arms the next.
func TestAfterEachGCSignalsEveryCollection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	collected := afterEachGC(ctx)
	for i := range 3 {
		deadline := time.After(10 * time.Second)
		for got := false; !got; {
			runtime.GC()
			select {
			case <-collected:
				got = true
			case <-time.After(10 * time.Millisecond):
			case <-deadline:
				t.Fatalf("no signal after collection %d", i+1)
			}
		}
	}
}
