package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/triggers"
)

// retentionFixture is a real SQLite store in a data dir with runs whose
// directories hold src/ copies, on a clock the test moves.
type retentionFixture struct {
	t       *testing.T
	ctx     context.Context
	store   *audit.Store
	dataDir string
	now     time.Time
	rev     int
}

func newRetentionFixture(t *testing.T) *retentionFixture {
	t.Helper()
	f := &retentionFixture{t: t, ctx: context.Background(), dataDir: t.TempDir(),
		now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	store, err := audit.Open(f.ctx, filepath.Join(f.dataDir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	store.SetClock(f.clock)
	f.store = store
	return f
}

func (f *retentionFixture) clock() time.Time { return f.now }

func (f *retentionFixture) job(cfg config.Retention) *retention {
	return &retention{cfg: cfg, store: f.store, dataDir: f.dataDir, now: f.clock,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func (f *retentionFixture) dir(id int64) string {
	return filepath.Join(f.dataDir, "runs", strconv.FormatInt(id, 10))
}

// finishedRun reviews one revision to the end: a run dir with src/ and a
// problem, and one dispatch per given status (pending stays pending).
func (f *retentionFixture) finishedRun(dispatches ...delivery.Status) int64 {
	return f.finishedRunAs(audit.RunSucceeded, dispatches...)
}

func (f *retentionFixture) finishedRunAs(status audit.RunStatus, dispatches ...delivery.Status) int64 {
	t, ctx := f.t, f.ctx
	t.Helper()
	f.rev++
	ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: strconv.Itoa(f.rev), User: "alice"}
	if _, err := f.store.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	// A second receipt of the same revision: a duplicate event row.
	if _, err := f.store.Enqueue(ctx, ev, triggers.SourceSpool, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run, err := f.store.ClaimNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(f.dir(run.ID), "src")
	if err := os.MkdirAll(src, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "config.py"), []byte("AWS_SECRET=abc\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir(run.ID), "change.json"), []byte("{}"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := f.store.SetRunDir(ctx, run.ID, f.dir(run.ID)); err != nil {
		t.Fatal(err)
	}
	if err := f.store.RecordEgress(ctx, run.ID, audit.EgressEvent{At: f.now, Host: "example.com", Port: 443, Allowed: false, Reason: "not allowed"}); err != nil {
		t.Fatal(err)
	}
	for i, st := range dispatches {
		planned := delivery.StatusPending
		if st == delivery.StatusSuppressed {
			planned = st
		}
		d, err := f.store.PlanDispatch(ctx, run.ID, "ch"+strconv.Itoa(i), delivery.PurposeReport, planned, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if st == planned {
			continue
		}
		c, err := f.store.ClaimDispatch(ctx, d.ID, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.FinishAttempt(ctx, c, delivery.AttemptResult{Status: st, Outcome: string(st)}); err != nil {
			t.Fatal(err)
		}
	}
	out := audit.Outcome{Status: status, Problems: []review.Problem{{File: "config.py", Line: 1, Severity: review.SeverityHigh, Category: "security", Message: "secret"}}}
	if err := f.store.FinishRun(ctx, run.ID, out); err != nil {
		t.Fatal(err)
	}
	return run.ID
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// Once every dispatch of a finished run is settled, its src/ goes (the
// copies may hold a leaked secret) and the rest of the run dir stays; a
// run with a report still to send keeps src/, and so does every run with
// keep_sources = true. A run reviewed again gets its sources back and is
// swept again once delivered.
func TestRetentionDropsSourcesOnceDelivered(t *testing.T) {
	f := newRetentionFixture(t)
	sent := f.finishedRun(delivery.StatusSent, delivery.StatusSuppressed)
	dead := f.finishedRunAs(audit.RunFailed, delivery.StatusDead)
	noChannel := f.finishedRun()
	pending := f.finishedRun(delivery.StatusSent, delivery.StatusPending)

	kept := f.job(config.Retention{KeepSources: true})
	if n, err := kept.dropSources(f.ctx); err != nil || n != 0 {
		t.Fatalf("keep_sources: dropped %d, err %v", n, err)
	}
	for _, id := range []int64{sent, dead, noChannel, pending} {
		if !exists(t, filepath.Join(f.dir(id), "src", "config.py")) {
			t.Fatalf("keep_sources = true removed run %d's sources", id)
		}
	}

	// The other copies of the changed lines (a leaked secret is in them
	// too): the diff, and the agent's workspace and HOME.
	for _, id := range []int64{sent, dead, noChannel, pending} {
		l := rundir.New(f.dir(id))
		for _, p := range []string{l.DiffPath(), filepath.Join(l.AgentDir(), "prompt.md"), filepath.Join(l.HomeDir(), ".claude", "session.jsonl")} {
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("+password = \"hunter2\"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}

	job := f.job(config.Retention{})
	n, err := job.dropSources(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("dropped sources of %d runs, want 3", n)
	}
	for _, id := range []int64{sent, dead, noChannel, pending} {
		wantGone := id != pending
		for _, name := range []string{"src", "diff.patch", "agent", "home"} {
			if gone := !exists(t, filepath.Join(f.dir(id), name)); gone != wantGone {
				t.Errorf("run %d: %s removed = %v, want %v", id, name, gone, wantGone)
			}
		}
		if !exists(t, filepath.Join(f.dir(id), "change.json")) {
			t.Errorf("run %d: change.json removed with the sources", id)
		}
		d, err := f.store.GetRun(f.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.SourcesDroppedAt.IsZero() == wantGone {
			t.Errorf("run %d: sources_dropped_at = %v, want set = %v", id, d.SourcesDroppedAt, wantGone)
		}
	}
	if n, err := job.dropSources(f.ctx); err != nil || n != 0 {
		t.Fatalf("second sweep dropped %d, err %v", n, err)
	}

	// The pending report goes out: its sources go at the next sweep.
	c, err := f.store.ClaimDue(f.ctx, "ch1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.FinishAttempt(f.ctx, c, delivery.AttemptResult{Status: delivery.StatusSent, Outcome: "sent"}); err != nil {
		t.Fatal(err)
	}
	if n, err := job.dropSources(f.ctx); err != nil || n != 1 || exists(t, filepath.Join(f.dir(pending), "src")) {
		t.Fatalf("after delivery: dropped %d, err %v, src still there = %v", n, err, exists(t, filepath.Join(f.dir(pending), "src")))
	}

	// Reviewed again (aicr run retry): the pipeline sets the run dir and
	// fetches again.
	if err := f.store.RetryRun(f.ctx, dead); err != nil {
		t.Fatal(err)
	}
	run, err := f.store.ClaimNext(f.ctx)
	if err != nil || run.ID != dead {
		t.Fatalf("claim re-run: %v, %v", run, err)
	}
	if err := f.store.SetRunDir(f.ctx, dead, f.dir(dead)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(f.dir(dead), "src"), 0o750); err != nil {
		t.Fatal(err)
	}
	if n, err := job.dropSources(f.ctx); err != nil || n != 0 {
		t.Fatalf("running run: dropped %d, err %v", n, err)
	}
	if err := f.store.FinishRun(f.ctx, dead, audit.Outcome{Status: audit.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	if n, err := job.dropSources(f.ctx); err != nil || n != 1 || exists(t, filepath.Join(f.dir(dead), "src")) {
		t.Fatalf("re-run: dropped %d, err %v", n, err)
	}
}

// Audit row retention deletes runs finished before audit_rows with their
// events, problems, dispatches, attempts and egress records, and their
// directories, in batches; it keeps recent runs, runs with a report still
// to send, and everything of the runs it keeps. Old refused requests go
// too. Intake goes on while it runs.
func TestRetentionDeletesOldAuditRows(t *testing.T) {
	f := newRetentionFixture(t)
	var old []int64
	for range 7 {
		old = append(old, f.finishedRun(delivery.StatusSent))
	}
	oldPending := f.finishedRun(delivery.StatusPending)
	if _, err := f.store.RecordRejectedEvent(f.ctx, audit.RejectedEvent{Reason: "bad signature", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(100 * 24 * time.Hour)
	recent := f.finishedRun(delivery.StatusSent)
	newRejected, err := f.store.RecordRejectedEvent(f.ctx, audit.RejectedEvent{Reason: "unknown repo", Payload: []byte("y")})
	if err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(24 * time.Hour)

	job := f.job(config.Retention{AuditRows: 90 * 24 * time.Hour})
	job.batch = 3
	// Events keep arriving while the job deletes.
	var wg sync.WaitGroup
	intakeErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 20 {
			ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: strconv.Itoa(1000 + i)}
			if _, err := f.store.Enqueue(f.ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
				intakeErr <- err
				return
			}
		}
	}()
	n, err := job.deleteRows(f.ctx)
	wg.Wait()
	close(intakeErr)
	if err := <-intakeErr; err != nil {
		t.Fatalf("intake during retention: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n != len(old) {
		t.Errorf("deleted %d runs, want %d", n, len(old))
	}
	for i, id := range old {
		if _, err := f.store.GetRun(f.ctx, id); err == nil {
			t.Errorf("old run %d still there", id)
		}
		if exists(t, f.dir(id)) {
			t.Errorf("old run %d: directory still there", id)
		}
		rev := strconv.Itoa(i + 1)
		if total, _, err := f.store.CountEvents(f.ctx, "main", rev); err != nil || total != 0 {
			t.Errorf("r%s: %d events left (err %v), want 0", rev, total, err)
		}
	}
	for _, id := range []int64{oldPending, recent} {
		d, err := f.store.GetRun(f.ctx, id)
		if err != nil {
			t.Fatalf("kept run %d: %v", id, err)
		}
		if len(d.Problems) != 1 || len(d.Dispatches) != 1 || len(d.Events) != 2 || len(d.Egress) != 1 {
			t.Errorf("kept run %d lost rows: problems %d, dispatches %d, events %d, egress %d", id, len(d.Problems), len(d.Dispatches), len(d.Events), len(d.Egress))
		}
	}
	rej, err := f.store.ListRejectedEvents(f.ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rej) != 1 || rej[0].ID != newRejected {
		t.Errorf("rejected events left: %+v, want only #%d", rej, newRejected)
	}
	runs, err := f.store.ListRuns(f.ctx, audit.ListOptions{Limit: 100, Status: audit.RunQueued})
	if err != nil || len(runs) != 20 {
		t.Fatalf("runs queued during retention: %d (err %v), want 20", len(runs), err)
	}
	// audit_rows = 0 keeps everything.
	f.now = f.now.Add(10 * 365 * 24 * time.Hour)
	if n, err := f.job(config.Retention{}).deleteRows(f.ctx); err != nil || n != 0 {
		t.Fatalf("audit_rows = 0: deleted %d, err %v", n, err)
	}
}

// Spool leftovers: rejected files (and their reasons) older than
// spool_leftovers and temp files a dead hook left go; pending events,
// recent rejections and notify.log stay.
func TestRetentionPrunesSpoolLeftovers(t *testing.T) {
	f := newRetentionFixture(t)
	spool := filepath.Join(t.TempDir(), "spool")
	rejected := filepath.Join(spool, triggers.RejectedDir)
	if err := os.MkdirAll(rejected, 0o770); err != nil {
		t.Fatal(err)
	}
	old := f.now.Add(-40 * 24 * time.Hour)
	files := map[string]time.Time{
		filepath.Join(spool, "00000000000000000001-main-1.json"):           old,
		filepath.Join(spool, "notify.log"):                                 old,
		filepath.Join(spool, ".tmp-123.json"):                              f.now.Add(-2 * time.Hour),
		filepath.Join(spool, ".tmp-456.json"):                              f.now.Add(-time.Minute),
		filepath.Join(rejected, "00000000000000000002-main-2.json"):        old,
		filepath.Join(rejected, "00000000000000000002-main-2.json.reason"): old,
		filepath.Join(rejected, "00000000000000000003-main-3.json"):        f.now.Add(-24 * time.Hour),
	}
	for p, mt := range files {
		if err := os.WriteFile(p, []byte("x"), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	job := f.job(config.Retention{SpoolLeftovers: 30 * 24 * time.Hour})
	job.spoolDirs = []string{spool, filepath.Join(t.TempDir(), "absent")}
	if n := job.pruneSpools(); n != 3 {
		t.Errorf("removed %d files, want 3", n)
	}
	for p := range files {
		base := filepath.Base(p)
		wantGone := base == ".tmp-123.json" || strings.HasPrefix(base, "00000000000000000002")
		if gone := !exists(t, p); gone != wantGone {
			t.Errorf("%s: removed = %v, want %v", p, gone, wantGone)
		}
	}
}

// channel_files prunes the file channels' files, found as the channel
// finds them (relative to the config file), and nothing with 0.
func TestRetentionPrunesChannelFiles(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "aicr.toml")
	body := "[daemon]\ndata_dir = \"d\"\n[retention]\nchannel_files = \"720h\"\n[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///x\"\n" +
		"[[channel]]\nname = \"archive\"\nkind = \"file\"\npath = \"out/reports.jsonl\"\n[[channel]]\nname = \"console\"\nkind = \"console\"\n"
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	reports := filepath.Join(dir, "out", "reports.jsonl")
	if err := os.MkdirAll(filepath.Dir(reports), 0o750); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	lines := `{"run_id":1,"sent_at":"2026-04-01T00:00:00Z"}` + "\n" + `{"run_id":2,"sent_at":"2026-05-20T00:00:00Z"}` + "\n"
	if err := os.WriteFile(reports, []byte(lines), 0o640); err != nil {
		t.Fatal(err)
	}
	r := newRetention(cfg, nil, nil, func() time.Time { return now }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if n := r.pruneChannelFiles(); n != 1 {
		t.Errorf("pruned %d lines, want 1", n)
	}
	data, _ := os.ReadFile(reports)
	if strings.Contains(string(data), `"run_id":1,`) || !strings.Contains(string(data), `"run_id":2,`) {
		t.Errorf("after prune:\n%s", data)
	}
	r.cfg.ChannelFiles = 0
	now = now.AddDate(10, 0, 0)
	if n := r.pruneChannelFiles(); n != 0 {
		t.Errorf("channel_files = 0 pruned %d lines", n)
	}
}

// Review session directories hold copies of the reviewed files: an ended
// session's go after run_dirs, an active one's stay (the developer may
// reply), and one whose row is gone goes by its files' age.
func TestRetentionPrunesEndedSessionDirectories(t *testing.T) {
	f := newRetentionFixture(t)
	sessionDir := func(id int64) string {
		dir := filepath.Join(f.dataDir, "sessions", strconv.FormatInt(id, 10), "round-1", "src")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "app.py"), []byte("password = 'x'\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return filepath.Dir(filepath.Dir(dir))
	}
	begin := func() int64 {
		id, err := f.store.CreateSession(f.ctx, audit.ReviewSession{Target: "svn-wc:/wc", Agent: "builtin"}, "", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	f.now = f.now.Add(-40 * 24 * time.Hour)
	endedLongAgo, activeLongAgo := begin(), begin()
	if ok, err := f.store.EndSession(f.ctx, endedLongAgo, true, "approved"); err != nil || !ok {
		t.Fatalf("end session: %v %v", ok, err)
	}
	f.now = f.now.Add(38 * 24 * time.Hour)
	endedRecently := begin()
	if ok, err := f.store.EndSession(f.ctx, endedRecently, true, "approved"); err != nil || !ok {
		t.Fatalf("end session: %v %v", ok, err)
	}
	f.now = f.now.Add(2 * 24 * time.Hour)
	dirs := map[int64]string{endedLongAgo: sessionDir(endedLongAgo), activeLongAgo: sessionDir(activeLongAgo), endedRecently: sessionDir(endedRecently)}
	orphanOld, orphanNew := sessionDir(9001), sessionDir(9002)
	old := f.now.Add(-40 * 24 * time.Hour)
	if err := os.Chtimes(orphanOld, old, old); err != nil {
		t.Fatal(err)
	}

	job := f.job(config.Retention{RunDirs: 30 * 24 * time.Hour})
	if n := job.pruneSessions(f.ctx); n != 2 {
		t.Errorf("removed %d session directories, want 2 (the long-ended one and the old orphan)", n)
	}
	for path, wantGone := range map[string]bool{dirs[endedLongAgo]: true, orphanOld: true,
		dirs[activeLongAgo]: false, dirs[endedRecently]: false, orphanNew: false} {
		if gone := !exists(t, path); gone != wantGone {
			t.Errorf("%s: removed = %v, want %v", path, gone, wantGone)
		}
	}
	if n := f.job(config.Retention{}).pruneSessions(f.ctx); n != 0 {
		t.Errorf("run_dirs = 0 removed %d session directories; it keeps them forever", n)
	}
}
