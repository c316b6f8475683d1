// Package audit is aicr's one SQLite database: the durable work queue the
// daemon's workers take runs from, and the audit trail of every event
// received (or rejected), every run, every problem and every dispatch to an
// IM channel. The daemon writes it; the CLI reads it, possibly while the
// daemon runs, through a second Store on the same file.
package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Sentinel errors; callers test them with errors.Is.
var (
	// ErrNotFound: no run, dispatch or event with that id.
	ErrNotFound = errors.New("not found")
	// ErrNoWork: ClaimNext found no queued run.
	ErrNoWork = errors.New("no queued run")
	// ErrNotRunning: the run exists but is not in status running, so it
	// cannot be finished (already finished, or re-queued after a crash).
	ErrNotRunning = errors.New("run is not running")
	// ErrInvalid: an argument the schema would reject (unknown status,
	// source or severity, empty repo...).
	ErrInvalid = errors.New("invalid argument")
)

// busyTimeout is how long a connection waits for another connection's
// write lock before SQLITE_BUSY. It covers the CLI (a second process) and
// the daemon's own connections contending for the single writer slot.
const busyTimeout = 5 * time.Second

// maxOpenConns bounds the pool. WAL lets readers run beside the one
// writer, so more than one connection is useful; a small bound makes
// goroutines queue fairly inside database/sql instead of all sleeping in
// SQLite's busy handler.
const maxOpenConns = 4

// timeFormat is RFC 3339 in UTC with a fixed nine-digit fraction, so stored
// times stay readable in the sqlite3 shell and sort correctly as text
// (time.RFC3339Nano trims trailing zeros and would not).
const timeFormat = "2006-01-02T15:04:05.000000000Z"

// Store is the audit database. It is safe for concurrent use by many
// goroutines, and other processes may open the same file at the same time.
type Store struct {
	db   *pool
	path string
	// backend is BackendSQLite for a Store from Open or OpenReadOnly,
	// BackendPostgres for one from OpenPostgres.
	backend Backend
	// jobLocks are the singleton job locks held in this process (see
	// TryJobLock); on PostgreSQL an advisory lock on lockConn backs each.
	jobLocks jobLockTable
	// pool is the pgx pool under db on PostgreSQL.
	pool *pgxpool.Pool
	// lockConn holds the singleton job locks on PostgreSQL (TryJobLock).
	lockMu   sync.Mutex
	lockConn *pgx.Conn
	now      func() time.Time // replaced by tests that need fixed times
	// self is this process's identity on the runs it claims; Until is
	// unused here (leaseTTL sets it per claim).
	self     Lease
	leaseTTL time.Duration
	writes   *groupCommitter
	// stmts is nil on a read-only Store.
	stmts *hotStmts
	// lastPrune is when SeenSignature last dropped expired signatures;
	// only the group-commit goroutine touches it.
	lastPrune time.Time
	// migrated is what Open found and left; zero on a read-only Store.
	migrated Migrated
	// home is where this Store's run directories live on a shared store
	// (SetRunHome); empty for one daemon per database.
	home string
}

// SetRunHome says that the run directories this Store records
// (SetRunDir) are in dataDir on this host, and makes the retention
// queries (RunsToPrune, SourcesToDrop, RunsToDelete) return only runs
// whose directory is there, or that have none: on a shared store each
// daemon's run directories are on its own host, and only that daemon can
// remove them. Without it (one daemon per database) every run is this
// Store's.
func (s *Store) SetRunHome(dataDir string) {
	s.home = s.self.Host + ":" + filepath.Clean(dataDir)
}

// RunHome is what SetRunHome set, "" when it was not called.
func (s *Store) RunHome() string { return s.home }

// homeClause restricts a retention query on runs to this Store's home:
// runs whose directory is elsewhere are another daemon's to remove.
func (s *Store) homeClause() (string, []any) {
	if s.home == "" {
		return "", nil
	}
	return ` AND run_home IN ('', ?)`, []any{s.home}
}

// DefaultLeaseTTL is how long a claim on a running run holds without a
// renewal. The owner renews well within it; a crashed or wedged owner
// loses the run to recovery at most this long after its last renewal.
const DefaultLeaseTTL = 2 * time.Minute

