package session

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// maxPatchBytes bounds a patch target: a review of more is not useful
// and the patch is read whole.
const maxPatchBytes = 16 << 20

// fetchPatch reads a unified diff (svn diff, diff -u, git diff) into
// layout. A patch carries only the lines its hunks show, so each file's
// src/ copy holds those lines at their new-file numbers and blank lines
// elsewhere: anchors and line-based checks work, and the description says
// the rest of the file is not known.
func fetchPatch(path string, layout rundir.Layout) (*vcs.Change, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read patch: %w", err)
	}
	if fi.Size() > maxPatchBytes {
		return nil, fmt.Errorf("patch %s is %d bytes, over the %d-byte limit of a session target", path, fi.Size(), maxPatchBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read patch: %w", err)
	}
	parsed, err := vcs.ParseDiff(stripGitPrefixes(data))
	if err != nil {
		return nil, fmt.Errorf("patch %s: %w", path, err)
	}
	if len(parsed) == 0 {
		return nil, fmt.Errorf("patch %s holds no file diff: give a unified diff (svn diff, diff -u, git diff)", path)
	}
	data = stripGitPrefixes(data)
	if err := os.WriteFile(layout.DiffPath(), data, 0o640); err != nil {
		return nil, fmt.Errorf("write diff: %w", err)
	}
	paths := make([]string, 0, len(parsed))
	for p := range parsed {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	change := &vcs.Change{Revision: "patch", Description: fmt.Sprintf("The patch %s (not committed). Only the lines its hunks show are known; the rest of each file is blank in the workspace.", path)}
	for _, p := range paths {
		d := parsed[p]
		f := vcs.FileChange{Path: p, Action: vcs.ActionModify, NodeKind: vcs.NodeFile, Added: d.Added, Hunks: d.Hunks}
		switch {
		case d.Deleted:
			f.Action, f.Skipped = vcs.ActionDelete, vcs.SkipDeleted
		case d.Binary:
			f.Binary, f.Skipped = true, vcs.SkipBinary
		default:
			if err := writeHunkLines(layout, p, data[d.Start:d.End]); err != nil {
				f.Skipped = err.Error()
			}
		}
		change.Files = append(change.Files, f)
	}
	return change, nil
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

// writeHunkLines writes the new-side lines of one file's section of a
// patch at their line numbers.
func writeHunkLines(layout rundir.Layout, path string, section []byte) error {
	lines := map[int]string{}
	last := 0
	next, left := 0, 0
	for _, l := range strings.Split(string(section), "\n") {
		if left == 0 {
			if m := hunkHeader.FindStringSubmatch(l); m != nil {
				next, _ = strconv.Atoi(m[1])
				left = 1
				if m[2] != "" {
					left, _ = strconv.Atoi(m[2])
				}
			}
			continue
		}
		if l == "" || l[0] == '\\' || l[0] == '-' {
			continue
		}
		if l[0] == '+' || l[0] == ' ' {
			lines[next] = l[1:]
			last = max(last, next)
			next++
			left--
		}
	}
	var b strings.Builder
	for n := 1; n <= last; n++ {
		b.WriteString(lines[n])
		b.WriteByte('\n')
	}
	dst, err := layout.SrcPath(path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return err
	}
	return os.WriteFile(dst, []byte(b.String()), 0o640)
}

var gitHeader = regexp.MustCompile(`(?m)^(---|\+\+\+) (a|b)/`)

// stripGitPrefixes turns git's "a/" and "b/" header prefixes into plain
// paths, so a `git diff` names the files as the repository does.
func stripGitPrefixes(data []byte) []byte {
	if !strings.Contains(string(data), "\ndiff --git ") && !strings.HasPrefix(string(data), "diff --git ") {
		return data
	}
	return gitHeader.ReplaceAll(data, []byte("$1 "))
}
