package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// The retention job removes the directories of runs finished longer ago
// than keep_runs_for, and only those: a recent run, a running run, a run
// waiting for a retry and a failed run re-queued by `aicr run retry`
// keep theirs. The rows stay and say the directory was pruned.
func TestRetentionPrunesOnlyOldFinishedRunDirs(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	store, err := audit.Open(ctx, filepath.Join(dataDir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { return now }
	store.SetClock(clock)

	const (
		oldSucceeded = iota
		oldFailed
		oldSkipped
		retriedByOperator
		waitingForRetry
		stillRunning
		recent
		count
	)
	ids := make([]int64, count)
	dirOf := func(i int) string { return filepath.Join(dataDir, "runs", strconv.FormatInt(ids[i], 10)) }
	for i := range count {
		ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: strconv.Itoa(i + 1), User: "alice"}
		if _, err := store.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range count {
		if i == recent {
			now = t0.Add(29 * 24 * time.Hour)
		}
		run, err := store.ClaimNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = run.ID
		if err := os.MkdirAll(filepath.Join(dirOf(i), "agent"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dirOf(i), "agent", "review.json"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := store.SetRunDir(ctx, run.ID, dirOf(i)); err != nil {
			t.Fatal(err)
		}
		switch i {
		case oldSucceeded, recent:
			err = store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunSucceeded})
		case oldFailed, retriedByOperator:
			err = store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunFailed, Error: "agent crashed"})
		case oldSkipped:
			err = store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunSkipped, SkipReason: "no reviewable files"})
		case waitingForRetry:
			err = store.RetryLater(ctx, run.ID, "svn server down", now.Add(90*24*time.Hour))
		case stillRunning:
			// Left running: its worker renews the lease as it works.
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := store.RetryRun(ctx, ids[retriedByOperator]); err != nil {
		t.Fatal(err)
	}

	now = t0.Add(31 * 24 * time.Hour)
	pruner := &retention{cfg: config.Retention{RunDirs: config.DefaultKeepRunsFor}, store: store, dataDir: dataDir, now: clock,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	n, err := pruner.pruneRunDirs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("pruned %d run dirs, want 3", n)
	}
	for i := range count {
		_, statErr := os.Stat(dirOf(i))
		gone := os.IsNotExist(statErr)
		wantGone := i == oldSucceeded || i == oldFailed || i == oldSkipped
		if gone != wantGone {
			t.Errorf("run %d (case %d): dir removed = %v, want %v", ids[i], i, gone, wantGone)
		}
		d, err := store.GetRun(ctx, ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if d.RunDirPrunedAt.IsZero() == wantGone {
			t.Errorf("run %d (case %d): run_dir_pruned_at = %v, want set = %v", ids[i], i, d.RunDirPrunedAt, wantGone)
		}
		if wantGone && !d.RunDirPrunedAt.Equal(now) {
			t.Errorf("run %d pruned at %v, want %v", ids[i], d.RunDirPrunedAt, now)
		}
	}

	// A second pass finds nothing more; a run retried after its directory
	// was pruned gets a directory again and is no longer marked.
	if n, err := pruner.pruneRunDirs(ctx); err != nil || n != 0 {
		t.Fatalf("second pass pruned %d, err %v", n, err)
	}
	if err := store.RetryRun(ctx, ids[oldFailed]); err != nil {
		t.Fatal(err)
	}
	if err := store.SetRunDir(ctx, ids[oldFailed], dirOf(oldFailed)); err != nil {
		t.Fatal(err)
	}
	if d, err := store.GetRun(ctx, ids[oldFailed]); err != nil || !d.RunDirPrunedAt.IsZero() {
		t.Fatalf("re-run still marked pruned: %v, err %v", d.RunDirPrunedAt, err)
	}
}

// keep_runs_for = "0" keeps every run directory forever.
func TestRetentionZeroKeepsForever(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	store, err := audit.Open(ctx, filepath.Join(dataDir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	store.SetClock(func() time.Time { return now })
	if _, err := store.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "1"}, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run, err := store.ClaimNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(dataDir, "runs", strconv.FormatInt(run.ID, 10))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := store.SetRunDir(ctx, run.ID, dir); err != nil {
		t.Fatal(err)
	}
	if err := store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	now = t0.Add(5 * 365 * 24 * time.Hour)
	p := &retention{cfg: config.Retention{RunDirs: 0}, store: store, dataDir: dataDir, now: func() time.Time { return now },
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if n, err := p.pruneRunDirs(ctx); err != nil || n != 0 {
		t.Fatalf("pruned %d, err %v", n, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("run dir removed with keep_runs_for = 0: %v", err)
	}
}

// The key defaults to 30 days, "0" is accepted, a negative value is an
// error naming the key.
func TestKeepRunsForConfig(t *testing.T) {
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "aicr.toml")
		body += "[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///x\"\n[[channel]]\nname = \"console\"\nkind = \"console\"\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := config.Load(write("[daemon]\ndata_dir = \"d\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Daemon.KeepRunsFor != 720*time.Hour {
		t.Errorf("default keep_runs_for = %s, want 720h", cfg.Daemon.KeepRunsFor)
	}
	cfg, err = config.Load(write("[daemon]\ndata_dir = \"d\"\nkeep_runs_for = \"0\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Daemon.KeepRunsFor != 0 {
		t.Errorf("keep_runs_for \"0\" = %s, want 0", cfg.Daemon.KeepRunsFor)
	}
	_, err = config.Load(write("[daemon]\ndata_dir = \"d\"\nkeep_runs_for = \"-1h\"\n"))
	if err == nil || !strings.Contains(err.Error(), "keep_runs_for") {
		t.Errorf("negative keep_runs_for: err = %v, want one naming the key", err)
	}
}

// On a shared store a run interrupted on host A and finished on host B
// leaves A a partial directory that A's retention no longer lists (the
// run is B's): A removes it, and nothing else of its data_dir.
func TestRetentionRemovesRunsFinishedOnAnotherHost(t *testing.T) {
	ctx := context.Background()
	dataA, dataB := t.TempDir(), t.TempDir()
	path := filepath.Join(t.TempDir(), "aicr.db")
	a, err := audit.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := audit.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.SetRunHome(dataA)
	b.SetRunHome(dataB)
	runDir := func(dataDir string, id int64) string {
		return filepath.Join(dataDir, "runs", strconv.FormatInt(id, 10))
	}
	start := func(s *audit.Store, dataDir, rev string) *audit.Run {
		t.Helper()
		ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: rev, SentAt: time.Now()}
		if _, err := s.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
			t.Fatal(err)
		}
		run, err := s.ClaimNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		dir := runDir(dataDir, run.ID)
		if err := os.MkdirAll(filepath.Join(dir, "src"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "src", "config.go"), []byte(`password = "hunter2"`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.SetRunDir(ctx, run.ID, dir); err != nil {
			t.Fatal(err)
		}
		return run
	}
	// r1: A starts it and dies; B takes it over and finishes it.
	moved := start(a, dataA, "1")
	if err := a.RetryLater(ctx, moved.ID, "daemon killed", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	taken, err := b.ClaimNext(ctx)
	if err != nil || taken.ID != moved.ID {
		t.Fatalf("B's claim: %+v, %v", taken, err)
	}
	if err := os.MkdirAll(runDir(dataB, moved.ID), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := b.SetRunDir(ctx, moved.ID, runDir(dataB, moved.ID)); err != nil {
		t.Fatal(err)
	}
	if err := b.FinishRun(ctx, moved.ID, audit.Outcome{Status: audit.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	// r2: A's own, finished. r3: A's, still running. 999: no such run.
	own := start(a, dataA, "2")
	if err := a.FinishRun(ctx, own.ID, audit.Outcome{Status: audit.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	running := start(a, dataA, "3")
	if err := os.MkdirAll(runDir(dataA, 999), 0o700); err != nil {
		t.Fatal(err)
	}

	p := &retention{cfg: config.Retention{RunDirs: config.DefaultKeepRunsFor}, store: a, dataDir: dataA, now: time.Now,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	n, err := p.pruneFinishedElsewhere(ctx)
	if err != nil || n != 1 {
		t.Fatalf("removed %d, err %v; want the one run B finished", n, err)
	}
	if _, err := os.Stat(runDir(dataA, moved.ID)); !os.IsNotExist(err) {
		t.Errorf("A still has the directory of run %d, which B finished (stat: %v)", moved.ID, err)
	}
	for _, id := range []int64{own.ID, running.ID, 999} {
		if _, err := os.Stat(runDir(dataA, id)); err != nil {
			t.Errorf("A lost the directory of run %d: %v", id, err)
		}
	}
	if _, err := os.Stat(runDir(dataB, moved.ID)); err != nil {
		t.Errorf("B's directory of run %d went: %v", moved.ID, err)
	}

	// One daemon per database: nothing is elsewhere.
	solo, err := audit.Open(ctx, filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer solo.Close()
	p.store = solo
	if n, err := p.pruneFinishedElsewhere(ctx); err != nil || n != 0 {
		t.Fatalf("without a run home: removed %d, err %v", n, err)
	}
}
