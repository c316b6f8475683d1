package daemon

import (
	"context"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
)

// idleGate lets a polling loop skip a query whose answer cannot have
// changed: the last one found nothing at all to do (not even something
// waiting for a time to pass) and no process has committed to the store
// since. On a store without marks (PostgreSQL) it never skips.
//
// An idle daemon polled SQLite from two workers every 2 s, the lease sweep
// every 30 s and the dispatcher every minute; each poll ran the SQLite
// engine and brought about 8 MB of the executable back into memory right
// after the idle trim gave it back.
type idleGate struct {
	mark  func() (audit.ChangeMark, bool)
	quiet bool
	at    audit.ChangeMark
}

func newIdleGate(store *audit.Store) *idleGate {
	if store == nil {
		return &idleGate{}
	}
	return &idleGate{mark: store.ChangeMark}
}

// poll runs query unless it may be skipped; query returns whether it
// found nothing at all to do. The mark is taken before query, so a commit
// made while it runs is seen at the next poll.
func (g *idleGate) poll(query func() (quiet bool)) {
	if g.mark == nil {
		query()
		return
	}
	m, ok := g.mark()
	if ok && g.quiet && m == g.at {
		return
	}
	g.quiet = query() && ok
	g.at = m
}

// force runs query whatever the last answer was, and remembers this one.
func (g *idleGate) force(query func() (quiet bool)) {
	if g.mark == nil {
		query()
		return
	}
	m, ok := g.mark()
	g.quiet = query() && ok
	g.at = m
}

// quietWhen adapts a store check (QueueEmpty, NoneRunning,
// NoDispatchPending) to poll's answer: a failed check is not quiet.
func quietWhen(ctx context.Context, check func(context.Context) (bool, error)) bool {
	empty, err := check(ctx)
	return err == nil && empty
}

// quietDispatches lets the dispatcher sleep through its safety-net
// wake-ups while nothing is pending and nobody commits.
func quietDispatches(store *audit.Store) *delivery.QuietCheck {
	if store == nil {
		return nil
	}
	return &delivery.QuietCheck{
		Mark: func() (any, bool) {
			m, ok := store.ChangeMark()
			return m, ok
		},
		NonePending: store.NoDispatchPending,
	}
}
