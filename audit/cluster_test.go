package audit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/internal/pgtest"
	"github.com/aicr-dev/aicr/triggers"
)

// Two stores on one database stand for two daemons.
func TestJobLockIsExclusiveAcrossStores(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	a := openStore(t, path)
	b := a
	if onPostgres() {
		b = openStore(t, path)
	}
	release, ok, err := a.TryJobLock(ctx, "reconcile main")
	if err != nil || !ok {
		t.Fatalf("first lock: ok=%v err=%v", ok, err)
	}
	if _, ok, err := b.TryJobLock(ctx, "reconcile main"); err != nil || ok {
		t.Fatalf("second holder got the lock: ok=%v err=%v", ok, err)
	}
	if rel, ok, err := b.TryJobLock(ctx, "retention"); err != nil || !ok {
		t.Fatalf("another job's lock: ok=%v err=%v", ok, err)
	} else {
		rel()
	}
	release()
	rel, ok, err := b.TryJobLock(ctx, "reconcile main")
	if err != nil || !ok {
		t.Fatalf("lock after release: ok=%v err=%v", ok, err)
	}
	rel()
}

// Many goroutines of several stores hammer one job: it never runs twice
// at once.
func TestSingletonJobNeverRunsTwiceAtOnce(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	stores := []*Store{openStore(t, path)}
	if onPostgres() {
		stores = append(stores, openStore(t, path), openStore(t, path))
	}
	var running, maxRunning, ran atomic.Int32
	var wg sync.WaitGroup
	for i := range 12 {
		s := stores[i%len(stores)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				release, ok, err := s.TryJobLock(ctx, "spool-drain")
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					continue
				}
				n := running.Add(1)
				for {
					m := maxRunning.Load()
					if n <= m || maxRunning.CompareAndSwap(m, n) {
						break
					}
				}
				ran.Add(1)
				time.Sleep(time.Millisecond)
				running.Add(-1)
				release()
			}
		}()
	}
	wg.Wait()
	if maxRunning.Load() != 1 {
		t.Fatalf("the job ran %d times at once", maxRunning.Load())
	}
	if ran.Load() == 0 {
		t.Fatal("the job never ran")
	}
}

const envLockHolder = "AICR_TEST_LOCK_HOLDER_DSN"

// TestHelperHoldJobLock is the child of TestDeadHolderReleasesJobLock: it
// takes the lock, says so, and waits to be killed.
func TestHelperHoldJobLock(t *testing.T) {
	dsn := os.Getenv(envLockHolder)
	if dsn == "" {
		t.Skip("helper process only")
	}
	s, err := OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.TryJobLock(context.Background(), "retention"); err != nil || !ok {
		t.Fatalf("helper lock: ok=%v err=%v", ok, err)
	}
	os.Stdout.WriteString("LOCKED\n")
	time.Sleep(time.Hour)
}

// A daemon SIGKILLed mid-job must not keep the job from ever running
// again: its session ends and PostgreSQL releases the advisory lock.
func TestDeadHolderReleasesJobLock(t *testing.T) {
	if !onPostgres() {
		srv := pgtest.Start(t)
		runDeadHolder(t, srv.NewDatabase(t))
		return
	}
	runDeadHolder(t, dsnFor(t, tempDB(t)))
}

