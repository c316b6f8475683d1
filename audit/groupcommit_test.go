package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// A 202 means the event is on disk: every connection commits with
// synchronous=FULL (WAL fsynced at each commit).
func TestCommitsAreFsynced(t *testing.T) {
	sqliteOnly(t)
	s := openStore(t, tempDB(t))
	// Several connections, so a pooled one opened later is checked too.
	var wg sync.WaitGroup
	for i := 0; i < maxOpenConns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var level int
			if err := s.db.QueryRowContext(context.Background(), `PRAGMA synchronous`).Scan(&level); err != nil {
				t.Error(err)
				return
			}
			if level != 2 {
				t.Errorf("PRAGMA synchronous = %d, want 2 (FULL)", level)
			}
		}()
	}
	wg.Wait()
}

// 64 clients at once, each revision reported by several of them: every
// revision gets exactly one run and every receipt is stored, whatever
// batches the group commit formed.
func TestConcurrentEnqueueLandsExactlyOnce(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	const clients, perClient, revisions = 64, 10, 40
	var primaries atomic.Int64
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < perClient; i++ {
				rev := strconv.Itoa((c*perClient+i)%revisions + 1)
				res, err := s.Enqueue(ctx, svnEvent("main", rev), triggers.SourceTrigger, time.Time{})
				if err != nil {
					t.Errorf("enqueue r%s: %v", rev, err)
					return
				}
				if !res.Duplicate {
					primaries.Add(1)
				}
			}
		}(c)
	}
	wg.Wait()
	if primaries.Load() != revisions {
		t.Fatalf("%d primaries, want %d", primaries.Load(), revisions)
	}
	for r := 1; r <= revisions; r++ {
		rev := strconv.Itoa(r)
		if n, _ := s.CountRuns(ctx, "main", rev); n != 1 {
			t.Errorf("r%s: %d runs, want 1", rev, n)
		}
	}
	var events int
	s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM events`).Scan(&events)
	if events != clients*perClient {
		t.Fatalf("%d events stored, want %d", events, clients*perClient)
	}
}

// One bad request in a batch fails alone; the others are stored.
func TestGroupCommitIsolatesAFailingRequest(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	op := func(rev string, source triggers.Source) *pendingOp {
		r := enqueueReq{ev: svnEvent("main", rev), source: source, at: formatTime(s.now()), payload: "{}"}
		return &pendingOp{ctx: ctx, op: func(ctx context.Context, tx *sql.Tx) error {
			_, err := s.enqueueTx(ctx, tx, r)
			return err
		}, done: make(chan struct{})}
	}
	// "bogus" violates the CHECK constraint inside the transaction.
	batch := []*pendingOp{op("1", triggers.SourceTrigger), op("2", "bogus"), op("3", triggers.SourceTrigger)}
	s.writes.commit(batch)
	if batch[0].err != nil || batch[2].err != nil || batch[1].err == nil {
		t.Fatalf("errors: %v, %v, %v", batch[0].err, batch[1].err, batch[2].err)
	}
	for _, rev := range []string{"1", "3"} {
		if n, _ := s.CountRuns(ctx, "main", rev); n != 1 {
			t.Errorf("r%s: %d runs", rev, n)
		}
	}
	if n, _ := s.CountRuns(ctx, "main", "2"); n != 0 {
		t.Errorf("the failed request left %d runs", n)
	}
}

// BenchmarkEnqueue64Clients is the intake's database work at 64
// concurrent hook calls: each Enqueue returns once its event is durable.
func BenchmarkEnqueue64Clients(b *testing.B) {
	s, err := openPath(context.Background(), b, filepath.Join(b.TempDir(), "aicr.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var n atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	work := make(chan int)
	for c := 0; c < 64; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if _, err := s.Enqueue(context.Background(), svnEvent("main", fmt.Sprint(i+1)), triggers.SourceTrigger, time.Time{}); err != nil {
					b.Error(err)
				}
				n.Add(1)
			}
		}()
	}
	for i := 0; i < b.N; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	b.ReportMetric(float64(n.Load())/b.Elapsed().Seconds(), "events/s")
}

// Accept stores the signature and the event together: a second request
// with the same signature is refused with ErrReplayed and stores nothing,
// and SeenSignature (the rejected-event path) sees the same window.
func TestAcceptRefusesAReplayedSignature(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	now := time.Now()
	if _, err := s.Accept(ctx, "SIG-1", time.Minute, svnEvent("main", "1"), triggers.SourceTrigger, now); err != nil {
		t.Fatal(err)
	}
	_, err := s.Accept(ctx, "sig-1 ", time.Minute, svnEvent("main", "2"), triggers.SourceTrigger, now)
	if !errors.Is(err, ErrReplayed) {
		t.Fatalf("replayed signature: err = %v, want ErrReplayed", err)
	}
	if n, _ := s.CountRuns(ctx, "main", "2"); n != 0 {
		t.Fatalf("a replayed request queued %d runs", n)
	}
	var events int
	s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM events`).Scan(&events)
	if events != 1 {
		t.Fatalf("%d events stored, want 1", events)
	}
	if seen, err := s.SeenSignature(ctx, "sig-1", now, time.Minute); err != nil || !seen {
		t.Fatalf("SeenSignature after Accept: %v %v, want replayed", seen, err)
	}
	// Past the window the signature is forgotten (pruned) and accepted.
	later := now.Add(time.Minute + time.Second)
	if _, err := s.Accept(ctx, "sig-1", time.Minute, svnEvent("main", "3"), triggers.SourceTrigger, later); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	if n, _ := s.ReplaySignatures(ctx); n != 1 {
		t.Fatalf("%d signatures remembered, want 1 (the expired one pruned)", n)
	}
}

