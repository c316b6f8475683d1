package daemon

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/triggers"
)

// The gate on a real SQLite file: an idle worker's claim is skipped only
// while the last one found the queue empty and nobody committed; a run
// queued by another process is claimed at the next poll.
func TestIdleGateSkipsOnlyUnchangedQuietPolls(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "aicr.db")
	store, err := audit.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	other, err := audit.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	gate := newIdleGate(store)
	claims := 0
	var got *audit.Run
	claim := func() bool {
		claims++
		got, _ = store.ClaimNext(ctx)
		return got == nil && quietWhen(ctx, store.QueueEmpty)
	}
	gate.Poll(false, claim)
	gate.Poll(false, claim)
	gate.Poll(false, claim)
	if claims != 1 {
		t.Fatalf("an empty, unchanged queue was queried %d times, want once", claims)
	}

	time.Sleep(10 * time.Millisecond) // past a coarse file clock tick
	ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "7", SentAt: time.Now()}
	if _, err := other.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	gate.Poll(false, claim)
	if claims != 2 || got == nil || got.Revision != "7" {
		t.Fatalf("after another process queued r7: %d claims, claimed %+v", claims, got)
	}
	// A wake-up always claims, even an unchanged, quiet queue; it found
	// nothing, so the poll after it is skipped again.
	gate.Poll(true, claim)
	gate.Poll(true, claim)
	gate.Poll(false, claim)
	if claims != 4 {
		t.Fatalf("two forced polls and a quiet one: %d claims, want 4", claims)
	}
}

// Something waiting for a time to pass (a retry's not_before, a paused
// repo) is not quiet: a time passing writes nothing, so the gate must keep
// polling.
func TestIdleGateKeepsPollingWhileRunsWait(t *testing.T) {
	ctx := context.Background()
	store, err := audit.Open(ctx, filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "1", SentAt: time.Now()}
	if _, err := store.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run, err := store.ClaimNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.RetryLater(ctx, run.ID, "svn unreachable", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	gate := newIdleGate(store)
	claims := 0
	claim := func() bool {
		claims++
		r, _ := store.ClaimNext(ctx)
		return r == nil && quietWhen(ctx, store.QueueEmpty)
	}
	for range 3 {
		gate.Poll(false, claim)
	}
	if claims != 3 {
		t.Fatalf("a run waiting for its retry time: %d claims in 3 polls, want 3", claims)
	}
}

// Without marks (PostgreSQL) every poll queries.
func TestIdleGateWithoutMarksAlwaysQueries(t *testing.T) {
	gate := newIdleGate(nil)
	n := 0
	for range 3 {
		gate.Poll(false, func() bool { n++; return true })
	}
	if n != 3 {
		t.Fatalf("%d queries in 3 polls without marks, want 3", n)
	}
}
