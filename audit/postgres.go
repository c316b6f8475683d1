package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgMaxConns bounds a daemon's connections to the shared server: workers,
// the intake's group commit, the dispatcher and the singleton job locks
// (one held connection each) fit in it, and N daemons times it stays far
// below PostgreSQL's default max_connections of 100.
const pgMaxConns = 12

// OpenPostgres opens the PostgreSQL database dsn names and applies any
// pending migrations (each in a transaction under the writer lock, so
// daemons starting at once apply each exactly once).
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	return openPostgres(ctx, dsn, false)
}

// OpenPostgresReadOnly opens dsn for reading only: its sessions are
// read-only (default_transaction_read_only) and nothing is migrated.
func OpenPostgresReadOnly(ctx context.Context, dsn string) (*Store, error) {
	return openPostgres(ctx, dsn, true)
}

func openPostgres(ctx context.Context, dsn string, readOnly bool) (*Store, error) {
	where := RedactDSN(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message may quote the DSN, password included.
		return nil, fmt.Errorf("postgres dsn %s: %w: not a valid connection string or URL (postgres://user@host:5432/db?sslmode=...)", where, ErrInvalid)
	}
	cfg.MaxConns = int32(poolSize(pgMaxConns))
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "aicr"
	if readOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres %s: %w", where, err)
	}
	db := sql.OpenDB(pgConnector{inner: stdlib.GetPoolConnector(pool)})
	// The pool owns the connections (see stdlib.GetPoolConnector).
	db.SetMaxIdleConns(0)
	closeAll := func() { db.Close(); pool.Close() }
	s := &Store{db: newPool(db, testPoolSize()), backend: BackendPostgres, pool: pool, now: time.Now, self: newLeaseIdentity(), leaseTTL: DefaultLeaseTTL}
	if err := db.PingContext(ctx); err != nil {
		closeAll()
		return nil, fmt.Errorf("connect to postgres %s: %w", where, err)
	}
	if readOnly {
		s.writes = newGroupCommitter(s.db, nil)
		if v, err := s.SchemaVersion(ctx); err != nil || v < len(migrations) {
			closeAll()
			if err != nil {
				return nil, fmt.Errorf("open postgres %s read-only: %w", where, err)
			}
			return nil, fmt.Errorf("postgres %s is at schema version %d, this aicr reads version %d: start a daemon with this aicr to upgrade it", where, v, len(migrations))
		} else if err := checkNotNewer("postgres "+where, v); err != nil {
			closeAll()
			return nil, err
		}
		return s, nil
	}
	if err := s.migrate(ctx); err != nil {
		closeAll()
		return nil, fmt.Errorf("migrate postgres %s: %w", where, err)
	}
	if s.stmts, err = prepareHotStmts(ctx, db); err != nil {
		closeAll()
		return nil, fmt.Errorf("open postgres %s: %w", where, err)
	}
	s.writes = newGroupCommitter(s.db, s.stmts)
	return s, nil
}

// RedactDSN is dsn fit for logs and errors: the password (URL or
// keyword form) replaced by xxxxx.
func RedactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	fields := strings.Fields(dsn)
	for i, f := range fields {
		if strings.HasPrefix(strings.ToLower(f), "password=") {
			fields[i] = "password=xxxxx"
		}
	}
	return strings.Join(fields, " ")
}

// skipLocked ends a claim's row choice: on PostgreSQL the chosen row is
// locked and rows other claimers hold are passed over; SQLite has one
// writer and no such clause.
func (s *Store) skipLocked() string {
	if s.backend == BackendPostgres {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// isForeignKeyViolation recognises a foreign key failure on either
// backend.
func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23503"
	}
	return strings.Contains(err.Error(), "FOREIGN KEY")
}

// ErrJobBusy: TryJobLock found the job running elsewhere (another
// daemon, or this one still running the previous tick).
var ErrJobBusy = errors.New("job is running elsewhere")

// TryJobLock takes the lock of the singleton job name without waiting.
// ok is false when another holder has it; otherwise call release when the
// job is done. On PostgreSQL it is a session advisory lock, so a daemon
// that dies mid-job releases it with its session; on SQLite, where one
// daemon owns the data_dir, it only keeps a job from overlapping itself in
// this process.
//
// The locks live on one connection of their own, outside the pool: a
// held lock must not hold a pool connection, or a few hundred
// reconcilers ticking together would take every connection and wait
// for one to do their work.
func (s *Store) TryJobLock(ctx context.Context, name string) (release func(), ok bool, err error) {
	// In this process first: PostgreSQL's advisory locks are re-entrant
	// within a session, and every job lock of this Store shares one.
	if !s.jobLocks.try(name) {
		return nil, false, nil
	}
	if s.backend != BackendPostgres {
		return func() { s.jobLocks.release(name) }, true, nil
	}
	unlock, ok, err := s.tryAdvisoryLock(ctx, name)
	if err != nil || !ok {
		s.jobLocks.release(name)
		return nil, false, err
	}
	return func() { unlock(); s.jobLocks.release(name) }, true, nil
}

