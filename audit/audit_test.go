package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
)

// openStore opens path and closes it when the test ends; closing twice is
// harmless, so tests may close early to simulate a crash.
func openStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := openPath(context.Background(), t, path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func tempDB(t *testing.T) string {
	return filepath.Join(t.TempDir(), "data", "aicr.db")
}

func svnEvent(repo, rev string) triggers.Event {
	return triggers.Event{V: 1, VCS: "svn", Repo: repo, Revision: rev, User: "alice",
		SentAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func mustEnqueue(t *testing.T, s *Store, ev triggers.Event, src triggers.Source) Enqueued {
	t.Helper()
	got, err := s.Enqueue(context.Background(), ev, src, time.Time{})
	if err != nil {
		t.Fatalf("enqueue %s@%s (%s): %v", ev.Repo, ev.Revision, src, err)
	}
	return got
}

func mustClaim(t *testing.T, s *Store) *Run {
	t.Helper()
	run, err := s.ClaimNext(context.Background())
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return run
}

func TestOpenMigratesOnceAndReopens(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path)

	if !onPostgres() {
		var mode string
		if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" {
			t.Errorf("journal_mode = %q, want wal", mode)
		}
		var fk int
		if err := s.db.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if fk != 1 {
			t.Errorf("foreign_keys = %d, want 1", fk)
		}
	}
	mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openStore(t, path)
	v, err := s2.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v != len(migrations) {
		t.Errorf("schema version = %d, want %d", v, len(migrations))
	}
	var rows int
	if err := s2.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(migrations) {
		t.Errorf("schema_migrations has %d rows, want %d", rows, len(migrations))
	}
	if n, err := s2.CountRuns(ctx, "main", "1"); err != nil || n != 1 {
		t.Errorf("runs after reopen = %d, %v; want 1", n, err)
	}
}

// Daemon and CLI may both open a fresh data dir at once; the migration
// check inside an immediate transaction must let exactly one apply it.
func TestOpenConcurrentOnFreshFile(t *testing.T) {
	path := tempDB(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := openPath(context.Background(), t, path)
			if err != nil {
				errs <- err
				return
			}
			errs <- s.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent open: %v", err)
		}
	}
	s := openStore(t, path)
	var rows int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(migrations) {
		t.Errorf("schema_migrations has %d rows, want %d", rows, len(migrations))
	}
}

func TestEnqueueIdempotentOnRepoRevision(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))

	first := mustEnqueue(t, s, svnEvent("main", "42"), triggers.SourceTrigger)
	if first.Duplicate || first.EventID == 0 || first.RunID == 0 {
		t.Fatalf("first enqueue = %+v", first)
	}
	for _, src := range []triggers.Source{triggers.SourceSpool, triggers.SourceReconcile, triggers.SourceTrigger} {
		again := mustEnqueue(t, s, svnEvent("main", "42"), src)
		want := Enqueued{EventID: first.EventID, RunID: first.RunID, Duplicate: true}
		if again != want {
			t.Errorf("enqueue again from %s = %+v, want %+v", src, again, want)
		}
	}
	// Same revision in another repo, and another revision, are new work.
	other := mustEnqueue(t, s, svnEvent("tools", "42"), triggers.SourceTrigger)
	next := mustEnqueue(t, s, svnEvent("main", "43"), triggers.SourceTrigger)
	if other.Duplicate || next.Duplicate || other.RunID == first.RunID || next.RunID == first.RunID {
		t.Errorf("distinct revisions treated as duplicates: %+v %+v", other, next)
	}

	if n, _ := s.CountRuns(ctx, "main", "42"); n != 1 {
		t.Errorf("runs for main@42 = %d, want 1", n)
	}
	total, dups, err := s.CountEvents(ctx, "main", "42")
	if err != nil || total != 4 || dups != 3 {
		t.Errorf("events for main@42 = %d total, %d duplicates, %v; want 4, 3", total, dups, err)
	}
}

