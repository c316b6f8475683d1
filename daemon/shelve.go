package daemon

import (
	"context"
	"fmt"

	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// Shelved Perforce changes (issue 16): the shelve-commit trigger sends
// an event of kind shelve; the intake queues it under
// triggers.ShelfRevision, the pipeline fetches the shelf, and the review
// goes to the repo's shelve_channels.

// checkShelveEvent refuses event kinds the daemon does not know and
// shelves of anything but a p4 repo, and gives a shelve its run revision.
func checkShelveEvent(ev *triggers.Event) (code, msg string) {
	switch ev.Kind {
	case "":
		return "", ""
	case triggers.KindShelve:
		if ev.VCS != string(vcs.KindP4) {
			return "invalid_event", fmt.Sprintf("event kind %q is for p4 repos; repo %q is %s", ev.Kind, ev.Repo, ev.VCS)
		}
		if ev.SentAt.IsZero() {
			return "invalid_event", "a shelve event needs sent_at (it tells one shelving of the change from the next)"
		}
		ev.Revision = triggers.ShelfRevision(ev.Revision, ev.SentAt)
		return "", ""
	}
	return "invalid_event", fmt.Sprintf("unknown event kind %q (this daemon knows %q and the empty kind of a commit)", ev.Kind, triggers.KindShelve)
}

// shelfFetcher is the p4 adapter's reader of shelved changes.
type shelfFetcher interface {
	FetchShelf(ctx context.Context, change string, dst vcs.Dest) (*vcs.Change, error)
}

func fetchShelf(ctx context.Context, ad vcs.Adapter, repo, change string, dst vcs.Dest) (*vcs.Change, error) {
	sf, ok := ad.(shelfFetcher)
	if !ok {
		return nil, fmt.Errorf("%w: repo %q cannot read shelved changes", errPermanent, repo)
	}
	c, err := sf.FetchShelf(ctx, change, dst)
	if err != nil {
		return nil, err
	}
	// Said by the flag, not by a sentence in front of the description: a
	// report would show the sentence as the subject and drop the author's.
	c.Shelved = true
	return c, nil
}

// reviewedRevision is the revision the agent's context and blame
// requests read: a shelf's change number (the depot as of it; the
// shelved files themselves are in the run directory).
func reviewedRevision(rev string) string {
	if change, ok := triggers.ParseShelfRevision(rev); ok {
		return change
	}
	return rev
}
