package p4

import (
	"context"
	"fmt"

	"github.com/aicr-dev/aicr/vcs"
)

// FetchShelf reads the shelved files of pending change rev into dst, as
// Fetch reads a submitted one: `p4 describe -S -s` (metadata), `p4
// describe -S -du` (diffs against the revisions the files were opened
// at) and `p4 print //...@=N` (the shelved content). Review sessions
// (p4-shelf:<change>) and the shelve-commit trigger use it.
func (a *Adapter) FetchShelf(ctx context.Context, rev string, dst vcs.Dest) (*vcs.Change, error) {
	return a.fetch(ctx, rev, dst, true)
}

// checkStatus refuses a change Fetch (submitted) or FetchShelf (pending
// with shelved files) cannot read.
func checkStatus(d Record, n int, shelf bool) error {
	st := d.Get("status")
	switch {
	case !shelf && st != "submitted":
		return fmt.Errorf("%w: change %d is %s, not submitted", vcs.ErrNoSuchRevision, n, st)
	case shelf && st != "pending":
		return fmt.Errorf("%w: change %d is %s: only a pending change has shelved files (review it as p4-change:%d)", vcs.ErrNoSuchRevision, n, st, n)
	case shelf && !d.Has("depotFile0"):
		return fmt.Errorf("%w: change %d has no shelved files (p4 shelve -c %d first)", vcs.ErrNoSuchRevision, n, n)
	}
	return nil
}