// A failed enqueue does not leave its signature behind: the client's
// corrected or re-sent request must not be refused as a replay.
func TestAcceptStoresNothingWhenTheEnqueueFails(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	if _, err := s.Accept(ctx, "sig-2", time.Minute, svnEvent("main", "1"), "bogus", time.Now()); err == nil {
		t.Fatal("accepted an invalid source")
	}
	if n, _ := s.ReplaySignatures(ctx); n != 0 {
		t.Fatalf("%d signatures remembered after a failed accept", n)
	}
}

// A read-only store refuses the intake's writes with a clear error.
func TestReadOnlyStoreRefusesAccept(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	openStore(t, path)
	ro, err := openReadOnlyPath(ctx, t, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Accept(ctx, "sig", time.Minute, svnEvent("main", "1"), triggers.SourceTrigger, time.Now()); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("accept through a read-only store: %v", err)
	}
}

// Requests that arrive while a batch commits share the next commit (and
// its fsync): 64 Accepts queued behind a held batch take two commits, not
// 64, and every one of them is stored.
func TestAcceptsWaitingForACommitShareOne(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	b := s.writes
	hold, held := make(chan struct{}), make(chan struct{})
	go b.submit(ctx, func(context.Context, *sql.Tx) error {
		close(held)
		<-hold
		return nil
	})
	<-held
	const clients = 64
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			if _, err := s.Accept(ctx, fmt.Sprintf("sig-%d", c), time.Minute, svnEvent("main", strconv.Itoa(c+1)), triggers.SourceTrigger, time.Now()); err != nil {
				t.Error(err)
			}
		}(c)
	}
	// Every client is inside submit; at most a few may not yet be
	// blocked on the hand-over when the held batch ends.
	for b.submitted.Load() < clients+1 {
		runtime.Gosched()
	}
	before := b.commits.Load()
	close(hold)
	wg.Wait()
	commits := b.commits.Load() - before
	if commits >= clients/2 {
		t.Fatalf("%d requests took %d commits: the group commit did not batch them", clients, commits)
	}
	var events int
	s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM events`).Scan(&events)
	if events != clients {
		t.Fatalf("%d events stored, want %d", events, clients)
	}
	t.Logf("%d requests, %d commits", clients, commits)
}
