package audit

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// maxBatch bounds how many enqueues share one transaction, so one slow
// batch does not hold the write lock for long.
const maxBatch = 128

// enqueueBatcher is group commit for Enqueue. Every accepted event must be
// fsynced before the intake answers 202 (synchronous=FULL), and an fsync
// costs milliseconds; one writer goroutine therefore takes every request
// waiting when it becomes free, runs them in one transaction (each in its
// own savepoint, so one bad request fails alone) and commits once. No
// timer: while one batch commits, the next one gathers, so a lone request
// is never delayed and a burst shares fsyncs.
type enqueueBatcher struct {
	db *sql.DB

	start    sync.Once
	stopOnce sync.Once
	reqs     chan *pendingEnqueue
	quit     chan struct{}
	done     chan struct{}
}

type pendingEnqueue struct {
	ctx  context.Context
	req  enqueueReq
	res  Enqueued
	err  error
	done chan struct{}
}

func newEnqueueBatcher(db *sql.DB) *enqueueBatcher {
	return &enqueueBatcher{db: db, reqs: make(chan *pendingEnqueue), quit: make(chan struct{}), done: make(chan struct{})}
}

func (b *enqueueBatcher) submit(ctx context.Context, r enqueueReq) (Enqueued, error) {
	b.start.Do(func() { go b.loop() })
	p := &pendingEnqueue{ctx: ctx, req: r, done: make(chan struct{})}
	select {
	case b.reqs <- p:
	case <-ctx.Done():
		return Enqueued{}, fmt.Errorf("enqueue: %w", ctx.Err())
	case <-b.quit:
		return Enqueued{}, fmt.Errorf("enqueue: store closed")
	}
	// Once handed over, wait for the outcome even if ctx ends: the
	// caller must not answer before knowing whether the event is stored.
	<-p.done
	return p.res, p.err
}

func (b *enqueueBatcher) loop() {
	defer close(b.done)
	for {
		var batch []*pendingEnqueue
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

func (b *enqueueBatcher) commit(batch []*pendingEnqueue) {
	finish := func(err error) {
		for _, p := range batch {
			if err != nil && p.err == nil {
				p.err, p.res = err, Enqueued{}
			}
			close(p.done)
		}
	}
	ctx := context.Background()
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		finish(fmt.Errorf("enqueue: begin: %w", err))
		return
	}
	defer tx.Rollback()
	for i, p := range batch {
		if p.ctx.Err() != nil {
			p.err = fmt.Errorf("enqueue: %w", p.ctx.Err())
			continue
		}
		sp := fmt.Sprintf("enqueue_%d", i)
		if _, err := tx.ExecContext(ctx, "SAVEPOINT "+sp); err != nil {
			finish(fmt.Errorf("enqueue: savepoint: %w", err))
			return
		}
		p.res, p.err = enqueueTx(ctx, tx, p.req)
		if p.err != nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO "+sp); err != nil {
				finish(fmt.Errorf("enqueue: rollback to savepoint: %w", err))
				return
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE "+sp); err != nil {
			finish(fmt.Errorf("enqueue: release savepoint: %w", err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		finish(fmt.Errorf("enqueue: commit: %w", err))
		return
	}
	finish(nil)
}

// stop ends the writer goroutine, if it was started.
func (b *enqueueBatcher) stop() {
	b.stopOnce.Do(func() {
		close(b.quit)
		started := true
		b.start.Do(func() { started = false })
		if started {
			<-b.done
		}
	})
}