func runDeadHolder(t *testing.T, dsn string) {
	ctx := context.Background()
	s, err := OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldJobLock$", "-test.v")
	cmd.Env = append(os.Environ(), envLockHolder+"="+dsn)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	locked := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "LOCKED") {
			locked = true
			break
		}
	}
	if !locked {
		t.Fatal("helper never took the lock")
	}
	if _, ok, err := s.TryJobLock(ctx, "retention"); err != nil || ok {
		t.Fatalf("lock taken while the helper holds it: ok=%v err=%v", ok, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The server notices the closed socket at once; poll without a
	// deadline of our own (the test's timeout bounds it).
	for {
		release, ok, err := s.TryJobLock(ctx, "retention")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			release()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHeartbeatsListLiveDaemons(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	a := openStore(t, path)
	b := openStore(t, path)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a.SetClock(func() time.Time { return now })
	b.SetClock(func() time.Time { return now.Add(-time.Minute) })
	if err := a.Heartbeat(ctx, "1.2.3", "10.0.0.1:8080"); err != nil {
		t.Fatal(err)
	}
	if err := b.Heartbeat(ctx, "1.2.2", "10.0.0.2:8080"); err != nil {
		t.Fatal(err)
	}
	live, err := a.Daemons(ctx, now.Add(-30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0].Owner != a.Self().Owner || live[0].Version != "1.2.3" || live[0].Listen != "10.0.0.1:8080" {
		t.Fatalf("live daemons = %+v, want only a", live)
	}
	all, err := a.Daemons(ctx, time.Time{})
	if err != nil || len(all) != 2 {
		t.Fatalf("all daemons = %+v, %v; want 2", all, err)
	}
	if err := a.Farewell(ctx); err != nil {
		t.Fatal(err)
	}
	if live, _ := b.Daemons(ctx, now.Add(-30*time.Second)); len(live) != 0 {
		t.Fatalf("after farewell: %+v", live)
	}
}

// Two daemons draw from one bucket: 20/min with a burst of 20 lets 20
// sends through between them, then the 21st waits about 3s.
func TestRateTokensAreShared(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	a := openStore(t, path)
	b := openStore(t, path)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a.SetClock(clock)
	b.SetClock(clock)
	interval := 3 * time.Second
	for i := range 20 {
		s := a
		if i%2 == 1 {
			s = b
		}
		if wait, err := s.TakeRateToken(ctx, "dingtalk-dev", interval, 20); err != nil || wait != 0 {
			t.Fatalf("send %d: wait %v, err %v", i+1, wait, err)
		}
	}
	wait, err := b.TakeRateToken(ctx, "dingtalk-dev", interval, 20)
	if err != nil || wait != interval {
		t.Fatalf("21st send: wait %v, err %v; want %v", wait, err, interval)
	}
	if wait, _ := a.TakeRateToken(ctx, "other", interval, 20); wait != 0 {
		t.Fatalf("another destination waits %v", wait)
	}
	now = now.Add(interval)
	if wait, _ := a.TakeRateToken(ctx, "dingtalk-dev", interval, 20); wait != 0 {
		t.Fatalf("after one interval: wait %v", wait)
	}
}

// Dispatch claims on PostgreSQL lock their row FOR UPDATE SKIP LOCKED and
// take no writer lock, as run claims do: while another session holds the
// writer lock, and another holds the oldest due dispatch's row (a claim in
// flight), a claim returns at once with the next dispatch.
func TestDispatchClaimSkipsLockedRows(t *testing.T) {
	dsn := ""
	if onPostgres() {
		dsn = dsnFor(t, tempDB(t))
	} else {
		dsn = pgtest.Start(t).NewDatabase(t)
	}
	ctx := context.Background()
	s, err := OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []int64
	for _, rev := range []string{"1", "2"} {
		mustEnqueue(t, s, svnEvent("main", rev), triggers.SourceTrigger)
		run := mustClaim(t, s)
		d, err := s.PlanDispatch(ctx, run.ID, "slack", delivery.PurposeReport, delivery.StatusPending, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.FinishRun(ctx, run.ID, Outcome{Status: RunSucceeded}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}

	// The other session is another daemon's: a pool of its own (the
	// suite's stores have one connection each).
	o, err := OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	other, err := o.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	if _, err := other.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, writerLockKey); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `SELECT id FROM dispatches WHERE id = $1 FOR UPDATE`, ids[0]); err != nil {
		t.Fatal(err)
	}

	claimCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := s.ClaimDue(claimCtx, "slack", time.Minute)
	if err != nil {
		t.Fatalf("claim while another session holds the writer lock and dispatch %d: %v", ids[0], err)
	}
	if c == nil || c.Dispatch.ID != ids[1] {
		t.Fatalf("claimed %+v, want dispatch %d (the locked %d passed over)", c, ids[1], ids[0])
	}
	if _, err := s.ClaimDispatch(claimCtx, ids[0], time.Minute); !errors.Is(err, delivery.ErrNotClaimable) {
		t.Fatalf("claim of the locked dispatch %d by id: %v, want delivery.ErrNotClaimable", ids[0], err)
	}
	if err := other.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := s.ClaimDispatch(ctx, ids[0], time.Minute); err != nil || c.Dispatch.ID != ids[0] {
		t.Fatalf("claim of dispatch %d once unlocked: %+v, %v", ids[0], c, err)
	}
}

// On a shared store each daemon's run directories are in its own
// data_dir: retention lists for a daemon only the runs whose directory it
// has (or runs without one), so no daemon marks another's src/ dropped or
// its directory pruned without being able to remove them.
func TestRetentionListsOnlyRunsOfItsHome(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	a, b, all := openStore(t, path), openStore(t, path), openStore(t, path)
	a.SetRunHome("/data-a")
	b.SetRunHome("/data-b")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range []*Store{a, b, all} {
		s.SetClock(func() time.Time { return now })
	}
	runOf := map[*Store]int64{}
	for i, s := range []*Store{a, b} {
		mustEnqueue(t, s, svnEvent("main", fmt.Sprint(i+1)), triggers.SourceTrigger)
		run := mustClaim(t, s)
		if err := s.SetRunDir(ctx, run.ID, fmt.Sprintf("/data-%c/runs/%d", 'a'+i, run.ID)); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishRun(ctx, run.ID, Outcome{Status: RunSucceeded}); err != nil {
			t.Fatal(err)
		}
		runOf[s] = run.ID
	}
	// A run that never got a directory is anyone's.
	mustEnqueue(t, all, svnEvent("main", "3"), triggers.SourceTrigger)
	bare := mustClaim(t, all)
	if err := all.FinishRun(ctx, bare.ID, Outcome{Status: RunFailed, Error: "fetch failed"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	cutoff := now.Add(-time.Minute)
	check := func(what string, got []int64, err error, want ...int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	ids, err := a.RunsToPrune(ctx, cutoff, 10)
	check("a: runs to prune", ids, err, runOf[a])
	ids, err = b.SourcesToDrop(ctx, 10)
	check("b: sources to drop", ids, err, runOf[b])
	ids, err = all.RunsToPrune(ctx, cutoff, 10)
	check("without a home: runs to prune", ids, err, runOf[a], runOf[b])
	ids, err = a.RunsToDelete(ctx, cutoff, 10)
	check("a: runs to delete while b's directory is there", ids, err, runOf[a], bare.ID)
	if ok, err := b.MarkRunDirPruned(ctx, runOf[b]); err != nil || !ok {
		t.Fatalf("b prunes its run's directory: %v %v", ok, err)
	}
	ids, err = a.RunsToDelete(ctx, cutoff, 10)
	check("a: runs to delete once b's directory is gone", ids, err, runOf[a], runOf[b], bare.ID)
}

// A run this home started and another home finished is listed for this
// home's stray directory; its own runs, running runs and unknown ids are
// not, and without a home nothing is.
func TestRunsFinishedElsewhere(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	a, b := openStore(t, path), openStore(t, path)
	a.SetRunHome("/data-a")
	b.SetRunHome("/data-b")
	mustEnqueue(t, a, svnEvent("main", "1"), triggers.SourceTrigger)
	moved := mustClaim(t, a)
	if err := a.SetRunDir(ctx, moved.ID, "/data-a/runs/1"); err != nil {
		t.Fatal(err)
	}
	if err := a.RetryLater(ctx, moved.ID, "killed", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := mustClaim(t, b); got.ID != moved.ID {
		t.Fatalf("b claimed %d, want %d", got.ID, moved.ID)
	}
	if err := b.SetRunDir(ctx, moved.ID, "/data-b/runs/1"); err != nil {
		t.Fatal(err)
	}
	ids := []int64{moved.ID, 999}
	if got, err := a.RunsFinishedElsewhere(ctx, ids); err != nil || len(got) != 0 {
		t.Fatalf("while b runs it: %v, %v; want none", got, err)
	}
	if err := b.FinishRun(ctx, moved.ID, Outcome{Status: RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, a, svnEvent("main", "2"), triggers.SourceTrigger)
	own := mustClaim(t, a)
	if err := a.SetRunDir(ctx, own.ID, "/data-a/runs/2"); err != nil {
		t.Fatal(err)
	}
	if err := a.FinishRun(ctx, own.ID, Outcome{Status: RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, own.ID)
	if got, err := a.RunsFinishedElsewhere(ctx, ids); err != nil || fmt.Sprint(got) != fmt.Sprint([]int64{moved.ID}) {
		t.Fatalf("a's strays: %v, %v; want [%d]", got, err, moved.ID)
	}
	if got, err := b.RunsFinishedElsewhere(ctx, ids); err != nil || fmt.Sprint(got) != fmt.Sprint([]int64{own.ID}) {
		t.Fatalf("b's strays: %v, %v; want [%d] (a's own run, should b hold a directory of it)", got, err, own.ID)
	}
	solo := openStore(t, path)
	if got, err := solo.RunsFinishedElsewhere(ctx, ids); err != nil || len(got) != 0 {
		t.Fatalf("without a run home: %v, %v", got, err)
	}
}
