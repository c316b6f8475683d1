// Package admintest builds an audit database with a run in each state an
// operator acts on, for the tests of the admin verbs: the CLI's unit tests
// (cmd/aicr) and the MCP admin server driven through the shipped binary
// (e2e) start from the same data.
package admintest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/triggers"
)

// Fixture is a data_dir with: run Old succeeded 60 days ago with its run
// directory and a dead delivery (Dispatch), run Failed failed, run Queued
// queued, and repo docs paused. Config names both repos and the file
// channel "reports"; DB is the audit database in DataDir.
type Fixture struct {
	Config, DataDir, DB string
	Failed, Queued, Old int64
	Dispatch            int64
}

// New writes the fixture into a fresh t.TempDir.
func New(t *testing.T) Fixture {
	t.Helper()
	dir := t.TempDir()
	fx := Fixture{DataDir: filepath.Join(dir, "data")}
	write(t, filepath.Join(dir, "secret"), "s3cret\n")
	fx.Config = filepath.Join(dir, "aicr.toml")
	write(t, fx.Config, fmt.Sprintf(`[daemon]
data_dir = %q
secret_file = %q
keep_runs_for = "720h"

[[repo]]
name = "main"
kind = "svn"
url = "file:///nonexistent/main"
channels = ["reports"]

[[repo]]
name = "docs"
kind = "svn"
url = "file:///nonexistent/docs"
channels = ["reports"]

[[channel]]
name = "reports"
kind = "file"
path = %q
`, fx.DataDir, filepath.Join(dir, "secret"), filepath.Join(dir, "reports.jsonl")))
	fx.DB = filepath.Join(fx.DataDir, "aicr.db")
	ctx := context.Background()
	store, err := audit.Open(ctx, fx.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	clock := time.Now().Add(-60 * 24 * time.Hour)
	store.SetClock(func() time.Time { return clock })
	ev := func(repo, rev string) triggers.Event {
		return triggers.Event{V: 1, VCS: "svn", Repo: repo, Revision: rev, User: "alice"}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// run 1: finished long ago too, so the prune plan has two runs.
	e, err := store.Enqueue(ctx, ev("main", "3"), triggers.SourceTrigger, time.Time{})
	must(err)
	fx.Old = e.RunID
	run, err := store.ClaimNext(ctx)
	must(err)
	runDir := rundir.ForRun(fx.DataDir, run.ID).Dir()
	must(store.SetRunDir(ctx, run.ID, runDir))
	write(t, filepath.Join(runDir, "diff.patch"), "x")
	must(store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunSucceeded}))
	d, err := store.PlanDispatch(ctx, run.ID, "reports", delivery.PurposeReport, delivery.StatusPending, "", nil)
	must(err)
	claim, err := store.ClaimDispatch(ctx, d.ID, time.Minute)
	must(err)
	_, err = store.FinishAttempt(ctx, claim, delivery.AttemptResult{Status: delivery.StatusDead, Reason: "server", StatusCode: 503, Error: "gave up"})
	must(err)
	fx.Dispatch = d.ID

	clock = time.Now().Add(-time.Hour)
	e, err = store.Enqueue(ctx, ev("main", "4"), triggers.SourceTrigger, time.Time{})
	must(err)
	fx.Failed = e.RunID
	run, err = store.ClaimNext(ctx)
	must(err)
	must(store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunFailed, Error: "svn: E170013: unreachable"}))

	e, err = store.Enqueue(ctx, ev("main", "5"), triggers.SourceTrigger, time.Time{})
	must(err)
	fx.Queued = e.RunID
	_, _, err = store.PauseRepo(ctx, "docs", "bob", "migration")
	must(err)
	return fx
}

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
