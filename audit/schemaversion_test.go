package audit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// A database a newer aicr migrated is refused, read-write and read-only,
// with the versions and the way back named; nothing is written to it.
func TestOpenRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	rw := openStore(t, path)
	newer := SchemaVersionKnown() + 1
	if _, err := rw.db.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
		newer, formatTime(time.Now())); err != nil {
		t.Fatal(err)
	}
	rw.Close()

	opens := map[string]func(context.Context, testing.TB, string) (*Store, error){"read-write": openPath, "read-only": openReadOnlyPath}
	where := path
	if onPostgres() {
		where = "postgres"
	}
	for name, open := range opens {
		s, err := open(ctx, t, path)
		if err == nil {
			s.Close()
			t.Fatalf("%s open of a newer schema succeeded", name)
		}
		if !errors.Is(err, ErrSchemaTooNew) {
			t.Errorf("%s: want ErrSchemaTooNew, got %v", name, err)
		}
		for _, want := range []string{where, "restore the backup", "Upgrade"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %q", name, err, want)
			}
		}
	}
}

// Open says what it did to the schema, so the daemon can log migrations.
func TestOpenReportsMigrations(t *testing.T) {
	path := tempDB(t)
	s := openStore(t, path)
	if m := s.Migrated(); m.From != 0 || m.To != SchemaVersionKnown() {
		t.Fatalf("fresh database: migrated %+v, want 0 → %d", m, SchemaVersionKnown())
	}
	s.Close()
	s = openStore(t, path)
	if m := s.Migrated(); m.From != SchemaVersionKnown() || m.To != SchemaVersionKnown() {
		t.Fatalf("reopen: migrated %+v, want no change at %d", m, SchemaVersionKnown())
	}
}

func TestQueueStats(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	st, err := s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st != (QueueStats{}) {
		t.Fatalf("empty database: %+v", st)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, rev := range []string{"1", "2", "3"} {
		if _, err := s.Enqueue(ctx, svnEvent("main", rev), triggers.SourceTrigger, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	run := mustClaim(t, s)
	if err := s.FinishRun(ctx, run.ID, Outcome{Status: RunFailed, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s)
	st, err = s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := QueueStats{Queued: 1, OldestQueuedAt: t0.Add(2 * time.Minute), Running: 1, FailedRuns: 1}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}

	// A paused repo's runs are held: counted as queued and held, but not
	// as the oldest queued run, so a pause does not look like a stalled
	// queue (the AicrQueueStalled alert).
	if _, err := s.Enqueue(ctx, svnEvent("other", "1"), triggers.SourceTrigger, t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PauseRepo(ctx, "other", "root", "maintenance"); err != nil {
		t.Fatal(err)
	}
	st, err = s.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want = QueueStats{Queued: 2, Held: 1, OldestQueuedAt: t0.Add(2 * time.Minute), Running: 1, FailedRuns: 1}
	if st != want {
		t.Fatalf("with a paused repo: stats %+v, want %+v", st, want)
	}
}

// A failed dry run (`aicr review --dry-run`) is recorded but counts in no
// failure: failed_runs, and so the AicrRunsFailing alert, leave it out.
func TestQueueStatsLeaveOutFailedDryRuns(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	for _, dry := range []bool{true, false} {
		run, err := s.EnqueueClaimedWith(ctx, svnEvent("main", "5"), time.Now(), ClaimOptions{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.FinishRun(ctx, run.ID, Outcome{Status: RunFailed, Error: "model server refused the credentials"}); err != nil {
			t.Fatal(err)
		}
		st, err := s.QueueStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 0, false: 1}[dry]; st.FailedRuns != want {
			t.Errorf("after a failed run (dry run %v): failed_runs %d, want %d", dry, st.FailedRuns, want)
		}
	}
}