func (s *Store) tryAdvisoryLock(ctx context.Context, name string) (release func(), ok bool, err error) {
	key := jobLockKey(name)
	s.lockMu.Lock()
	defer s.lockMu.Unlock()
	if s.lockConn == nil || s.lockConn.IsClosed() {
		// The old session, if any, is gone and its locks with it.
		c, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
		if err != nil {
			return nil, false, fmt.Errorf("job lock %s: connect: %w", name, err)
		}
		s.lockConn = c
	}
	conn := s.lockConn
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		return nil, false, fmt.Errorf("job lock %s: %w", name, err)
	}
	if !ok {
		return nil, false, nil
	}
	return func() { //nolint:contextcheck // the unlock runs when the job is over, its context often done; it has its own 5 s bound
		s.lockMu.Lock()
		defer s.lockMu.Unlock()
		if conn != s.lockConn || conn.IsClosed() {
			return // that session ended, and released the lock
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
			// A session that cannot unlock must not keep the lock.
			conn.Close(ctx)
		}
	}, true, nil
}

func jobLockKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("aicr job " + name))
	return int64(h.Sum64())
}

type jobLockTable struct {
	mu   sync.Mutex
	held map[string]bool
}

func (t *jobLockTable) try(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[name] {
		return false
	}
	if t.held == nil {
		t.held = map[string]bool{}
	}
	t.held[name] = true
	return true
}

func (t *jobLockTable) release(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.held, name)
}

// LatestSchemaVersion is the schema version this aicr migrates to.
func LatestSchemaVersion() int { return len(migrations) }

// PostgresStatus is what doctor reports of a PostgreSQL store.
type PostgresStatus struct {
	ServerVersion string
	// SchemaVersion is 0 when no daemon has migrated the database yet.
	SchemaVersion int
	// Daemons heartbeating since the time InspectPostgres was given.
	Daemons []DaemonInfo
}

// InspectPostgres connects to dsn without migrating or writing anything
// and reads the server's version, the schema version and the daemons
// alive since liveSince. Errors never contain the password.
func InspectPostgres(ctx context.Context, dsn string, liveSince time.Time) (PostgresStatus, error) {
	var st PostgresStatus
	s, err := openPostgresRaw(ctx, dsn)
	if err != nil {
		return st, err
	}
	defer s.Close()
	if err := s.db.QueryRowContext(ctx, `SHOW server_version`).Scan(&st.ServerVersion); err != nil {
		return st, fmt.Errorf("postgres %s: %w", RedactDSN(dsn), err)
	}
	var exists bool
	if err := s.db.QueryRowContext(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return st, fmt.Errorf("postgres %s: %w", RedactDSN(dsn), err)
	}
	if !exists {
		return st, nil
	}
	if st.SchemaVersion, err = s.SchemaVersion(ctx); err != nil {
		return st, err
	}
	if st.SchemaVersion >= LatestSchemaVersion() {
		st.Daemons, err = s.Daemons(ctx, liveSince)
	}
	return st, err
}

// openPostgresRaw connects read-only without checking or migrating the
// schema.
func openPostgresRaw(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres dsn %s: %w: not a valid connection string or URL (postgres://user@host:5432/db?sslmode=...)", RedactDSN(dsn), ErrInvalid)
	}
	cfg.MaxConns = 2
	cfg.ConnConfig.RuntimeParams["application_name"] = "aicr doctor"
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres %s: %w", RedactDSN(dsn), err)
	}
	db := sql.OpenDB(pgConnector{inner: stdlib.GetPoolConnector(pool)})
	db.SetMaxIdleConns(0)
	s := &Store{db: newPool(db, testPoolSize()), backend: BackendPostgres, pool: pool, now: time.Now, self: newLeaseIdentity(), leaseTTL: DefaultLeaseTTL}
	s.writes = newGroupCommitter(s.db, nil)
	if err := db.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("connect to postgres %s: %w", RedactDSN(dsn), err)
	}
	return s, nil
}
