package svn

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/aicr-dev/aicr/vcs"
)

var _ vcs.TreeReader = (*Adapter)(nil)

// List implements vcs.TreeReader: `svn list --xml URL/dir@rev`, or
// `svnlook tree --non-recursive -r rev repo /path/dir` with local access.
func (a *Adapter) List(ctx context.Context, dir, rev string) ([]string, error) {
	r, err := parseRev(rev)
	if err != nil {
		return nil, err
	}
	if dir != "" {
		if err := checkScopedPath(dir); err != nil {
			return nil, err
		}
	}
	info, err := a.info(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	if a.access == AccessSvnlook {
		names, err = a.lookList(ctx, info, dir, r)
	} else {
		names, err = a.clientList(ctx, info, dir, r)
	}
	switch {
	case svnSays(err, "W160013"), svnSays(err, "E160013"), svnSays(err, "E200009"):
		return nil, fmt.Errorf("%s at r%d: %w", dirName(dir), r, vcs.ErrNoSuchPath)
	case svnSays(err, "E160006"):
		return nil, fmt.Errorf("%w: r%d", vcs.ErrNoSuchRevision, r)
	case err != nil:
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

func dirName(dir string) string {
	if dir == "" {
		return "the reviewed root"
	}
	return dir
}

func (a *Adapter) clientList(ctx context.Context, info *repoInfo, dir string, rev int64) ([]string, error) {
	target := pegURL(info.url, rev)
	if dir != "" {
		target = fileURL(info.url, dir, rev)
	}
	out, err := a.output(ctx, "list", "--xml", target)
	if err != nil {
		return nil, err
	}
	var x struct {
		Entries []struct {
			Kind string `xml:"kind,attr"`
			Name string `xml:"name"`
		} `xml:"list>entry"`
	}
	if err := xml.Unmarshal(out, &x); err != nil {
		return nil, fmt.Errorf("svn list: parse xml: %w", err)
	}
	// Listing a file lists the file itself.
	if len(x.Entries) == 1 && x.Entries[0].Kind == "file" && dir != "" && x.Entries[0].Name == path.Base(dir) {
		return nil, fmt.Errorf("%s is a file at r%d: %w", dir, rev, vcs.ErrNoSuchPath)
	}
	names := make([]string, 0, len(x.Entries))
	for _, e := range x.Entries {
		if e.Kind == "dir" {
			e.Name += "/"
		}
		names = append(names, e.Name)
	}
	return names, nil
}

// lookList reads `svnlook tree --non-recursive`: the directory's own name
// on the first line, then one entry per line indented by one space,
// directories with a trailing "/". A file prints only its own name.
func (a *Adapter) lookList(ctx context.Context, info *repoInfo, dir string, rev int64) ([]string, error) {
	p := info.path + "/"
	if dir != "" {
		p = info.repoPath(dir)
	}
	var out bytes.Buffer
	if err := a.look(ctx, &out, "tree", rev, "--non-recursive", p); err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) == 0 || !strings.HasSuffix(lines[0], "/") {
		return nil, fmt.Errorf("%s is a file at r%d: %w", dirName(dir), rev, vcs.ErrNoSuchPath)
	}
	var names []string
	for _, l := range lines[1:] {
		if name, ok := strings.CutPrefix(l, " "); ok && name != "" {
			names = append(names, name)
		}
	}
	return names, nil
}

// IsSymlink implements vcs.TreeReader: Subversion keeps a symlink as a
// file whose svn:special property is set, so it is `svn propget
// svn:special` (svnlook propget with local access); "not found" is a
// regular file.
func (a *Adapter) IsSymlink(ctx context.Context, p, rev string) (bool, error) {
	r, err := parseRev(rev)
	if err != nil {
		return false, err
	}
	if err := checkScopedPath(p); err != nil {
		return false, err
	}
	info, err := a.info(ctx)
	if err != nil {
		return false, err
	}
	if a.access == AccessSvnlook {
		err = a.look(ctx, io.Discard, "propget", r, "svn:special", info.repoPath(p))
	} else {
		_, err = a.output(ctx, "propget", "svn:special", fileURL(info.url, p, r))
	}
	switch {
	case err == nil:
		return true, nil
	case svnSays(err, "W200017"), svnSays(err, "E200017"):
		return false, nil
	case svnSays(err, "W160013"), svnSays(err, "E160013"):
		return false, fmt.Errorf("%s at r%d: %w", p, r, vcs.ErrNoSuchPath)
	}
	return false, err
}
