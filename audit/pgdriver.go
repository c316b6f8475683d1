package audit

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/stdlib"
)

// pgConnector hands database/sql pgx connections (from a pgxpool) that
// translate every query for PostgreSQL (rewriteForPostgres) and take the
// writer lock at the start of every read-write transaction. Doing it here,
// below database/sql, covers db, tx and prepared statements alike.
type pgConnector struct{ inner driver.Connector }

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(*stdlib.Conn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("pgx stdlib returned %T, not *stdlib.Conn", conn)
	}
	return &pgConn{c: sc}, nil
}

func (c pgConnector) Driver() driver.Driver { return c.inner.Driver() }

// writerLockKey is the advisory lock every read-write transaction takes
// first on PostgreSQL. The Store's transactions were written for SQLite,
// where BEGIN IMMEDIATE serializes writers: a transaction may read, decide
// and write (retry a run, plan a dispatch) assuming nothing changes in
// between. Under READ COMMITTED that would not hold across daemons, so
// the lock gives PostgreSQL the same guarantee. Claims, the hot path of N
// daemons, skip it (withoutWriterLock) and use FOR UPDATE SKIP LOCKED.
const writerLockKey int64 = 0x61696372_00000001 // "aicr", 1

type noWriterLockKey struct{}

// withoutWriterLock marks ctx so the transaction begun with it does not
// take the writer lock: for transactions whose every decision is made
// under row locks of their own.
func withoutWriterLock(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWriterLockKey{}, true)
}

type pgConn struct{ c *stdlib.Conn }

func (p *pgConn) Prepare(query string) (driver.Stmt, error) {
	return p.PrepareContext(context.Background(), query)
}

func (p *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	r := rewriteForPostgres(query)
	st, err := p.c.PrepareContext(ctx, r.query)
	if err != nil {
		return nil, err
	}
	return &pgStmt{conn: p, st: st.(*stdlib.Stmt), returningID: r.returningID}, nil
}

func (p *pgConn) Close() error { return p.c.Close() }

func (p *pgConn) Begin() (driver.Tx, error) {
	return p.BeginTx(context.Background(), driver.TxOptions{})
}

func (p *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	// A read-only transaction on SQLite (WAL) reads one snapshot from
	// start to end; REPEATABLE READ is PostgreSQL's same promise, so a
	// run and its problems are read consistently.
	if opts.ReadOnly && sql.IsolationLevel(opts.Isolation) == sql.LevelDefault {
		opts.Isolation = driver.IsolationLevel(sql.LevelRepeatableRead)
	}
	tx, err := p.c.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	if !opts.ReadOnly && ctx.Value(noWriterLockKey{}) == nil {
		if _, err := p.c.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, []driver.NamedValue{{Ordinal: 1, Value: writerLockKey}}); err != nil {
			_ = tx.Rollback()
			return nil, fmt.Errorf("take the writer lock: %w", err)
		}
	}
	return tx, nil
}

func (p *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r := rewriteForPostgres(query)
	if r.returningID {
		rows, err := p.c.QueryContext(ctx, r.query, pgArgs(args))
		if err != nil {
			return nil, err
		}
		return insertResult(rows)
	}
	return p.c.ExecContext(ctx, r.query, pgArgs(args))
}

func (p *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return p.c.QueryContext(ctx, rewriteForPostgres(query).query, pgArgs(args))
}

func (p *pgConn) Ping(ctx context.Context) error              { return p.c.Ping(ctx) }
func (p *pgConn) CheckNamedValue(nv *driver.NamedValue) error { return p.c.CheckNamedValue(nv) }
func (p *pgConn) ResetSession(ctx context.Context) error      { return p.c.ResetSession(ctx) }
func (p *pgConn) IsValid() bool                               { return !p.c.Conn().IsClosed() }

// pgArgs adapts SQLite-minded arguments: the schema keeps booleans in
// INTEGER columns (dry_run, allowed, truncated), which SQLite fills from
// Go bools and PostgreSQL's bigint will not.
func pgArgs(args []driver.NamedValue) []driver.NamedValue {
	for i, a := range args {
		if b, ok := a.Value.(bool); ok {
			v := int64(0)
			if b {
				v = 1
			}
			args[i].Value = v
		}
	}
	return args
}

// insertResult reads the ids an INSERT ... RETURNING id produced: the
// last is LastInsertId (SQLite's meaning for a multi-row insert), their
// count RowsAffected.
func insertResult(rows driver.Rows) (driver.Result, error) {
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	var res pgInsertResult
	for {
		err := rows.Next(dest)
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		id, ok := dest[0].(int64)
		if !ok {
			return nil, fmt.Errorf("RETURNING id gave %T", dest[0])
		}
		res.id, res.n = id, res.n+1
	}
}

type pgInsertResult struct{ id, n int64 }

func (r pgInsertResult) LastInsertId() (int64, error) {
	if r.n == 0 {
		return 0, errors.New("no row inserted")
	}
	return r.id, nil
}
func (r pgInsertResult) RowsAffected() (int64, error) { return r.n, nil }

type pgStmt struct {
	conn        *pgConn
	st          *stdlib.Stmt
	returningID bool
}

func (s *pgStmt) Close() error  { return s.st.Close() }
func (s *pgStmt) NumInput() int { return s.st.NumInput() }
func (s *pgStmt) Exec([]driver.Value) (driver.Result, error) {
	return nil, errors.New("Stmt.Exec without context is not supported")
}
func (s *pgStmt) Query([]driver.Value) (driver.Rows, error) {
	return nil, errors.New("Stmt.Query without context is not supported")
}

func (s *pgStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if s.returningID {
		rows, err := s.st.QueryContext(ctx, pgArgs(args))
		if err != nil {
			return nil, err
		}
		return insertResult(rows)
	}
	return s.st.ExecContext(ctx, pgArgs(args))
}

func (s *pgStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.st.QueryContext(ctx, pgArgs(args))
}
