package admin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/internal/admintest"
	"github.com/aicr-dev/aicr/internal/pgtest"
	"github.com/aicr-dev/aicr/triggers"
)

// TestMain stops the package's PostgreSQL server, if a test started
// one, once every test is done: a test that stopped it would leave the
// next one a dead server.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The findings tools read and act on a shared PostgreSQL store as on
// SQLite.
func TestFindingsToolsOnPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	dsn := srv.NewDatabase(t)
	t.Setenv("AICR_ADMIN_FINDINGS_DSN", dsn)
	ctx := context.Background()
	store, err := audit.OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var runs []int64
	for _, rev := range []string{"3", "4"} {
		if _, err := store.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: rev}, triggers.SourceTrigger, time.Time{}); err != nil {
			t.Fatal(err)
		}
		run, err := store.ClaimNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run.ID)
	}
	now := time.Now().UTC().Truncate(time.Second)
	fs := admintest.TrackFindings(t, store, runs[0], runs[1], now.Add(-2*time.Hour), now.Add(-time.Hour))

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "aicr.toml")
	cfg := fmt.Sprintf("[daemon]\ndata_dir = %q\nsecret_file = %q\n[store]\nkind = \"postgres\"\ndsn_env = \"AICR_ADMIN_FINDINGS_DSN\"\n[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///x\"\n",
		filepath.Join(dir, "data"), filepath.Join(dir, "secret"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a := admin.New(admin.Deps{ConfigPath: cfgPath, Actor: "gina"})
	list, err := a.FindingsList(ctx, admin.FindingsListInput{State: "active"})
	if err != nil || len(list.Findings) != 1 || list.Findings[0].ID != fs.Open {
		t.Fatalf("findings_list on postgres: %+v %v", list, err)
	}
	plan, err := a.FindingsDismiss(ctx, admin.FindingsDismissInput{FindingID: fs.Open, Reason: "false_positive"})
	if err != nil {
		t.Fatal(err)
	}
	done, err := a.FindingsDismiss(ctx, admin.FindingsDismissInput{FindingID: fs.Open, Reason: "false_positive", TwoPhase: admin.TwoPhase{Confirm: true, PlanID: plan.PlanID}})
	if err != nil || done.Finding == nil || done.Finding.State != findings.StateDismissed || done.Finding.ActedBy != "gina" || done.Finding.ActedVia != findings.ViaCLI {
		t.Fatalf("findings_dismiss on postgres: %+v %v", done, err)
	}
	stats, err := a.FindingsStats(ctx, admin.FindingsStatsInput{})
	if err != nil || len(stats.Stats) == 0 {
		t.Fatalf("findings_stats on postgres: %+v %v", stats, err)
	}
}