// Many goroutines over two Stores (two connection pools, as daemon and CLI
// would be) race to enqueue one revision: exactly one run, every receipt
// stored, every caller told the same run id.
func TestEnqueueConcurrentSameRevision(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	stores := []*Store{openStore(t, path), openStore(t, path)}
	sources := []triggers.Source{triggers.SourceTrigger, triggers.SourceSpool, triggers.SourceReconcile}

	const n = 50
	results := make([]Enqueued, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = stores[i%2].Enqueue(ctx, svnEvent("main", "7"), sources[i%3], time.Time{})
		}()
	}
	close(start)
	wg.Wait()

	primaries := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
		if !results[i].Duplicate {
			primaries++
		}
		if results[i].RunID != results[0].RunID || results[i].EventID != results[0].EventID {
			t.Errorf("enqueue %d = %+v, others got %+v", i, results[i], results[0])
		}
	}
	if primaries != 1 {
		t.Errorf("%d callers were told they were first, want 1", primaries)
	}
	if runs, _ := stores[0].CountRuns(ctx, "main", "7"); runs != 1 {
		t.Errorf("runs = %d, want 1", runs)
	}
	total, dups, err := stores[1].CountEvents(ctx, "main", "7")
	if err != nil || total != n || dups != n-1 {
		t.Errorf("events = %d total, %d duplicates, %v; want %d, %d", total, dups, err, n, n-1)
	}
}

func TestEnqueueManualAlwaysNewRun(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))

	auto := mustEnqueue(t, s, svnEvent("main", "5"), triggers.SourceTrigger)
	m1 := mustEnqueue(t, s, svnEvent("main", "5"), triggers.SourceManual)
	m2 := mustEnqueue(t, s, svnEvent("main", "5"), triggers.SourceManual)
	if m1.Duplicate || m2.Duplicate {
		t.Fatalf("manual enqueue marked duplicate: %+v %+v", m1, m2)
	}
	if m1.RunID == auto.RunID || m2.RunID == auto.RunID || m1.RunID == m2.RunID {
		t.Errorf("manual runs reuse ids: auto %d, manual %d, %d", auto.RunID, m1.RunID, m2.RunID)
	}
	// Manual receipts must not take over the automatic primary slot.
	again := mustEnqueue(t, s, svnEvent("main", "5"), triggers.SourceSpool)
	if !again.Duplicate || again.RunID != auto.RunID {
		t.Errorf("spool after manual = %+v, want duplicate of run %d", again, auto.RunID)
	}
	// A manual request for a revision never seen automatically leaves the
	// slot free for the hook.
	mustEnqueue(t, s, svnEvent("main", "6"), triggers.SourceManual)
	if hook := mustEnqueue(t, s, svnEvent("main", "6"), triggers.SourceTrigger); hook.Duplicate {
		t.Errorf("trigger after manual-only revision marked duplicate: %+v", hook)
	}
	if n, _ := s.CountRuns(ctx, "main", "5"); n != 3 {
		t.Errorf("runs for main@5 = %d, want 3", n)
	}
}

