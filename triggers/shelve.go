package triggers

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// KindShelve is Event.Kind of a Perforce shelve-commit trigger: the
// change is a pending change whose files were just shelved, reviewed
// before it is submitted. The empty Kind is a commit (submit).
const KindShelve = "shelve"

// shelfPrefix starts the run revision of a shelf review.
const shelfPrefix = "shelf-"

// ShelfRevision is the revision a shelve event is queued under:
// "shelf-<change>-<sent_at in ms>". The shelving time keeps every
// re-shelve of a change its own review (the developer shelved again after
// fixing), while a spooled re-send of the same event, signed with the
// same body, is still a duplicate; and no shelf can be taken for the
// submitted change that may later get the same number.
func ShelfRevision(change string, sentAt time.Time) string {
	return fmt.Sprintf("%s%s-%d", shelfPrefix, change, sentAt.UnixMilli())
}

// ParseShelfRevision returns the change number of a ShelfRevision.
func ParseShelfRevision(rev string) (change string, ok bool) {
	rest, ok := strings.CutPrefix(rev, shelfPrefix)
	if !ok {
		return "", false
	}
	change, ms, ok := strings.Cut(rest, "-")
	if !ok {
		return "", false
	}
	if _, err := strconv.ParseInt(ms, 10, 64); err != nil {
		return "", false
	}
	if c, err := CanonicalRevision(change); err != nil || c != change {
		return "", false
	}
	return change, true
}
