package audit

import "testing"

func TestRebindForPostgres(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT id FROM runs WHERE repo = ? AND revision = ?`, `SELECT id FROM runs WHERE repo = $1 AND revision = $2`},
		// Numbered placeholders keep their numbers; a bare one follows the largest.
		{`UPDATE d SET a = ?1, b = ?2, c = COALESCE(c, ?2) WHERE id = ?3 AND x = ?`, `UPDATE d SET a = $1, b = $2, c = COALESCE(c, $2) WHERE id = $3 AND x = $4`},
		// Literals, quoted identifiers and comments are left alone.
		{`SELECT 'what? it''s ?' AS "q?", ? -- why?
		/* ? */ FROM t`, `SELECT 'what? it''s ?' AS "q?", $1 -- why?
		/* ? */ FROM t`},
		// user is reserved in PostgreSQL.
		{`INSERT INTO events (vcs, user, client) VALUES (?, ?, ?)`, `INSERT INTO events (vcs, "user", client) VALUES ($1, $2, $3)`},
		{`SELECT e.user, users, username FROM events e`, `SELECT e."user", users, username FROM events e`},
	} {
		if got := rebind(c.in); got != c.want {
			t.Errorf("rebind(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestInsertsIntoIDTablesReturnTheID(t *testing.T) {
	r := rewriteForPostgres(`INSERT INTO rejected_events (received_at, reason) VALUES (?, ?)`)
	if !r.returningID || r.query != `INSERT INTO rejected_events (received_at, reason) VALUES ($1, $2) RETURNING id` {
		t.Fatalf("%+v", r)
	}
	// Followed through the rebuilds of migrations 3 and 4.
	if r := rewriteForPostgres(`INSERT INTO dispatches (run_id) VALUES (?)`); !r.returningID {
		t.Fatalf("dispatches: %+v", r)
	}
	for _, q := range []string{
		`INSERT INTO repo_marks (repo, last_seen, updated_at) VALUES (?, ?, ?)`,   // no id column
		`INSERT INTO events (vcs) VALUES (?) ON CONFLICT DO NOTHING RETURNING id`, // has its own
	} {
		if r := rewriteForPostgres(q); r.returningID {
			t.Errorf("%s: %+v", q, r)
		}
	}
}

func TestMigrationTypesForPostgres(t *testing.T) {
	in := `CREATE TABLE x (
		id      INTEGER PRIMARY KEY AUTOINCREMENT,
		n       INTEGER NOT NULL DEFAULT 0,
		cost    REAL,
		payload BLOB NOT NULL,
		note    TEXT NOT NULL DEFAULT 'INTEGER REAL'
	) WITHOUT ROWID`
	want := `CREATE TABLE x (
		id      BIGSERIAL PRIMARY KEY,
		n       BIGINT NOT NULL DEFAULT 0,
		cost    DOUBLE PRECISION,
		payload BYTEA NOT NULL,
		note    TEXT NOT NULL DEFAULT 'INTEGER REAL'
	)`
	if got := pgDDL(in); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
