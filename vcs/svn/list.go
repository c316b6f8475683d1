package svn

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"

	"github.com/aicr-dev/aicr/vcs"
)

// Head implements vcs.Lister: the repository's youngest revision
// (`svnlook youngest` or `svn info --show-item revision`). Subversion
// numbers revisions repository-wide, so this is where a reconciler that
// starts without backfill begins.
func (a *Adapter) Head(ctx context.Context) (string, error) {
	n, err := a.Youngest(ctx)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(n, 10), nil
}

// ErrNoSVNClient is returned by operations that need the svn client
// (listing, blame) when only svnlook is installed.
var ErrNoSVNClient = errors.New("svn client not installed (needed for log and blame; apt-get install subversion, or set svn_path)")

// ChangesAfter implements vcs.Lister: revisions after `after` that touched
// the reviewed directory, oldest first, at most limit. It is one
// `svn log -q --xml --stop-on-copy -r A:HEAD --limit N URL@HEAD`; with
// svnlook access the URL is file://local_path, since svnlook cannot list
// history forwards.
func (a *Adapter) ChangesAfter(ctx context.Context, after string, limit int) ([]string, error) {
	from, err := strconv.ParseInt(after, 10, 64)
	if err != nil || from < 0 {
		return nil, fmt.Errorf("%w: %q is not an svn revision number", vcs.ErrBadRevision, after)
	}
	if limit <= 0 {
		return nil, nil
	}
	if a.svn == "" {
		return nil, ErrNoSVNClient
	}
	info, err := a.info(ctx)
	if err != nil {
		return nil, err
	}
	head, err := a.Youngest(ctx)
	if err != nil {
		return nil, err
	}
	if from >= head {
		return nil, nil
	}
	out, err := a.output(ctx, "log", "-q", "--xml", "--stop-on-copy", "--limit", strconv.Itoa(limit),
		"-r", strconv.FormatInt(from+1, 10)+":"+strconv.FormatInt(head, 10), pegURL(info.url, head))
	if err != nil {
		return nil, err
	}
	var x struct {
		Entries []struct {
			Revision string `xml:"revision,attr"`
		} `xml:"logentry"`
	}
	if err := xml.Unmarshal(out, &x); err != nil {
		return nil, fmt.Errorf("svn log: parse xml: %w", err)
	}
	revs := make([]string, 0, len(x.Entries))
	for _, e := range x.Entries {
		revs = append(revs, e.Revision)
	}
	return revs, nil
}
