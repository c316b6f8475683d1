package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/internal/pgtest"
	"github.com/aicr-dev/aicr/triggers"
)

func writePGConfig(t *testing.T, dsn string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AICR_TEST_PG_DSN", dsn)
	t.Setenv("AICR_CLI_TEST_SECRET", "s")
	cfg := `[daemon]
data_dir = "data"
secret_env = "AICR_CLI_TEST_SECRET"

[store]
kind = "postgres"
dsn_env = "AICR_TEST_PG_DSN"

[[repo]]
name = "main"
kind = "svn"
url = "file:///nonexistent"
`
	path := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDBMigrateToPostgresCopiesEveryRun(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	cfg := writePGConfig(t, srv.NewDatabase(t))
	src, err := audit.Open(ctx, filepath.Join(filepath.Dir(cfg), "data", "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 30; i++ {
		ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: fmt.Sprint(i), User: "alice", SentAt: time.Now()}
		if _, err := src.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	src.Close()

	out, errOut, code := runCLI(t, "db", "migrate", "--to", "postgres", "--config", cfg, "--format", "json")
	if code != 0 {
		t.Fatalf("db migrate: exit %d\n%s%s", code, out, errOut)
	}
	var res struct {
		To     string             `json:"to"`
		Tables []audit.TableCount `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := map[string]int64{}
	for _, c := range res.Tables {
		got[c.Table] = c.Copied
	}
	if got["runs"] != 30 || got["events"] != 30 {
		t.Fatalf("copied %v, want 30 runs and 30 events", got)
	}
	// The CLI now reads the runs from PostgreSQL.
	out, errOut, code = runCLI(t, "audit", "list", "--config", cfg, "--format", "json", "--limit", "100")
	if code != 0 || strings.Count(out, `"revision"`) < 30 {
		t.Fatalf("audit list on postgres: exit %d\n%s%s", code, out, errOut)
	}
	// A second migration would mix two histories: refused.
	if _, errOut, code := runCLI(t, "db", "migrate", "--to", "postgres", "--config", cfg); code != 1 || !strings.Contains(errOut, "already has") {
		t.Fatalf("second migrate: exit %d %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "db", "migrate", "--to", "mysql", "--config", cfg); code != 2 || !strings.Contains(errOut, `--to must be "postgres"`) {
		t.Fatalf("--to mysql: exit %d %s", code, errOut)
	}
}

func TestStoreConfigNeedsADSNForPostgres(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "aicr.toml")
	os.WriteFile(path, []byte("[daemon]\nsecret_env = \"S\"\n[store]\nkind = \"postgres\"\n[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///x\"\n"), 0o600)
	if _, errOut, code := runCLI(t, "config", "check", path); code == 0 || !strings.Contains(errOut, "store.dsn_env") {
		t.Fatalf("postgres without dsn: exit %d %s", code, errOut)
	}
	os.WriteFile(path, []byte("[daemon]\nsecret_env = \"S\"\n[store]\nkind = \"mysql\"\n[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///x\"\n"), 0o600)
	if _, errOut, code := runCLI(t, "config", "check", path); code == 0 || !strings.Contains(errOut, `unknown store kind "mysql"`) {
		t.Fatalf("kind mysql: exit %d %s", code, errOut)
	}
}

// An installation moving to PostgreSQL with this aicr has a SQLite file
// the previous aicr wrote, a schema version behind: the copy upgrades it
// (its config already says postgres, so no daemon would), and refuses to
// run while a daemon still writes it.
func TestDBMigrateFromAnOlderSQLiteFile(t *testing.T) {
	srv := pgtest.Start(t)
	ctx := context.Background()
	cfg := writePGConfig(t, srv.NewDatabase(t))
	dataDir := filepath.Join(filepath.Dir(cfg), "data")
	path := filepath.Join(dataDir, "aicr.db")
	src, err := audit.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: fmt.Sprint(i), User: "alice", SentAt: time.Now()}
		if _, err := src.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	// One run has its directory in this data_dir.
	claimed, err := src.ClaimNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.SetRunDir(ctx, claimed.ID, filepath.Join(dataDir, "runs", fmt.Sprint(claimed.ID))); err != nil {
		t.Fatal(err)
	}
	src.Close()
	// Back to the schema of the release before PostgreSQL: the migrations
	// since (findings, whose dispatches rebuild re-applies over the rebuilt
	// table; dispatches.report; run_home; author; daemons and
	// rate_buckets; and since, the accounting of migration 18 and the budget
	// column of 19) undone.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE finding_events`, `DROP TABLE findings`, `ALTER TABLE dispatches DROP COLUMN report`, `ALTER TABLE runs DROP COLUMN run_home`, `ALTER TABLE runs DROP COLUMN author`, `DROP TABLE daemons`, `DROP TABLE rate_buckets`,
		`DROP TABLE run_turns`, `ALTER TABLE runs DROP COLUMN cache_read_tokens`, `ALTER TABLE runs DROP COLUMN cache_write_tokens`, `ALTER TABLE runs DROP COLUMN agent_stopped`, `ALTER TABLE runs DROP COLUMN agent_clipped`, `ALTER TABLE runs DROP COLUMN budget`,
		`DELETE FROM schema_migrations WHERE version > 12`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	unlock, err := daemon.LockDataDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "db", "migrate", "--to", "postgres", "--config", cfg)
	unlock()
	if code != 1 || !strings.Contains(errOut, "another aicr daemon holds") {
		t.Fatalf("migrate while a daemon holds data_dir: exit %d %s", code, errOut)
	}

	out, errOut, code := runCLI(t, "db", "migrate", "--to", "postgres", "--config", cfg, "--format", "json")
	if code != 0 {
		t.Fatalf("db migrate of an older file: exit %d\n%s%s", code, out, errOut)
	}
	if want := fmt.Sprintf("to %d", audit.LatestSchemaVersion()); !strings.Contains(errOut, "upgraded "+path) || !strings.Contains(errOut, want) {
		t.Errorf("stderr does not say the file was upgraded (%s): %q", want, errOut)
	}
	var res struct {
		Tables []audit.TableCount `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, c := range res.Tables {
		if c.Table == "runs" && c.Copied != 5 {
			t.Fatalf("copied %d runs, want 5", c.Copied)
		}
	}
	// The run with a directory is recorded as this host's data_dir's, so
	// only a daemon here prunes it; the others have none.
	pg, err := sql.Open("pgx", os.Getenv("AICR_TEST_PG_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	host, _ := os.Hostname()
	homes := map[int64]string{}
	rows, err := pg.QueryContext(ctx, `SELECT id, run_home FROM runs`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var home string
		if err := rows.Scan(&id, &home); err != nil {
			t.Fatal(err)
		}
		homes[id] = home
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for id, home := range homes {
		want := ""
		if id == claimed.ID {
			want = host + ":" + dataDir
		}
		if home != want {
			t.Errorf("run %d: run_home %q, want %q", id, home, want)
		}
	}
}
