package audit

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/aicr-dev/aicr/internal/pgtest"
)

// The store's behaviour tests run on both backends: `go test ./audit/`
// runs them on SQLite, and TestStoreSuiteOnPostgres runs this test binary
// again with envTestStore=postgres, where every database path a test
// uses maps to a database of its own on a real PostgreSQL server.
const envTestStore = "AICR_TEST_STORE"

// TestMain gives every Store the suite opens (both backends: the
// PostgreSQL run inherits the environment) a pool of one connection, so a
// query on the pool from inside a transaction panics (pool.go) instead of
// passing here and deadlocking a busy daemon.
func TestMain(m *testing.M) {
	os.Setenv(EnvTestPool, "1")
	os.Exit(pgtest.Main(m))
}

func onPostgres() bool { return os.Getenv(envTestStore) == "postgres" }

// sqliteOnly skips a test of something only SQLite has (a file, a pragma).
func sqliteOnly(t testing.TB) {
	t.Helper()
	if onPostgres() {
		t.Skip("SQLite-only: tests the database file itself")
	}
}

var (
	pgDSNsMu sync.Mutex
	pgDSNs   = map[string]string{}
)

// dsnFor is the PostgreSQL database standing for the SQLite path a test
// would use; the same path gives the same database, as reopening a file
// does.
func dsnFor(t testing.TB, path string) string {
	t.Helper()
	pgDSNsMu.Lock()
	defer pgDSNsMu.Unlock()
	if dsn, ok := pgDSNs[path]; ok {
		return dsn
	}
	dsn := pgtest.Start(t).NewDatabase(t)
	pgDSNs[path] = dsn
	return dsn
}

// openPath is Open on the test's backend.
func openPath(ctx context.Context, t testing.TB, path string) (*Store, error) {
	if onPostgres() {
		return OpenPostgres(ctx, dsnFor(t, path)) //nolint:contextcheck // the database is kept per path for the whole test (pgDSNs), past this ctx
	}
	return Open(ctx, path)
}

// openReadOnlyPath is OpenReadOnly on the test's backend.
func openReadOnlyPath(ctx context.Context, t testing.TB, path string) (*Store, error) {
	if onPostgres() {
		return OpenPostgresReadOnly(ctx, dsnFor(t, path)) //nolint:contextcheck // the database is kept per path for the whole test (pgDSNs), past this ctx
	}
	return OpenReadOnly(ctx, path)
}

func TestStoreSuiteOnPostgres(t *testing.T) {
	if onPostgres() {
		t.Skip("already the PostgreSQL run")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	srv := pgtest.Start(t)
	cmd := exec.Command(os.Args[0], "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envTestStore+"=postgres", pgtest.EnvDSN+"="+srv.AdminDSN)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the store tests fail on PostgreSQL: %v\n%s", err, failures(string(out)))
	}
	if !strings.Contains(string(out), "--- PASS: TestClaimNextConcurrentNoDoubleClaim") {
		t.Fatalf("the PostgreSQL run did not run the claim test:\n%s", out)
	}
	t.Logf("PostgreSQL run: %d tests passed, %d skipped", strings.Count(string(out), "--- PASS"), strings.Count(string(out), "--- SKIP"))
}

// failures keeps the lines around failing tests of a verbose run.
func failures(out string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "=== RUN") || strings.HasPrefix(line, "--- PASS") || strings.HasPrefix(line, "=== PAUSE") || strings.HasPrefix(line, "=== CONT") {
			continue
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
