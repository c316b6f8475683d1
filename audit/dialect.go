package audit

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Backend names the database behind a Store.
type Backend string

const (
	// BackendSQLite is the embedded default: one file in data_dir.
	BackendSQLite Backend = "sqlite"
	// BackendPostgres is a shared PostgreSQL database several daemons
	// use at once.
	BackendPostgres Backend = "postgres"
)

// The Store's SQL is written once, in SQLite's dialect restricted to what
// PostgreSQL also understands, and translated for PostgreSQL below the
// database/sql layer (see pgdriver.go), so every Store method, including
// ones added later, runs on both backends unchanged. The translation is
// lexical: '?' and '?N' placeholders become '$N', the column name user
// (reserved in PostgreSQL) is quoted, and a DDL statement's SQLite types
// become PostgreSQL's. Anything else must be portable where it is
// written (GREATEST/MAX(a, b) are not: use CASE).

// pgRewrite is a query translated for PostgreSQL. returningID is set for
// an INSERT into a table with an id column and no RETURNING clause of its
// own: " RETURNING id" was appended so the driver can answer
// LastInsertId, which PostgreSQL has no other way to report.
type pgRewrite struct {
	query       string
	returningID bool
}

var pgRewrites sync.Map // string -> pgRewrite

func rewriteForPostgres(query string) pgRewrite {
	if r, ok := pgRewrites.Load(query); ok {
		return r.(pgRewrite)
	}
	q := rebind(query)
	r := pgRewrite{query: q}
	if m := insertInto.FindStringSubmatch(q); m != nil && !hasWord(q, "RETURNING") && idTables()[strings.ToLower(m[1])] {
		r.query = strings.TrimRight(q, " \t\n;") + " RETURNING id"
		r.returningID = true
	}
	pgRewrites.Store(query, r)
	return r
}

var insertInto = regexp.MustCompile(`(?is)^\s*INSERT\s+INTO\s+("?\w+"?)`)

// rebind rewrites SQLite placeholders to PostgreSQL's and quotes the
// reserved word user, leaving string literals, quoted identifiers and
// comments alone. A bare '?' takes the number after the largest used so
// far, as SQLite numbers it.
func rebind(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	maxN := 0
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) {
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			end := min(j+1, len(q))
			b.WriteString(q[i:end])
			i = end
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			end := len(q)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			b.WriteString(q[i:end])
			i = end
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n := maxN + 1
			if j > i+1 {
				n, _ = strconv.Atoi(q[i+1 : j])
			}
			maxN = max(maxN, n)
			b.WriteString("$" + strconv.Itoa(n))
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < len(q) && isIdentPart(q[j]) {
				j++
			}
			word := q[i:j]
			if strings.EqualFold(word, "user") {
				b.WriteString(`"user"`)
			} else {
				b.WriteString(word)
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') || c == '$' }

func hasWord(q, word string) bool {
	return regexp.MustCompile(`(?i)\b` + word + `\b`).MatchString(q)
}

// pgDDL translates one migration statement's SQLite column types to
// PostgreSQL's: an INTEGER PRIMARY KEY (SQLite's rowid alias) becomes a
// BIGSERIAL, other INTEGERs BIGINT (SQLite integers are 64-bit), REAL
// double precision (cost_usd must not lose cents), BLOB bytea, and
// AUTOINCREMENT and WITHOUT ROWID go. rebind then applies as to any query.
func pgDDL(stmt string) string {
	return outsideLiterals(stmt, func(s string) string {
		s = ddlAutoincrement.ReplaceAllString(s, "")
		s = ddlIntegerPK.ReplaceAllString(s, "BIGSERIAL PRIMARY KEY")
		s = ddlInteger.ReplaceAllString(s, "BIGINT")
		s = ddlReal.ReplaceAllString(s, "DOUBLE PRECISION")
		s = ddlBlob.ReplaceAllString(s, "BYTEA")
		return ddlWithoutRowid.ReplaceAllString(s, ")")
	})
}

// outsideLiterals applies f to the parts of q outside string literals and
// quoted identifiers (a DEFAULT or CHECK text may contain a type's name).
func outsideLiterals(q string, f func(string) string) string {
	var b strings.Builder
	start := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c != '\'' && c != '"' {
			continue
		}
		b.WriteString(f(q[start:i]))
		j := i + 1
		for j < len(q) {
			if q[j] == c {
				if j+1 < len(q) && q[j+1] == c {
					j += 2
					continue
				}
				break
			}
			j++
		}
		end := min(j+1, len(q))
		b.WriteString(q[i:end])
		i, start = end-1, end
	}
	b.WriteString(f(q[start:]))
	return b.String()
}

var (
	ddlAutoincrement = regexp.MustCompile(`(?i)\s+AUTOINCREMENT\b`)
	ddlIntegerPK     = regexp.MustCompile(`\bINTEGER\s+PRIMARY\s+KEY\b`)
	ddlInteger       = regexp.MustCompile(`\bINTEGER\b`)
	ddlReal          = regexp.MustCompile(`\bREAL\b`)
	ddlBlob          = regexp.MustCompile(`\bBLOB\b`)
	ddlWithoutRowid  = regexp.MustCompile(`\)\s*WITHOUT\s+ROWID`)
)

var (
	idTablesOnce sync.Once
	idTablesSet  map[string]bool
)

// idTables are the tables whose id is generated (an INTEGER PRIMARY KEY
// in the migrations, followed through renames), the ones whose INSERTs
// get RETURNING id on PostgreSQL.
func idTables() map[string]bool {
	idTablesOnce.Do(func() {
		idTablesSet = map[string]bool{}
		create := regexp.MustCompile(`(?is)^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\(\s*id\s+INTEGER\s+PRIMARY\s+KEY`)
		rename := regexp.MustCompile(`(?is)^\s*ALTER\s+TABLE\s+(\w+)\s+RENAME\s+TO\s+(\w+)`)
		drop := regexp.MustCompile(`(?is)^\s*DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)`)
		for _, m := range migrations {
			for _, stmt := range m {
				if g := create.FindStringSubmatch(stmt); g != nil {
					idTablesSet[strings.ToLower(g[1])] = true
				} else if g := rename.FindStringSubmatch(stmt); g != nil {
					from, to := strings.ToLower(g[1]), strings.ToLower(g[2])
					idTablesSet[to] = idTablesSet[from]
					delete(idTablesSet, from)
				} else if g := drop.FindStringSubmatch(stmt); g != nil {
					delete(idTablesSet, strings.ToLower(g[1]))
				}
			}
		}
	})
	return idTablesSet
}