func TestEnqueueRejectsInvalidInput(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	if _, err := s.Enqueue(ctx, svnEvent("main", "1"), "hook", time.Time{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown source: err = %v, want ErrInvalid", err)
	}
	if _, err := s.Enqueue(ctx, svnEvent("", "1"), triggers.SourceTrigger, time.Time{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty repo: err = %v, want ErrInvalid", err)
	}
}

func TestClaimNextOrderAndEmpty(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	if _, err := s.ClaimNext(ctx); !errors.Is(err, ErrNoWork) {
		t.Fatalf("claim on empty queue: err = %v, want ErrNoWork", err)
	}

	var want []int64
	for _, rev := range []string{"10", "11", "12"} {
		ev := svnEvent("main", rev)
		ev.Client = "ws-" + rev
		want = append(want, mustEnqueue(t, s, ev, triggers.SourceTrigger).RunID)
	}
	for i, id := range want {
		run := mustClaim(t, s)
		if run.ID != id {
			t.Errorf("claim %d got run %d, want %d", i, run.ID, id)
		}
		if run.Status != RunRunning || run.Attempts != 1 || run.StartedAt.IsZero() {
			t.Errorf("claimed run = status %s, attempts %d, started %v", run.Status, run.Attempts, run.StartedAt)
		}
		if run.Event.Revision != run.Revision || run.Event.Client != "ws-"+run.Revision || run.Source != triggers.SourceTrigger {
			t.Errorf("claimed run event = %+v, source %s", run.Event, run.Source)
		}
	}
	if _, err := s.ClaimNext(ctx); !errors.Is(err, ErrNoWork) {
		t.Errorf("claim after draining: err = %v, want ErrNoWork", err)
	}
}

// Four workers, two per Store, drain 100 runs: each run claimed exactly once.
func TestClaimNextConcurrentNoDoubleClaim(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	a, b := openStore(t, path), openStore(t, path)
	const n = 100
	for i := range n {
		mustEnqueue(t, a, svnEvent("main", fmt.Sprint(i)), triggers.SourceTrigger)
	}

	var (
		mu     sync.Mutex
		claims = map[int64]int{}
		wg     sync.WaitGroup
	)
	errs := make(chan error, 4)
	for w := range 4 {
		s := []*Store{a, b}[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				run, err := s.ClaimNext(ctx)
				if errors.Is(err, ErrNoWork) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				claims[run.ID]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("claim: %v", err)
	}
	if len(claims) != n {
		t.Errorf("%d distinct runs claimed, want %d", len(claims), n)
	}
	for id, c := range claims {
		if c != 1 {
			t.Errorf("run %d claimed %d times", id, c)
		}
	}
	running, err := a.ListRuns(ctx, ListOptions{Limit: 1000, Status: RunRunning})
	if err != nil || len(running) != n {
		t.Errorf("running runs = %d, %v; want %d", len(running), err, n)
	}
}

func TestRequeueInterruptedAfterCrash(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path)
	enq := mustEnqueue(t, s, svnEvent("main", "99"), triggers.SourceTrigger)
	mustEnqueue(t, s, svnEvent("main", "100"), triggers.SourceTrigger)
	if run := mustClaim(t, s); run.ID != enq.RunID {
		t.Fatalf("claimed %d, want %d", run.ID, enq.RunID)
	}
	// Crash: the store goes away with the run still running.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, path)
	// The crashed owner's lease runs out; until then recovery must wait
	// (its process may still be working).
	if n, _, _ := s.RequeueInterrupted(ctx, 3); n != 0 {
		t.Fatalf("requeued %d runs under a live lease, want 0", n)
	}
	later := time.Now().Add(DefaultLeaseTTL + time.Second)
	s.now = func() time.Time { return later }
	n, abandoned, err := s.RequeueInterrupted(ctx, 3)
	if err != nil || n != 1 || abandoned != 0 {
		t.Fatalf("requeue = %d (abandoned %d), %v; want 1", n, abandoned, err)
	}
	// The interrupted run keeps its place ahead of later work.
	run := mustClaim(t, s)
	if run.ID != enq.RunID || run.Attempts != 2 {
		t.Errorf("re-claimed run %d with %d attempts, want run %d with 2", run.ID, run.Attempts, enq.RunID)
	}
	if c, _ := s.CountRuns(ctx, "main", "99"); c != 1 {
		t.Errorf("runs for main@99 = %d, want 1", c)
	}
	if n, _, _ := s.RequeueInterrupted(ctx, 3); n != 1 {
		t.Errorf("second requeue = %d, want 1 (the re-claimed run)", n)
	}
	// The third interruption is the last: a run that stops the daemon every
	// time is failed with the reason instead of looping forever.
	mustClaim(t, s)
	n, abandoned, err = s.RequeueInterrupted(ctx, 3)
	if err != nil || n != 0 || abandoned != 1 {
		t.Fatalf("after 3 attempts: requeued %d abandoned %d %v", n, abandoned, err)
	}
	d, err := s.GetRun(ctx, enq.RunID)
	if err != nil || d.Status != RunFailed || !strings.Contains(d.Error, "interrupted 3 times") {
		t.Fatalf("abandoned run: %+v %v", d.RunSummary, err)
	}
}

func TestRetryLaterHoldsTheRunBack(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.now = func() time.Time { return now }
	enq := mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	run := mustClaim(t, s)
	if err := s.RetryLater(ctx, run.ID, "svn: connection refused", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimNext(ctx); !errors.Is(err, ErrNoWork) {
		t.Fatalf("a run held back must not be claimed early, got %v", err)
	}
	now = now.Add(time.Minute)
	again := mustClaim(t, s)
	if again.ID != enq.RunID || again.Attempts != 2 || again.Error != "svn: connection refused" {
		t.Fatalf("re-claimed: %+v", again.RunSummary)
	}
	if err := s.RetryLater(ctx, 999, "x", now); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("unknown run: %v", err)
	}
}

func TestRepoMarks(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	if _, ok, err := s.RepoMark(ctx, "main"); ok || err != nil {
		t.Fatalf("no mark yet: %v %v", ok, err)
	}
	for _, v := range []string{"5", "9"} {
		if err := s.SetRepoMark(ctx, "main", v); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok, err := s.RepoMark(ctx, "main"); !ok || err != nil || v != "9" {
		t.Fatalf("mark = %q %v %v", v, ok, err)
	}
}

func problem(file string, line int, sev review.Severity, msg string) review.Problem {
	return review.Problem{File: file, Line: line, Severity: sev, Category: "bug", Message: msg,
		Fingerprint: fmt.Sprintf("%s:%d:%s", file, line, msg)}
}

func TestFinishRunReplacesProblems(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	enq := mustEnqueue(t, s, svnEvent("main", "3"), triggers.SourceTrigger)

	if err := s.FinishRun(ctx, enq.RunID, Outcome{Status: RunSucceeded}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("finish queued run: err = %v, want ErrNotRunning", err)
	}
	mustClaim(t, s)
	first := []review.Problem{
		problem("b.go", 5, review.SeverityLow, "low b"),
		problem("a.go", 9, review.SeverityHigh, "high a9"),
		problem("a.go", 2, review.SeverityHigh, "high a2"),
		problem("c.go", 1, review.SeverityCritical, "crit c"),
	}
	if err := s.FinishRun(ctx, enq.RunID, Outcome{Status: RunSucceeded, Problems: first,
		Summaries: []review.Summary{{Title: "T", Markdown: "**ok**"}}}); err != nil {
		t.Fatalf("finish: %v", err)
	}
	d, err := s.GetRun(ctx, enq.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, p := range d.Problems {
		order = append(order, p.Message)
	}
	if fmt.Sprint(order) != "[crit c high a2 high a9 low b]" {
		t.Errorf("problem order = %v", order)
	}
	if d.ProblemCount != 4 || d.Status != RunSucceeded || d.FinishedAt.IsZero() {
		t.Errorf("finished run = count %d, status %s, finished %v", d.ProblemCount, d.Status, d.FinishedAt)
	}
	if len(d.Summaries) != 1 || d.Summaries[0].Markdown != "**ok**" {
		t.Errorf("summaries = %+v", d.Summaries)
	}
	if d.Problems[0] != first[3] {
		t.Errorf("stored problem = %+v, want %+v", d.Problems[0], first[3])
	}

	if err := s.FinishRun(ctx, enq.RunID, Outcome{Status: RunFailed}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("finish twice: err = %v, want ErrNotRunning", err)
	}

	// Force the finished run back through the queue, as if re-done, and
	// finish it with fewer problems: the old ones must not linger.
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET status = 'running' WHERE id = ?`, enq.RunID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.RequeueInterrupted(ctx, 5); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s)
	second := []review.Problem{problem("a.go", 2, review.SeverityMedium, "only")}
	if err := s.FinishRun(ctx, enq.RunID, Outcome{Status: RunSucceeded, Problems: second}); err != nil {
		t.Fatalf("finish re-done run: %v", err)
	}
	d, err = s.GetRun(ctx, enq.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Problems) != 1 || d.Problems[0].Message != "only" || d.ProblemCount != 1 || d.Attempts != 2 {
		t.Errorf("after re-do: problems %+v, count %d, attempts %d", d.Problems, d.ProblemCount, d.Attempts)
	}
	if len(d.Summaries) != 0 {
		t.Errorf("summaries not replaced: %+v", d.Summaries)
	}
}

func TestFinishRunErrors(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	enq := mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	mustClaim(t, s)

	if err := s.FinishRun(ctx, 9999, Outcome{Status: RunFailed}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown run: err = %v, want ErrNotFound", err)
	}
	if err := s.FinishRun(ctx, enq.RunID, Outcome{Status: RunQueued}); !errors.Is(err, ErrInvalid) {
		t.Errorf("non-final status: err = %v, want ErrInvalid", err)
	}
	bad := []review.Problem{{File: "a", Line: 1, Severity: "urgent", Message: "x"}}
	if err := s.FinishRun(ctx, enq.RunID, Outcome{Status: RunSucceeded, Problems: bad}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad severity: err = %v, want ErrInvalid", err)
	}
	// The rejected calls must not have finished the run.
	if err := s.FinishRun(ctx, enq.RunID, Outcome{Status: RunSkipped, SkipReason: "lgtm"}); err != nil {
		t.Fatalf("finish skipped: %v", err)
	}
	d, err := s.GetRun(ctx, enq.RunID)
	if err != nil {
		t.Fatal(err)
	}
	r := d.Result()
	if r.Skip == nil || r.Skip.Reason != "lgtm" || r.Problems == nil || r.Summaries == nil {
		t.Errorf("result of skipped run = %+v", r)
	}
	if err := s.SetRunDir(ctx, 9999, "/x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("set dir of unknown run: err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetRun(ctx, 9999); !errors.Is(err, ErrNotFound) {
		t.Errorf("get unknown run: err = %v, want ErrNotFound", err)
	}
}

func TestDispatchUniquePerRunAndChannel(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s, other := openStore(t, path), openStore(t, path)
	run := mustEnqueue(t, s, svnEvent("main", "8"), triggers.SourceTrigger).RunID

	// Concurrent resumers over two Stores all get the one row.
	const n = 10
	got := make([]delivery.Dispatch, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = []*Store{s, other}[i%2].PlanDispatch(ctx, run, "slack", delivery.PurposeReport, delivery.StatusPending, "", nil)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("plan %d: %v", i, errs[i])
		}
		if got[i].ID != got[0].ID {
			t.Errorf("plan %d returned dispatch %d, others %d", i, got[i].ID, got[0].ID)
		}
	}
	d := got[0]
	if d.Status != delivery.StatusPending || d.Attempts != 0 || d.RunID != run || d.Channel != "slack" || !d.SentAt.IsZero() {
		t.Errorf("new dispatch = %+v", d)
	}

	attempt := func(r delivery.AttemptResult) {
		t.Helper()
		c, err := s.ClaimDispatch(ctx, d.ID, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.FinishAttempt(ctx, c, r); err != nil {
			t.Fatal(err)
		}
	}
	attempt(delivery.AttemptResult{Status: delivery.StatusPending, Error: "502 bad gateway"})
	attempt(delivery.AttemptResult{Status: delivery.StatusSent})
	// A resumed run plans again: the sent row keeps its status.
	again, err := s.PlanDispatch(ctx, run, "slack", delivery.PurposeReport, delivery.StatusPending, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != d.ID || again.Status != delivery.StatusSent || again.Attempts != 2 || again.LastError != "" || again.SentAt.IsZero() || again.FirstAttemptAt.IsZero() {
		t.Errorf("dispatch after retry+send = %+v", again)
	}

	feishu, err := s.PlanDispatch(ctx, run, "feishu", delivery.PurposeReport, delivery.StatusSuppressed, "no problems", nil)
	if err != nil {
		t.Fatal(err)
	}
	if feishu.ID == d.ID {
		t.Errorf("second channel shares dispatch %d", d.ID)
	}
	detail, err := s.GetRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(detail.Dispatches) != 2 || detail.Dispatches[1].Status != delivery.StatusSuppressed || detail.Dispatches[1].Attempts != 0 {
		t.Errorf("run dispatches = %+v", detail.Dispatches)
	}

	if _, err := s.PlanDispatch(ctx, 9999, "slack", delivery.PurposeReport, delivery.StatusPending, "", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("dispatch for unknown run: err = %v, want ErrNotFound", err)
	}
	if _, err := s.PlanDispatch(ctx, run, "slack", delivery.PurposeReport, "delivered", "", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("plan bad status: err = %v, want ErrInvalid", err)
	}
}

func TestListRunsAndGetRun(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.FixedZone("CST", 8*3600))

	p4 := triggers.Event{V: 1, VCS: "p4", Repo: "depot", Revision: "12345", User: "bob", Client: "bob-ws", ServerPort: "ssl:1666"}
	a, err := s.Enqueue(ctx, p4, triggers.SourceTrigger, t0)
	if err != nil {
		t.Fatal(err)
	}
	dup, err := s.Enqueue(ctx, p4, triggers.SourceSpool, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	b := mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	c := mustEnqueue(t, s, svnEvent("main", "2"), triggers.SourceManual)

	claimed := mustClaim(t, s) // run a, the oldest
	if err := s.SetRunDir(ctx, claimed.ID, "/data/runs/1"); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, claimed.ID, Outcome{Status: RunFailed, Error: "fetch change: boom",
		Problems: []review.Problem{problem("x.c", 1, review.SeverityInfo, "m")}}); err != nil {
		t.Fatal(err)
	}

	all, err := s.ListRuns(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range all {
		ids = append(ids, r.ID)
	}
	if fmt.Sprint(ids) != fmt.Sprint([]int64{c.RunID, b.RunID, a.RunID}) {
		t.Errorf("list order = %v, want newest first", ids)
	}
	last := all[2]
	want := RunSummary{ID: a.RunID, EventID: a.EventID, VCS: "p4", Repo: "depot", Revision: "12345",
		Status: RunFailed, Error: "fetch change: boom", ProblemCount: 1, Attempts: 1,
		QueuedAt: t0.UTC(), StartedAt: last.StartedAt, FinishedAt: last.FinishedAt,
		RunDir: "/data/runs/1", Source: triggers.SourceTrigger, User: "bob"}
	if last != want {
		t.Errorf("listed run =\n %+v\nwant\n %+v", last, want)
	}
	if last.StartedAt.IsZero() || last.FinishedAt.IsZero() || last.StartedAt.Location() != time.UTC {
		t.Errorf("times not set or not UTC: %v %v", last.StartedAt, last.FinishedAt)
	}
	if all[0].Source != triggers.SourceManual || all[0].Status != RunQueued || !all[0].StartedAt.IsZero() {
		t.Errorf("manual run listed as %+v", all[0])
	}

	for _, tc := range []struct {
		opts ListOptions
		want []int64
	}{
		{ListOptions{Repo: "main"}, []int64{c.RunID, b.RunID}},
		{ListOptions{Status: RunFailed}, []int64{a.RunID}},
		{ListOptions{Repo: "main", Status: RunQueued, Limit: 1}, []int64{c.RunID}},
		{ListOptions{Repo: "nope"}, nil},
	} {
		got, err := s.ListRuns(ctx, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(tc.want) {
			t.Errorf("ListRuns(%+v) = %v, want %v", tc.opts, ids, tc.want)
		}
	}
	if _, err := s.ListRuns(ctx, ListOptions{Status: "done"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad status filter: err = %v, want ErrInvalid", err)
	}

	d, err := s.GetRun(ctx, a.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Events) != 2 || d.Events[0].ID != a.EventID || d.Events[0].DuplicateOf != 0 ||
		d.Events[1].DuplicateOf != a.EventID || d.Events[1].Source != triggers.SourceSpool ||
		!d.Events[1].ReceivedAt.Equal(t0.Add(time.Minute)) || d.Events[1].Client != "bob-ws" {
		t.Errorf("run events = %+v (duplicate receipt %+v)", d.Events, dup)
	}
	if d.Event.ServerPort != "ssl:1666" || d.Event.Client != "bob-ws" {
		t.Errorf("run event payload = %+v", d.Event)
	}
	if len(d.Problems) != 1 || d.Problems[0].File != "x.c" {
		t.Errorf("run problems = %+v", d.Problems)
	}
}

// The CLI opens its own Store while the daemon writes. In WAL mode a
// reader's open snapshot neither blocks the writer nor sees its commits;
// in rollback-journal mode the writer's commit would fail with SQLITE_BUSY
// once the busy timeout expired, failing this test.
func TestSecondStoreReadsWhileFirstWrites(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	daemon := openStore(t, path)
	cli := openStore(t, path)
	mustEnqueue(t, daemon, svnEvent("main", "1"), triggers.SourceTrigger)

	snap, err := cli.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Rollback()
	count := func(q querier) int {
		t.Helper()
		var n int
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(snap); n != 1 {
		t.Fatalf("snapshot sees %d runs, want 1", n)
	}

	// The daemon keeps working: enqueue, claim, finish.
	enq := mustEnqueue(t, daemon, svnEvent("main", "2"), triggers.SourceTrigger)
	claimed := mustClaim(t, daemon)
	if err := daemon.FinishRun(ctx, claimed.ID, Outcome{Status: RunSucceeded}); err != nil {
		t.Fatalf("finish while a reader holds a snapshot: %v", err)
	}

	if n := count(snap); n != 1 {
		t.Errorf("open snapshot sees %d runs, want still 1", n)
	}
	if err := snap.Rollback(); err != nil {
		t.Fatal(err)
	}
	runs, err := cli.ListRuns(ctx, ListOptions{})
	if err != nil || len(runs) != 2 || runs[0].ID != enq.RunID || runs[1].Status != RunSucceeded {
		t.Errorf("cli sees %+v, %v after the snapshot ended", runs, err)
	}

	// And under load: the CLI reads continuously while the daemon writes.
	done := make(chan struct{})
	readErr := make(chan error, 1)
	go func() {
		defer close(readErr)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := cli.ListRuns(ctx, ListOptions{Limit: 10}); err != nil {
				readErr <- err
				return
			}
			if _, err := cli.GetRun(ctx, claimed.ID); err != nil {
				readErr <- err
				return
			}
		}
	}()
	for i := range 50 {
		mustEnqueue(t, daemon, svnEvent("load", fmt.Sprint(i)), triggers.SourceTrigger)
	}
	close(done)
	if err := <-readErr; err != nil {
		t.Errorf("cli read during writes: %v", err)
	}
	if got, _ := cli.ListRuns(ctx, ListOptions{Repo: "load", Limit: 100}); len(got) != 50 {
		t.Errorf("cli sees %d load runs, want 50", len(got))
	}
}

func TestRecordRejectedEvent(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	if _, err := s.RecordRejectedEvent(ctx, RejectedEvent{Payload: []byte("x")}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no reason: err = %v, want ErrInvalid", err)
	}
	id1, err := s.RecordRejectedEvent(ctx, RejectedEvent{Payload: []byte(`{"repo":"ghost"}`),
		Reason: "unknown repo", Remote: "10.0.0.5:4711"})
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, MaxRejectedPayload+10)
	big[0] = 0xff // not UTF-8: stored as a blob, byte for byte
	id2, err := s.RecordRejectedEvent(ctx, RejectedEvent{Payload: big, Reason: "bad json"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.ListRejectedEvents(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != id2 || got[1].ID != id1 {
		t.Fatalf("rejected events = %+v", got)
	}
	if !got[0].Truncated || len(got[0].Payload) != MaxRejectedPayload || got[0].Payload[0] != 0xff {
		t.Errorf("big payload: truncated %v, len %d", got[0].Truncated, len(got[0].Payload))
	}
	if got[1].Truncated || string(got[1].Payload) != `{"repo":"ghost"}` || got[1].Remote != "10.0.0.5:4711" ||
		got[1].Reason != "unknown repo" || got[1].ReceivedAt.IsZero() {
		t.Errorf("small payload = %+v", got[1])
	}
}

func TestEnqueueClaimedIsNeverClaimedByWorkers(t *testing.T) {
	ctx := context.Background()
	s, err := openPath(ctx, t, filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "5"}
	run, err := s.EnqueueClaimed(ctx, ev, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != RunRunning || run.Attempts != 1 || run.Source != triggers.SourceManual {
		t.Fatalf("claimed manual run: %+v", run.RunSummary)
	}
	if _, err := s.ClaimNext(ctx); !errors.Is(err, ErrNoWork) {
		t.Fatalf("a worker must not see the manual run, got %v", err)
	}
	// A hook event for the same revision is still the primary receipt.
	enq, err := s.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{})
	if err != nil || enq.Duplicate || enq.RunID == run.ID {
		t.Fatalf("hook event after a manual review: %+v %v", enq, err)
	}
	if err := s.FinishRun(ctx, run.ID, Outcome{Status: RunSucceeded}); err != nil {
		t.Fatal(err)
	}
}

// A failed run's delivery (partial review or notice) is superseded by the
// report a retry plans, whatever became of it: a fresh dispatch with its
// own attempts, thread and parts, while its attempt history is kept. A
// report does not supersede a report, and a second failure does not
// replace the first one's delivery.
func TestReportSupersedesAFailedRunsDelivery(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	run := mustEnqueue(t, s, svnEvent("main", "9"), triggers.SourceTrigger).RunID
	for _, end := range []delivery.AttemptResult{
		{Status: delivery.StatusSent, MessageID: "1700000000.000100", PartsDelivered: 1},
		{Status: delivery.StatusFailed, Error: "403 forbidden"},
	} {
		ch := "slack-" + string(end.Status)
		d, err := s.PlanDispatch(ctx, run, ch, delivery.PurposeError, delivery.StatusPending, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.ClaimDispatch(ctx, d.ID, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.FinishAttempt(ctx, c, end); err != nil {
			t.Fatal(err)
		}
		// The run fails again: its delivery stays as it was.
		if again, err := s.PlanDispatch(ctx, run, ch, delivery.PurposeError, delivery.StatusPending, "", nil); err != nil || again.Status != end.Status || again.Attempts != 1 {
			t.Errorf("%s: a second failure replanned the delivery: %+v %v", ch, again, err)
		}
		rep, err := s.PlanDispatch(ctx, run, ch, delivery.PurposeReport, delivery.StatusPending, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.ID != d.ID || rep.Purpose != delivery.PurposeReport || rep.Status != delivery.StatusPending || rep.Attempts != 0 || rep.MessageID != "" ||
			rep.PartsDelivered != 0 || !rep.SentAt.IsZero() || !rep.FirstAttemptAt.IsZero() || rep.LastError != "" {
			t.Errorf("%s: the report after the failure delivery: %+v", ch, rep)
		}
		// The report is sent as attempt 2: the history goes on.
		c, err = s.ClaimDispatch(ctx, d.ID, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if c.Attempt != 2 {
			t.Errorf("%s: the report's first attempt is number %d, want 2", ch, c.Attempt)
		}
		sent, err := s.FinishAttempt(ctx, c, delivery.AttemptResult{Status: delivery.StatusSent})
		if err != nil {
			t.Fatal(err)
		}
		// A report is never sent twice.
		if again, err := s.PlanDispatch(ctx, run, ch, delivery.PurposeReport, delivery.StatusPending, "", nil); err != nil || again.Status != delivery.StatusSent || again.Attempts != sent.Attempts {
			t.Errorf("%s: a sent report was planned again: %+v %v", ch, again, err)
		}
	}
}

// --status takes every label the list shows: a retrying run is listed as
// retrying and not as queued, a held one as held, and each label's filter
// returns exactly the runs Label gives it.
func TestListRunsByLabel(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	queued := mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger).RunID
	retry := mustEnqueue(t, s, svnEvent("main", "2"), triggers.SourceTrigger).RunID
	held := mustEnqueue(t, s, svnEvent("other", "3"), triggers.SourceTrigger).RunID
	// Claim runs oldest first; put the second back as a transient failure.
	first, second := mustClaim(t, s), mustClaim(t, s)
	if first.ID != queued || second.ID != retry {
		t.Fatalf("claimed %d and %d", first.ID, second.ID)
	}
	if err := s.RetryLater(ctx, retry, "svn: E170013: unreachable", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PauseRepo(ctx, "other", "test", "maintenance"); err != nil {
		t.Fatal(err)
	}
	for status, want := range map[RunStatus]int64{RunRetrying: retry, RunHeld: held, RunRunning: queued} {
		runs, err := s.ListRuns(ctx, ListOptions{Status: status})
		if err != nil {
			t.Fatalf("%s: %v", status, err)
		}
		if len(runs) != 1 || runs[0].ID != want || runs[0].Label() != status {
			t.Errorf("--status %s: %+v, want run %d", status, runs, want)
		}
	}
	if runs, err := s.ListRuns(ctx, ListOptions{Status: RunQueued}); err != nil || len(runs) != 0 {
		t.Errorf("queued lists the retrying or held run: %+v %v", runs, err)
	}
	if _, err := s.ListRuns(ctx, ListOptions{Status: "waiting"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown status: %v", err)
	}
}
