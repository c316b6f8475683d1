package audit

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"time"
)

// EnvTestPool, set to a positive number, is the size of the connection
// pool of every Store this process opens, and bounds each wait for a
// connection to testConnWait. The store's test suites (and the daemon's)
// set it to 1: then a query on the pool from inside a transaction (a
// helper that uses s.db while the caller holds a Tx) can never find a free
// connection, and instead of hanging the process until the test times out
// it panics with the stack of the waiting call. In production the pool is
// maxOpenConns (pgMaxConns) and waits are bounded by the caller's context
// only, so nothing changes there.
const EnvTestPool = "AICR_TEST_STORE_POOL"

// testConnWait is how long, under EnvTestPool, a query waits for a
// connection. A transaction in the store lasts milliseconds; a wait this
// long is a connection that will never come back (a nested use), or a
// transaction held across something it should not wait for.
const testConnWait = 15 * time.Second

// testPoolSize is EnvTestPool's value, 0 when unset.
func testPoolSize() int {
	n, err := strconv.Atoi(os.Getenv(EnvTestPool))
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// poolSize is how many connections a Store opens at most: def, or
// EnvTestPool's value under test.
func poolSize(def int) int {
	if n := testPoolSize(); n > 0 {
		return n
	}
	return def
}

// pool is the Store's *sql.DB. Under EnvTestPool every query and
// transaction first takes its connection with a bounded wait (see
// acquire); otherwise the methods are database/sql's own.
type pool struct {
	*sql.DB
	// wait bounds the wait for a connection; 0 leaves it to ctx.
	wait time.Duration
}

// newPool wraps db; size > 0 also bounds its open connections.
func newPool(db *sql.DB, size int) *pool {
	if size > 0 {
		db.SetMaxOpenConns(size)
	}
	p := &pool{DB: db}
	if testPoolSize() > 0 {
		p.wait = testConnWait
	}
	return p
}

// acquire takes a connection for one statement or transaction, waiting at
// most p.wait. The caller's ctx still governs the statement itself.
func (p *pool) acquire(ctx context.Context) (*sql.Conn, error) {
	wctx, cancel := context.WithTimeout(ctx, p.wait)
	defer cancel()
	c, err := p.DB.Conn(wctx)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		// Only under test: the stack of this goroutine is the bug report.
		panic(fmt.Sprintf("audit: no database connection within %s (pool of %d under %s=%s, %d in use): "+
			"a query on the pool while this goroutine (or one it waits for) holds a transaction? Query through the Tx",
			p.wait, p.Stats().MaxOpenConnections, EnvTestPool, os.Getenv(EnvTestPool), p.Stats().InUse))
	}
	return c, err
}

// release gives c back to the pool once the statement or transaction
// begun on it has finished: sql.Conn.Close waits for open rows and
// transactions, so it runs on its own goroutine.
func release(c *sql.Conn) { go c.Close() }

func (p *pool) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	if p.wait == 0 {
		return p.DB.BeginTx(ctx, opts)
	}
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release(c)
	return c.BeginTx(ctx, opts)
}

func (p *pool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if p.wait == 0 {
		return p.DB.ExecContext(ctx, query, args...)
	}
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release(c)
	return c.ExecContext(ctx, query, args...)
}

func (p *pool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if p.wait == 0 {
		return p.DB.QueryContext(ctx, query, args...) //nolint:sqlclosecheck // the caller closes the rows
	}
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release(c)
	return c.QueryContext(ctx, query, args...) //nolint:sqlclosecheck // the caller closes the rows
}

func (p *pool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if p.wait == 0 {
		return p.DB.QueryRowContext(ctx, query, args...)
	}
	c, err := p.acquire(ctx)
	if err != nil {
		// ctx ended while waiting: the Row carries ctx's error.
		return p.DB.QueryRowContext(ctx, query, args...)
	}
	defer release(c)
	return c.QueryRowContext(ctx, query, args...)
}
