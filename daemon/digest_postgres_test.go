package daemon

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/internal/admintest"
	"github.com/aicr-dev/aicr/internal/pgtest"
	"github.com/aicr-dev/aicr/triggers"
)

// TestMain stops the package's PostgreSQL server, if a test started
// one, once every test is done: a test that stopped it would leave the
// next one a dead server.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Two daemons sharing a PostgreSQL store tick the same digest at the
// same moment: one dispatch is planned, with the figures of the shared
// findings.
func TestDigestOnceAcrossDaemonsOnPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	dsn := srv.NewDatabase(t)
	ctx := context.Background()
	open := func() *audit.Store {
		s, err := audit.OpenPostgres(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	var runs []int64
	for _, rev := range []string{"3", "4"} {
		if _, err := a.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: rev}, triggers.SourceTrigger, time.Time{}); err != nil {
			t.Fatal(err)
		}
		run, err := a.ClaimNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run.ID)
	}
	day := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	admintest.TrackFindings(t, a, runs[0], runs[1], day.Add(-20*time.Hour), day.Add(-2*time.Hour))
	for _, id := range runs {
		if err := a.FinishRun(ctx, id, audit.Outcome{Status: audit.RunSucceeded}); err != nil {
			t.Fatal(err)
		}
	}

	cfg := &config.Config{Repos: []config.Repo{{Name: "main"}}}
	table := config.DigestTable{Name: "daily", Channel: "team", Every: "CRON_TZ=UTC 0 9 * * *"}
	now := func() time.Time { return day.Add(time.Second) }
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*audit.Store{a, b} {
		d, err := newDigester(cfg, table, s, func() {}, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = d.send(ctx, day.Add(-24*time.Hour), day)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rows, err := a.ListDispatches(ctx, audit.DispatchFilter{Channel: "team", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Purpose != delivery.PurposeDigest || rows[0].Slot != DigestSlot("daily", day.Add(-24*time.Hour)) {
		t.Fatalf("dispatches = %+v", rows)
	}
	d, err := newDigester(cfg, table, b, func() {}, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	fig, err := d.figures(ctx, day.Add(-24*time.Hour), day)
	if err != nil {
		t.Fatal(err)
	}
	if fig.New != 3 || fig.Resolved != 1 || fig.Dismissed != 1 || fig.Open != 1 || fig.FalsePositives != 1 || fig.Reviews != 2 {
		t.Fatalf("figures on postgres = %+v", fig)
	}
}