// SetLeaseTTL changes how long claims made through s hold (tests, and
// daemons that want faster recovery).
func (s *Store) SetLeaseTTL(d time.Duration) { s.leaseTTL = d }

// LeaseTTL is how long a claim made through s holds without renewal.
func (s *Store) LeaseTTL() time.Duration { return s.leaseTTL }

// Self is the lease identity this Store claims runs under.
func (s *Store) Self() Lease { return s.self }

// Open opens (creating if needed) the database at path and applies any
// pending migrations.
//
// Concurrency: every read-write transaction starts with BEGIN IMMEDIATE
// (the driver's _txlock=immediate). A deferred transaction that reads first
// and writes later cannot be rescued by the busy timeout when another
// connection committed in between (SQLITE_BUSY_SNAPSHOT); taking the write
// lock up front turns every conflict, in this process or another, into a
// plain wait under busy_timeout. Read-only transactions use a plain BEGIN
// and, thanks to WAL, never wait for the writer.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	// SQLite would create the file under the umask (usually 0644) and
	// gives -wal and -shm the database's mode: the audit trail holds code
	// excerpts and must not be world-readable.
	// 0600: the hook's account shares a group with the daemon (for the
	// config and the spool), and must not read the audit trail.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create database %s: %w", path, err)
	}
	privateFiles(path, path+"-wal", path+"-shm")
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	// FULL: every commit fsyncs the WAL, so an event the intake answered
	// 202 for survives a power loss (NORMAL only survives a crash of the
	// process). Enqueue's group commit keeps the fsyncs shared.
	q.Set("_synchronous", "FULL")
	q.Set("_foreign_keys", "1")
	q.Set("_txlock", "immediate")
	// The group commit runs each request in a savepoint, and SQLite keeps
	// a savepoint's undo pages in a sub-journal: a temporary file by
	// default, written on every request (8% of intake CPU). In memory it
	// holds one batch's pages at most.
	q.Set("_pragma", "temp_store(memory)")
	// A plain path (no "file:" URI) so '%' in directory names is taken
	// literally; the driver splits the DSN at the first '?'.
	if strings.Contains(path, "?") {
		return nil, fmt.Errorf("open database %q: %w: path contains '?'", path, ErrInvalid)
	}
	dsn := path + "?" + q.Encode()

	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	s := &Store{db: newPool(db, poolSize(maxOpenConns)), path: path, backend: BackendSQLite, now: time.Now, self: newLeaseIdentity(), leaseTTL: DefaultLeaseTTL}
	if err := pingUntilUnlocked(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	if s.stmts, err = prepareHotStmts(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	s.writes = newGroupCommitter(s.db, s.stmts)
	return s, nil
}

// ErrNoDatabase: OpenReadOnly found no database file; nothing has
// written one yet.
var ErrNoDatabase = errors.New("no database yet")

// OpenReadOnly opens an existing database for reading only (SQLite's
// mode=ro). It never creates the file, its directory or any migration, so
// a read-only command run as root cannot leave root-owned files that the
// daemon then cannot open.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s: the daemon has not run (start it with aicr daemon)", ErrNoDatabase, path)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	// A file: URI so SQLite itself applies mode=ro; url.URL escapes '%',
	// '?' and '#' in the path.
	dsn := (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	s := &Store{db: newPool(db, poolSize(maxOpenConns)), path: path, backend: BackendSQLite, now: time.Now, self: newLeaseIdentity(), leaseTTL: DefaultLeaseTTL}
	s.writes = newGroupCommitter(s.db, nil)
	if err := pingUntilUnlocked(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s read-only: %w", path, err)
	}
	// A read-only open cannot migrate; an older schema would fail later
	// with "no such column".
	if v, err := s.SchemaVersion(ctx); err != nil || v < len(migrations) {
		db.Close()
		if err != nil {
			return nil, fmt.Errorf("open database %s read-only: %w", path, err)
		}
		return nil, fmt.Errorf("database %s is at schema version %d, this aicr reads version %d: restart the daemon with this aicr to upgrade it", path, v, len(migrations))
	} else if err := checkNotNewer(path, v); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database. Runs still in status running stay so; the
// next daemon start hands them back with RequeueInterrupted.
//
//nolint:contextcheck // closing must finish after the caller's context is done (a deferred Close on shutdown), so the lock session closes under its own context
func (s *Store) Close() error {
	s.writes.stop()
	err := errors.Join(s.stmts.close(), s.db.Close())
	s.lockMu.Lock()
	if s.lockConn != nil {
		s.lockConn.Close(context.Background())
	}
	s.lockMu.Unlock()
	if s.pool != nil {
		s.pool.Close()
	}
	return err
}

// Path returns the database file's path; empty on PostgreSQL.
func (s *Store) Path() string { return s.path }

// Backend says which database s uses.
func (s *Store) Backend() Backend { return s.backend }

func (s *Store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// migrate applies, in order, every migration not yet recorded in
// schema_migrations, each in its own transaction together with its record,
// so a crash or a concurrent Open never leaves one half applied.
func (s *Store) migrate(ctx context.Context) error {
	// In a transaction: on PostgreSQL that takes the writer lock, so
	// daemons starting together do not race on CREATE TABLE IF NOT EXISTS.
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at TEXT NOT NULL
	)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	from, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	where := s.path
	if s.backend == BackendPostgres {
		where = "the PostgreSQL database"
	}
	if err := checkNotNewer(where, from); err != nil {
		return err
	}
	for i, m := range migrations {
		version := i + 1
		if err := s.applyMigration(ctx, version, m); err != nil {
			return fmt.Errorf("migration %d: %w", version, err)
		}
	}
	to, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	s.migrated = Migrated{From: from, To: to}
	return nil
}

func (s *Store) applyMigration(ctx context.Context, version int, stmts []string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()

	// Checked inside the (immediate) transaction: another process opening
	// the same file may have applied it since we looked.
	var n int
	if err := tx.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, version).Scan(&n); err != nil {
		return fmt.Errorf("check applied: %w", err)
	}
	if n > 0 {
		return nil
	}
	for _, stmt := range stmts {
		stmt, ok := forBackend(s.backend, stmt)
		if !ok {
			continue
		}
		if s.backend == BackendPostgres {
			stmt = pgDDL(stmt)
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("apply: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
		version, formatTime(s.now())); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return tx.Commit()
}

// SchemaVersion returns the highest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

// nullTime stores the zero time as NULL ("not yet").
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return formatTime(t)
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse time %q: %w", s, err)
	}
	return t, nil
}

// parseNullTime maps NULL to the zero time.
func parseNullTime(s sql.NullString) (time.Time, error) {
	if !s.Valid {
		return time.Time{}, nil
	}
	return parseTime(s.String)
}

// pingUntilUnlocked opens the first connection, waiting out SQLITE_BUSY.
// Switching a new database file to WAL needs an exclusive lock and SQLite
// reports BUSY for it at once, without calling the busy handler, so a
// daemon and a CLI opening a fresh data_dir together would otherwise fail.
func pingUntilUnlocked(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	wait := 5 * time.Millisecond
	for {
		err := db.PingContext(ctx)
		var coded interface{ Code() int }
		if err == nil || !errors.As(err, &coded) || coded.Code()&0xff != sqliteBusy || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		if wait < 100*time.Millisecond {
			wait *= 2
		}
	}
}

// sqliteBusy is SQLITE_BUSY, the primary result code (extended codes keep
// it in the low byte).
const sqliteBusy = 5

// SetClock replaces the store's clock, which stamps rows and decides
// which dispatches are due. The daemon passes its own clock; tests use it
// to step over retry delays without sleeping. Call it before any use.
func (s *Store) SetClock(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	s.now = now
}

// privateFiles takes group and other access off the database files this
// process owns (an older aicr made them 0640); others are left alone.
func privateFiles(paths ...string) {
	for _, p := range paths {
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o077 != 0 && ownedByMe(st) {
			_ = os.Chmod(p, st.Mode().Perm()&^0o077)
		}
	}
}
