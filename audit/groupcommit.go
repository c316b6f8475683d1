package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// maxBatch bounds how many writes share one transaction, so one slow
// batch does not hold the write lock for long.
const maxBatch = 256

// writeOp is one caller's work inside a group-committed transaction. It
// runs in its own savepoint: an error rolls back only its own writes.
type writeOp func(ctx context.Context, tx *sql.Tx) error

// groupCommitter is group commit for the intake's writes (Accept,
// Enqueue, SeenSignature). Every accepted event must be fsynced before the
// intake answers 202 (synchronous=FULL), and an fsync costs milliseconds;
// one writer goroutine therefore takes every request waiting when it
// becomes free, runs them in one transaction (each in its own savepoint,
// so one bad request fails alone) and commits once. No timer: while one
// batch commits, the next one gathers, so a lone request is never delayed
// and a burst shares fsyncs.
type groupCommitter struct {
	db    *pool
	stmts *hotStmts

	start    sync.Once
	stopOnce sync.Once
	reqs     chan *pendingOp
	quit     chan struct{}
	done     chan struct{}

	// submitted and commits count ops handed in and transactions
	// committed; their ratio is the sharing the group commit achieves.
	submitted, commits atomic.Int64
}

type pendingOp struct {
	ctx  context.Context
	op   writeOp
	err  error
	done chan struct{}
}

// errReadOnly: a write through a Store from OpenReadOnly.
var errReadOnly = errors.New("the store was opened read-only")

func newGroupCommitter(db *pool, stmts *hotStmts) *groupCommitter {
	return &groupCommitter{db: db, stmts: stmts, reqs: make(chan *pendingOp), quit: make(chan struct{}), done: make(chan struct{})}
}

// submit runs op in the next batch and returns once that batch has
// committed (or op failed).
func (b *groupCommitter) submit(ctx context.Context, op writeOp) error {
	if b.stmts == nil {
		return errReadOnly
	}
	b.start.Do(func() { go b.loop() })
	p := &pendingOp{ctx: ctx, op: op, done: make(chan struct{})}
	b.submitted.Add(1)
	select {
	case b.reqs <- p:
	case <-ctx.Done():
		return ctx.Err()
	case <-b.quit:
		return fmt.Errorf("store closed")
	}
	// Once handed over, wait for the outcome even if ctx ends: the
	// caller must not answer before knowing whether its write is stored.
	<-p.done
	return p.err
}

func (b *groupCommitter) loop() {
	defer close(b.done)
	for {
		var batch []*pendingOp
		select {
		case p := <-b.reqs:
			batch = append(batch, p)
		case <-b.quit:
			return
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case p := <-b.reqs:
				batch = append(batch, p)
			default:
				break gather
			}
		}
		b.commit(batch)
	}
}

// commit runs one batch in one transaction.
//
//nolint:contextcheck // the batch is many callers' writes: one caller's context ending must not roll back the others' (each op is skipped if its own context has ended)
func (b *groupCommitter) commit(batch []*pendingOp) {
	finish := func(err error) {
		for _, p := range batch {
			if err != nil && p.err == nil {
				p.err = err
			}
			close(p.done)
		}
	}
	ctx := context.Background()
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		finish(fmt.Errorf("begin: %w", err))
		return
	}
	defer tx.Rollback()
	// One savepoint name serves every op: each is released (or rolled
	// back and released) before the next opens, so the statements stay
	// constant and prepared.
	savepoint, rollbackTo, release := b.stmts.in(ctx, tx, b.stmts.savepoint), b.stmts.in(ctx, tx, b.stmts.rollbackTo), b.stmts.in(ctx, tx, b.stmts.release) //nolint:sqlclosecheck // bound to tx by hotStmts.in: closed with the tx; the prepared statement lives with the store
	for _, p := range batch {
		if p.ctx.Err() != nil {
			p.err = p.ctx.Err()
			continue
		}
		if _, err := savepoint.ExecContext(ctx); err != nil {
			finish(fmt.Errorf("savepoint: %w", err))
			return
		}
		p.err = p.op(ctx, tx)
		if p.err != nil {
			if _, err := rollbackTo.ExecContext(ctx); err != nil {
				finish(fmt.Errorf("rollback to savepoint: %w", err))
				return
			}
		}
		if _, err := release.ExecContext(ctx); err != nil {
			finish(fmt.Errorf("release savepoint: %w", err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		finish(fmt.Errorf("commit: %w", err))
		return
	}
	b.commits.Add(1)
	finish(nil)
}

// stop ends the writer goroutine, if it was started.
func (b *groupCommitter) stop() {
	b.stopOnce.Do(func() {
		close(b.quit)
		started := true
		b.start.Do(func() { started = false })
		if started {
			<-b.done
		}
	})
}
