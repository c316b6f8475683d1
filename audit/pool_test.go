package audit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// noNestedPoolUse runs f with s's connection wait cut to a moment and
// fails t, instead of crashing the test binary, when f used the pool
// while a connection it needed was held by a transaction of its own.
func noNestedPoolUse(t *testing.T, s *Store, f func()) {
	t.Helper()
	s.db.wait = 500 * time.Millisecond
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%v", r)
		}
	}()
	f()
}

// The suite's stores have one connection (TestMain), so a pool query
// from inside a transaction cannot wait for a second one unnoticed: it
// panics with a message that says what to do, within the bound, instead
// of hanging until the test times out.
func TestPoolOfOneCatchesAQueryOnThePoolInsideATransaction(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	if got := s.db.Stats().MaxOpenConnections; got != 1 {
		t.Fatalf("the suite's pool has %d connections, want 1 (%s)", got, EnvTestPool)
	}
	s.db.wait = 200 * time.Millisecond
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	start := time.Now()
	var msg string
	func() {
		defer func() { msg = fmt.Sprint(recover()) }()
		s.RepoPaused(ctx, "main")
	}()
	if !strings.Contains(msg, "holds a transaction") || !strings.Contains(msg, "Query through the Tx") {
		t.Errorf("nested pool use: %q, want the panic naming the cause", msg)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("nested pool use failed after %s, want within the bound", took)
	}
}

// GetRun reads its snapshot, pause included, through its one
// transaction. It asked the pool for the repo's pause while holding the
// transaction's connection, and the dispatcher resolves one run per
// channel at once: four channels took the four connections and every
// GetRun waited for a fifth, for good.
func TestGetRunUsesOneConnection(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	enq := mustEnqueue(t, s, svnEvent("main", "7"), triggers.SourceTrigger)
	if _, _, err := s.PauseRepo(ctx, "main", "ops", "maintenance"); err != nil {
		t.Fatal(err)
	}
	noNestedPoolUse(t, s, func() {
		d, err := s.GetRun(ctx, enq.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if !d.RepoPaused {
			t.Errorf("GetRun of a paused repo's run: RepoPaused false")
		}
	})
}
