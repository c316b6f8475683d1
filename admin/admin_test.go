package admin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/triggers"
)

// fixture: a config with repo main and, in its database, failed runs
// finished at the given ages.
func fixture(t *testing.T, keep string, failedAgo ...time.Duration) (cfgPath, db string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath = filepath.Join(dir, "aicr.toml")
	cfg := fmt.Sprintf("[daemon]\ndata_dir = %q\nsecret_file = %q\nkeep_runs_for = %q\n[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///x\"\n",
		filepath.Join(dir, "data"), filepath.Join(dir, "secret"), keep)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	db = filepath.Join(dir, "data", "aicr.db")
	ctx := context.Background()
	s, err := audit.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, ago := range failedAgo {
		at := time.Now().Add(-ago)
		s.SetClock(func() time.Time { return at })
		if _, err := s.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: fmt.Sprint(i + 1)}, triggers.SourceTrigger, time.Time{}); err != nil {
			t.Fatal(err)
		}
		run, err := s.ClaimNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunFailed, Error: "boom"}); err != nil {
			t.Fatal(err)
		}
	}
	return cfgPath, db
}

func code(err error) string {
	var e *mcperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestRunRetryFailedSincePlansAndApplies(t *testing.T) {
	cfgPath, db := fixture(t, "720h", 48*time.Hour, 2*time.Hour, time.Hour)
	a := New(Deps{ConfigPath: cfgPath})
	ctx := context.Background()
	plan, err := a.RunRetry(ctx, RunRetryInput{FailedSince: "24h"})
	if err != nil || len(plan.Plan) != 2 || plan.Plan[0].ID != 2 || plan.Plan[1].ID != 3 || plan.Confirmed || len(plan.Queued) != 0 {
		t.Fatalf("plan %+v %v", plan, err)
	}
	res, err := a.RunRetry(ctx, RunRetryInput{FailedSince: "24h", TwoPhase: TwoPhase{Confirm: true, PlanID: plan.PlanID}})
	if err != nil || !res.Confirmed || fmt.Sprint(res.Queued) != "[2 3]" || res.PlanID != plan.PlanID {
		t.Fatalf("apply %+v %v", res, err)
	}
	// Another selection gives another plan: the old plan_id
	// is refused and nothing is written.
	if _, err := a.RunRetry(ctx, RunRetryInput{FailedSince: "72h", TwoPhase: TwoPhase{Confirm: true, PlanID: plan.PlanID}}); code(err) != mcperr.ConfirmationRequired {
		t.Fatalf("stale plan_id: %v", err)
	}
	s, _ := audit.OpenReadOnly(ctx, db)
	defer s.Close()
	if r, _ := s.GetRun(ctx, 1); r.Status != audit.RunFailed {
		t.Fatalf("a refused confirmation re-queued run 1: %s", r.Status)
	}
	if _, err := a.RunRetry(ctx, RunRetryInput{RunID: 1, FailedSince: "1h"}); code(err) != mcperr.InvalidInput {
		t.Fatalf("both selectors: %v", err)
	}
}

func TestMutationsRefusedByPolicy(t *testing.T) {
	cfgPath, db := fixture(t, "0s", time.Hour)
	ctx := context.Background()
	before, _ := os.ReadFile(db)

	ro := New(Deps{ConfigPath: cfgPath, ReadOnly: true})
	if out, err := ro.RunRetry(ctx, RunRetryInput{RunID: 1}); err != nil || len(out.Plan) != 1 {
		t.Fatalf("a read-only server still shows plans: %+v %v", out, err)
	}
	if _, err := ro.RunRetry(ctx, RunRetryInput{RunID: 1, TwoPhase: TwoPhase{Confirm: true}}); code(err) != mcperr.PolicyBlocked {
		t.Fatalf("read-only confirm: %v", err)
	}
	notOwner := New(Deps{ConfigPath: cfgPath, CheckOwner: func(dir string) error { return fmt.Errorf("data_dir %s belongs to aicr", dir) }})
	if _, err := notOwner.RepoPause(ctx, RepoPauseInput{Repo: "main", TwoPhase: TwoPhase{Confirm: true}}); code(err) != mcperr.PolicyBlocked {
		t.Fatalf("not the owner: %v", err)
	}
	// keep_runs_for = 0 keeps directories forever: prune needs older_than.
	a := New(Deps{ConfigPath: cfgPath})
	if _, err := a.Prune(ctx, PruneInput{}); code(err) != mcperr.PolicyBlocked {
		t.Fatalf("prune with keep_runs_for 0: %v", err)
	}
	if _, err := a.Prune(ctx, PruneInput{OlderThan: "-1h"}); code(err) != mcperr.InvalidInput {
		t.Fatalf("negative older_than: %v", err)
	}
	after, _ := os.ReadFile(db)
	if string(before) != string(after) {
		t.Fatal("a refused mutation changed the database")
	}
}
