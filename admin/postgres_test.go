package admin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/internal/pgtest"
	"github.com/aicr-dev/aicr/triggers"
)

// With [store] kind = "postgres" the tools read and change the shared
// store, not a SQLite file in the data_dir (which they would have made
// up empty, and mutated, unseen by every daemon).
func TestToolsUseTheConfiguredPostgresStore(t *testing.T) {
	srv := pgtest.Start(t)
	dsn := srv.NewDatabase(t)
	t.Setenv("AICR_ADMIN_TEST_DSN", dsn)
	ctx := context.Background()

	store, err := audit.OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "7"}, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run, err := store.ClaimNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunFailed, Error: "boom"}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "aicr.toml")
	cfg := fmt.Sprintf("[daemon]\ndata_dir = %q\nsecret_file = %q\n[store]\nkind = \"postgres\"\ndsn_env = \"AICR_ADMIN_TEST_DSN\"\n[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///x\"\n",
		dataDir, filepath.Join(dir, "secret"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a := New(Deps{ConfigPath: cfgPath})

	list, err := a.RunsList(ctx, RunsListInput{})
	if err != nil || len(list.Runs) != 1 || list.Runs[0].ID != run.ID || list.Runs[0].Status != audit.RunFailed {
		t.Fatalf("runs_list on postgres: %+v %v", list, err)
	}
	plan, err := a.RunRetry(ctx, RunRetryInput{RunID: run.ID})
	if err != nil || len(plan.Plan) != 1 || plan.Confirmed {
		t.Fatalf("run_retry plan: %+v %v", plan, err)
	}
	done, err := a.RunRetry(ctx, RunRetryInput{RunID: run.ID, TwoPhase: TwoPhase{Confirm: true, PlanID: plan.PlanID}})
	if err != nil || len(done.Queued) != 1 {
		t.Fatalf("run_retry confirmed: %+v %v", done, err)
	}
	if r, err := store.GetRun(ctx, run.ID); err != nil || r.Status != audit.RunQueued {
		t.Fatalf("the run in postgres after run_retry: %+v %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "aicr.db")); !os.IsNotExist(err) {
		t.Errorf("the tools made a SQLite database in the data_dir: %v", err)
	}
}
