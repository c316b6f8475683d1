package svn

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs"
)

// diff writes the revision's diff under the reviewed directory to path in
// `svn diff` format with directory-relative paths, keeping only the
// sections of listed, in-scope files, and returns the parsed diff. The
// diff is streamed to disk and parsed from there, so a huge file's diff is
// never held in memory.
//
// When the dump found a file over MaxFileBytes, only the files to review
// are diffed, by name (see diffTargets), so the large one never reaches
// Subversion's diff.
func (a *Adapter) diff(ctx context.Context, info *repoInfo, rev int64, c *vcs.Change, dumped map[string]*dumpedFile, path string) (map[string]vcs.FileDiff, error) {
	targets, named := a.diffTargets(c, dumped)
	if len(c.Files) == 0 || named && len(targets) == 0 {
		// Nothing under the directory changed; svn diff could even fail if
		// it did not exist before rev.
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			return nil, fmt.Errorf("write diff: %w", err)
		}
		return map[string]vcs.FileDiff{}, nil
	}
	out, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("write diff: %w", err)
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	// --no-diff-added: Subversion's diff of an added text file against
	// nothing takes minutes for tens of megabytes (5 min for 50 MB here),
	// and says no more than "every line is new". Added files (copies too:
	// both tools diff a copy as an add) get their sections and line maps
	// from the content fetched anyway; see added.go.
	switch {
	case named:
		err = a.diffNamed(ctx, info, rev, targets, bw)
	case a.access == AccessSvnlook:
		err = a.lookDiff(ctx, info, rev, bw)
	default:
		// --internal-diff: a diff-cmd in an svn config must not change the
		// format we parse.
		err = a.run(ctx, bw, "diff", "--internal-diff", "--no-diff-added", "-c", strconv.FormatInt(rev, 10), pegURL(info.url, rev))
	}
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write diff: %w", ferr)
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write diff: %w", cerr)
	}
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read diff: %w", err)
	}
	diffs, err := vcs.ParseDiffReader(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("parse diff: %w", err)
	}
	if err := keepSections(path, diffs, c, a.filter); err != nil {
		return nil, err
	}
	return diffs, nil
}

// keepSections rewrites the patch at path without the sections of files
// that are out of scope or not listed in the change. Files under a listed
// deleted directory stay, so reviewers can see what went away. Added files
// whose lines come from their content lose what the diff printed for them
// (svn's "Index: P (added)" stub is unlisted anyway; svnlook prints their
// property changes): appendAdded writes their one section later.
func keepSections(path string, diffs map[string]vcs.FileDiff, c *vcs.Change, filter vcs.Filter) error {
	listed := map[string]bool{}
	var deletedDirs []string
	for _, f := range c.Files {
		if f.Action == vcs.ActionAdd && linesFromContent(f, diffs) {
			continue
		}
		listed[f.Path] = true
		if f.Action == vcs.ActionDelete || f.Action == vcs.ActionReplace {
			deletedDirs = append(deletedDirs, f.Path+"/")
		}
	}
	keep := func(p string) bool {
		if !filter.Match(p) {
			return false
		}
		if listed[p] {
			return true
		}
		for _, d := range deletedDirs {
			if strings.HasPrefix(p, d) && diffs[p].Deleted {
				return true
			}
		}
		return false
	}
	var sections []vcs.FileDiff
	for _, d := range diffs {
		sections = append(sections, d)
	}
	sort.Slice(sections, func(i, j int) bool { return sections[i].Start < sections[j].Start })
	prev, all := 0, true
	for _, d := range sections {
		if d.Start < prev {
			// Overlapping sections only come from odd diffs; keep it all
			// rather than cut one in half.
			return nil
		}
		prev = d.End
		all = all && keep(d.Path)
	}
	if all && len(sections) > 0 && sections[0].Start == 0 {
		if st, err := os.Stat(path); err == nil && st.Size() == int64(prev) {
			return nil
		}
	}
	in, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read diff: %w", err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".diff-*")
	if err != nil {
		return fmt.Errorf("write diff: %w", err)
	}
	defer os.Remove(tmp.Name())
	for _, d := range sections {
		if !keep(d.Path) {
			continue
		}
		if _, err := io.Copy(tmp, io.NewSectionReader(in, int64(d.Start), int64(d.End-d.Start))); err != nil {
			tmp.Close()
			return fmt.Errorf("write diff: %w", err)
		}
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write diff: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write diff: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write diff: %w", err)
	}
	return nil
}
