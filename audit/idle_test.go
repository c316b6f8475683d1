package audit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/triggers"
)

// The idle loops stop querying while the mark stands still, so it must
// stand still through everything an idle daemon's own polls do, and move
// at every commit, including one made by another process's Store.
func TestChangeMarkMovesOnlyWithCommits(t *testing.T) {
	if onPostgres() {
		t.Skip("marks are SQLite's")
	}
	ctx := context.Background()
	path := tempDB(t)
	daemon := openStore(t, path)
	other := openStore(t, path) // a second process: aicr review, spool requeue

	mark := func() ChangeMark {
		t.Helper()
		m, ok := daemon.ChangeMark()
		if !ok {
			t.Fatal("no mark on a SQLite store")
		}
		return m
	}
	before := mark()
	// What the idle polls run: an empty claim, the lease sweep, the
	// dispatcher's queries, the quiet checks.
	if _, err := daemon.ClaimNext(ctx); err == nil {
		t.Fatal("claimed a run from an empty queue")
	}
	if _, _, err := daemon.RequeueExpired(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := daemon.DueChannels(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := daemon.NextDispatchDue(ctx); err != nil {
		t.Fatal(err)
	}
	for _, check := range []func(context.Context) (bool, error){daemon.QueueEmpty, daemon.NoneRunning, daemon.NoDispatchPending} {
		if empty, err := check(ctx); err != nil || !empty {
			t.Fatalf("quiet check on an empty store: %v, %v", empty, err)
		}
	}
	if got := mark(); got != before {
		t.Fatalf("the mark moved without a commit: %+v -> %+v", before, got)
	}

	time.Sleep(10 * time.Millisecond) // past a coarse file clock tick
	mustEnqueue(t, other, svnEvent("main", "1"), triggers.SourceTrigger)
	afterEnqueue := mark()
	if afterEnqueue == before {
		t.Fatal("another Store's commit left the mark unchanged")
	}
	if empty, err := daemon.QueueEmpty(ctx); err != nil || empty {
		t.Fatalf("QueueEmpty with a queued run: %v, %v", empty, err)
	}

	run := mustClaim(t, daemon)
	if got := mark(); got == afterEnqueue {
		t.Fatal("a claim left the mark unchanged")
	}
	if none, err := daemon.NoneRunning(ctx); err != nil || none {
		t.Fatalf("NoneRunning with a running run: %v, %v", none, err)
	}
	if err := daemon.FinishRun(ctx, run.ID, Outcome{Status: RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	if _, err := daemon.PlanDispatch(ctx, run.ID, "team", delivery.PurposeReport, delivery.StatusPending, "", nil); err != nil {
		t.Fatal(err)
	}
	if none, err := daemon.NoDispatchPending(ctx); err != nil || none {
		t.Fatalf("NoDispatchPending with a pending dispatch: %v, %v", none, err)
	}
	if empty, err := daemon.QueueEmpty(ctx); err != nil || !empty {
		t.Fatalf("QueueEmpty once the only run finished: %v, %v", empty, err)
	}
}

func TestChangeMarkOnlyForSQLite(t *testing.T) {
	if !onPostgres() {
		t.Skip("the PostgreSQL run checks this")
	}
	s := openStore(t, tempDB(t))
	if _, ok := s.ChangeMark(); ok {
		t.Fatal("a PostgreSQL store offered a mark: other daemons' commits leave no trace on this host")
	}
}

// When SQLite starts its log over from the first frame the file keeps its
// size; the header's generation is what tells the commit apart on a file
// system whose timestamps are too coarse to.
func TestChangeMarkSeesTheLogStartOver(t *testing.T) {
	if onPostgres() {
		t.Skip("marks are SQLite's")
	}
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	for i := range 20 {
		mustEnqueue(t, s, svnEvent("main", fmt.Sprint(i+1)), triggers.SourceTrigger)
	}
	before, _ := s.ChangeMark()
	if _, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(RESTART)`); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, s, svnEvent("main", "21"), triggers.SourceTrigger)
	after, _ := s.ChangeMark()
	if after.walSize != before.walSize {
		t.Skipf("the log changed size (%d -> %d): this run shows nothing about its header", before.walSize, after.walSize)
	}
	if after.walGeneration == before.walGeneration {
		t.Fatalf("the log started over and the mark's generation did not change: %x", after.walGeneration)
	}
}
