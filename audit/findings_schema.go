package audit

import "strings"

// postgresOnly starts a migration statement that only PostgreSQL runs:
// what SQLite needs no statement for (id sequences after a rebuild that
// copied ids) or cannot parse.
const postgresOnly = "-- postgres only\n"

// forBackend is stmt as backend b runs it; ok is false when b skips it.
func forBackend(b Backend, stmt string) (string, bool) {
	if rest, pgOnly := strings.CutPrefix(stmt, postgresOnly); pgOnly {
		return rest, b == BackendPostgres
	}
	return stmt, true
}
