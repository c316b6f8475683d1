package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/triggers"
)

// Once the retention job removed a run's directory, audit show says so
// instead of printing a path that no longer exists.
func TestAuditShowSaysRunDirPruned(t *testing.T) {
	configPath, dataDir, _ := writeFileChannelConfig(t)
	ctx := context.Background()
	store, err := audit.Open(ctx, filepath.Join(dataDir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "7", User: "alice"}, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run, err := store.ClaimNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dataDir, "runs", "1")
	if err := store.SetRunDir(ctx, run.ID, runDir); err != nil {
		t.Fatal(err)
	}
	if err := store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	show := func() string {
		f, out, _ := testFactory(t, configPath)
		if err := auditShowRun(ctx, &AuditShowOptions{Factory: f, RunID: run.ID, Format: formatText}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if got := show(); !strings.Contains(got, "run dir: "+runDir) {
		t.Fatalf("before pruning, audit show does not give the path:\n%s", got)
	}
	if ok, err := store.MarkRunDirPruned(ctx, run.ID); err != nil || !ok {
		t.Fatalf("mark pruned: %v %v", ok, err)
	}
	store.Close()
	got := show()
	if !strings.Contains(got, "run dir pruned on ") || strings.Contains(got, "run dir: ") {
		t.Fatalf("after pruning, audit show should say the dir was pruned, not give the path:\n%s", got)
	}
}
