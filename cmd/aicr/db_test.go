package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
)

// seedRuns fills a real database with n finished runs, each with a
// problem, a sent dispatch and a duplicate receipt.
func seedRuns(t *testing.T, store *audit.Store, from, n int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < from+n; i++ {
		ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: strconv.Itoa(i), User: "user" + strconv.Itoa(i%3)}
		if _, err := store.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Enqueue(ctx, ev, triggers.SourceReconcile, time.Time{}); err != nil {
			t.Fatal(err)
		}
		run, err := store.ClaimNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		d, err := store.PlanDispatch(ctx, run.ID, "reports", delivery.PurposeReport, delivery.StatusPending, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := store.ClaimDispatch(ctx, d.ID, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.FinishAttempt(ctx, c, delivery.AttemptResult{Status: delivery.StatusSent, Outcome: "sent"}); err != nil {
			t.Fatal(err)
		}
		out := audit.Outcome{Status: audit.RunSucceeded, Problems: []review.Problem{{File: "a.go", Line: i, Severity: review.SeverityMedium, Category: "bug", Message: "problem " + strconv.Itoa(i)}}}
		if i%4 == 0 {
			out = audit.Outcome{Status: audit.RunFailed, Error: "fetch change: svn: E170013: Unable to connect to a repository at URL 'svn://host/repo': " + strings.Repeat("context ", 20) + "the end: wrong password"}
		}
		if err := store.FinishRun(ctx, run.ID, out); err != nil {
			t.Fatal(err)
		}
	}
}

// `aicr db backup` copies a database while its writer (the daemon's
// store) stays open and writes on: the copy opens, passes its integrity
// check, and holds exactly what the database held; a second backup to the
// same file is refused and leaves it alone.
func TestDBBackupWhileTheDatabaseIsInUse(t *testing.T) {
	ctx := context.Background()
	configPath, dataDir, _ := writeFileChannelConfig(t)
	store, err := audit.Open(ctx, filepath.Join(dataDir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	seedRuns(t, store, 1, 12)
	before := snapshotRuns(t, store)

	backup := filepath.Join(t.TempDir(), "aicr-backup.db")
	f, out, _ := testFactory(t, configPath)
	if err := dbBackupRun(ctx, &DBBackupOptions{Factory: f, File: backup, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var info audit.BackupInfo
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		t.Fatalf("backup output: %v\n%s", err, out)
	}
	if info.Runs != 12 || info.Events != 24 || info.Dispatches != 12 || info.Path != backup || info.Bytes == 0 {
		t.Errorf("backup info %+v", info)
	}
	if st, err := os.Stat(backup); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, mode %v, want 0600", err, st.Mode())
	}
	// The writer goes on after the backup; the copy does not change.
	seedRuns(t, store, 100, 2)

	copyStore, err := audit.OpenReadOnly(ctx, backup)
	if err != nil {
		t.Fatal(err)
	}
	defer copyStore.Close()
	if got := snapshotRuns(t, copyStore); !reflect.DeepEqual(got, before) {
		t.Errorf("backup differs from the database at backup time:\n got %s\nwant %s", got, before)
	}

	// Never overwrite.
	sum, _ := os.ReadFile(backup)
	f, _, _ = testFactory(t, configPath)
	err = dbBackupRun(ctx, &DBBackupOptions{Factory: f, File: backup, Format: formatText})
	if !errors.Is(err, audit.ErrBackupExists) || !strings.Contains(err.Error(), backup) {
		t.Fatalf("second backup to the same file: err = %v, want ErrBackupExists naming the file", err)
	}
	if now, _ := os.ReadFile(backup); !reflect.DeepEqual(now, sum) {
		t.Fatal("refused backup changed the existing file")
	}
}

// snapshotRuns is every run with all its rows, as JSON, for comparing
// two databases.
func snapshotRuns(t *testing.T, s *audit.Store) []string {
	t.Helper()
	ctx := context.Background()
	runs, err := s.ListRuns(ctx, audit.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range runs {
		d, err := s.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}
