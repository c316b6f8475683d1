package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/triggers"
)

// A read-only open never creates the database (nor its directory), and
// cannot write to an existing one.
func TestOpenReadOnlyNeverCreatesOrWrites(t *testing.T) {
	sqliteOnly(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "aicr.db")
	if _, err := OpenReadOnly(ctx, path); !errors.Is(err, ErrNoDatabase) || !strings.Contains(err.Error(), "daemon has not run") {
		t.Fatalf("open of a missing database: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only open created %s: %v", dir, err)
	}
	rw := openStore(t, path)
	mustEnqueue(t, rw, svnEvent("main", "1"), triggers.SourceTrigger)
	rw.Close()
	before, _ := os.ReadDir(dir)

	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	runs, err := ro.ListRuns(ctx, ListOptions{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("list through read-only store: %v %v", runs, err)
	}
	// WAL readers need the -shm index; SQLite creates it (and -wal) with
	// the database file's mode and, under root, its owner.
	after, _ := os.ReadDir(dir)
	for _, e := range after {
		fi, _ := e.Info()
		if fi.Mode().Perm()&0o007 != 0 {
			t.Errorf("%s has mode %04o: others may read the audit trail", e.Name(), fi.Mode().Perm())
		}
	}
	_ = before
	if _, err := ro.Enqueue(ctx, svnEvent("main", "2"), triggers.SourceTrigger, runs[0].QueuedAt); err == nil {
		t.Fatal("a read-only store wrote")
	}
}

// A read-only open of a database an older daemon wrote says to upgrade it
// instead of failing later on a missing column.
func TestOpenReadOnlyNamesAnOldSchema(t *testing.T) {
	sqliteOnly(t)
	ctx := context.Background()
	path := tempDB(t)
	rw := openStore(t, path)
	if _, err := rw.db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = ?`, len(migrations)); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	if _, err := OpenReadOnly(ctx, path); err == nil || !strings.Contains(err.Error(), "restart the daemon") {
		t.Fatalf("read-only open of an old schema: %v", err)
	}
}
