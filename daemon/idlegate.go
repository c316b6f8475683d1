package daemon

import (
	"context"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/internal/idlegate"
)

// An idle daemon polled SQLite from two workers every 2 s, the lease sweep
// every 30 s and the dispatcher and the sources sweep every minute; each
// poll ran the SQLite engine and brought about 8 MB of the executable back
// into memory right after the idle trim gave it back. Each loop now polls
// through an idlegate.Gate over the store's change mark.

// newIdleGate is a gate over store's change mark (none on PostgreSQL).
func newIdleGate(store *audit.Store) *idlegate.Gate {
	return idlegate.New(storeMark(store))
}

// storeMark is store.ChangeMark as the gates take it; nil without marks.
func storeMark(store *audit.Store) func() (any, bool) {
	if store == nil || store.Backend() != audit.BackendSQLite {
		return nil
	}
	return func() (any, bool) {
		m, ok := store.ChangeMark()
		return m, ok
	}
}

// quietWhen adapts a store check (QueueEmpty, NoneRunning,
// NoDispatchPending) to a poll's answer: a failed check is not quiet.
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
	return &delivery.QuietCheck{Mark: storeMark(store), NonePending: store.NoDispatchPending}
}
