package svn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs"
)

// This file reads a repository on this host with svnlook (access =
// "svnlook") and turns what it prints into what the svn client would
// print, so both modes yield the same Change and the same diff.patch.

// lookMeta reads the revision's properties and changed paths: two
// svnlook processes whatever the number of files.
func (a *Adapter) lookMeta(ctx context.Context, info *repoInfo, rev int64) (*vcs.Change, error) {
	c := &vcs.Change{VCS: vcs.KindSVN, Revision: strconv.FormatInt(rev, 10)}
	var props bytes.Buffer
	err := a.look(ctx, &props, "proplist", rev, "--revprop", "--xml", "-v")
	if svnSays(err, "E160006") {
		return nil, a.noSuchRevision(ctx, rev)
	}
	if err != nil {
		return nil, err
	}
	if err := setRevProps(c, props.Bytes()); err != nil {
		return nil, err
	}
	var changed bytes.Buffer
	if err := a.look(ctx, &changed, "changed", rev, "--copy-info"); err != nil {
		return nil, err
	}
	files, err := parseChanged(changed.Bytes(), info)
	if err != nil {
		return nil, err
	}
	c.Files = files
	return c, nil
}

// parseChanged reads `svnlook changed --copy-info`:
//
//	A   trunk/a.c
//	A + trunk/b.c
//	    (from trunk/a.c:r2)
//	_U  trunk/dir/
//
// Column 1 is the action (A, D, U, R, or _ for properties only), column 3
// '+' for a copy; directories end in '/'. svnlook prints a replaced path
// as a D line and an A line, which svn log shows as one R.
func parseChanged(out []byte, info *repoInfo) ([]vcs.FileChange, error) {
	byPath := map[string]*vcs.FileChange{}
	var order []string
	var last *vcs.FileChange
	for _, ln := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if ln == "" {
			continue
		}
		if from, ok := strings.CutPrefix(ln, "    (from "); ok {
			from = strings.TrimSuffix(from, ")")
			i := strings.LastIndex(from, ":r")
			if i < 0 {
				return nil, fmt.Errorf("svnlook changed: unexpected line %q", ln)
			}
			if last == nil {
				continue // the copy of a path outside the reviewed directory
			}
			p := "/" + strings.TrimSuffix(from[:i], "/")
			last.CopyFromPath, last.CopyFromRev = p, from[i+2:]
			if rel, ok := info.relPath(p); ok {
				last.CopyFromPath = rel
			}
			continue
		}
		if len(ln) < 5 || ln[3] != ' ' {
			return nil, fmt.Errorf("svnlook changed: unexpected line %q", ln)
		}
		last = nil
		p := ln[4:]
		kind := vcs.NodeFile
		if strings.HasSuffix(p, "/") {
			kind = vcs.NodeDir
			p = strings.TrimSuffix(p, "/")
		}
		rel, ok := info.relPath("/" + p)
		if !ok {
			continue
		}
		if err := checkRelPath(rel); err != nil {
			return nil, fmt.Errorf("svnlook changed: %w", err)
		}
		act := action(string(ln[0]))
		if prev, seen := byPath[rel]; seen {
			if prev.Action == vcs.ActionDelete && act == vcs.ActionAdd {
				prev.Action, prev.NodeKind = vcs.ActionReplace, kind
				last = prev
			}
			continue
		}
		f := &vcs.FileChange{Path: rel, Action: act, NodeKind: kind}
		byPath[rel] = f
		order = append(order, rel)
		last = f
	}
	sort.Strings(order)
	var files []vcs.FileChange
	for _, p := range order {
		files = append(files, *byPath[p])
	}
	return files, nil
}

// lookDiff streams `svnlook diff --no-diff-added` (see Adapter.diff)
// through normalizeLookDiff into w.
func (a *Adapter) lookDiff(ctx context.Context, info *repoInfo, rev int64, w io.Writer) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := normalizeLookDiff(pr, w, info)
		// Unblock svnlook if we stopped reading early.
		pr.CloseWithError(errors.Join(err, io.ErrClosedPipe))
		done <- err
	}()
	err := a.look(ctx, pw, "diff", rev, "--no-diff-added")
	pw.CloseWithError(err)
	if nerr := <-done; nerr != nil && err == nil {
		err = nerr
	}
	return err
}

// normalizeLookDiff rewrites svnlook's diff into svn's format:
//
//	Modified: trunk/a.c                          Index: a.c
//	Added: / Deleted: / Copied: P (from ...)  →  Index: a.c
//	--- trunk/a.c	2024-... UTC (rev 2)         --- a.c	(revision 2)
//	--- trunk/a.c	                (rev 0)      --- a.c	(nonexistent)
//	(Binary files differ)                        Cannot display: file marked as a binary type.
//	Property changes on: trunk/a.c               Property changes on: a.c
//
// Paths become relative to the reviewed directory and sections outside it
// are dropped (svnlook diffs the whole repository). Hunks are copied by
// their declared line counts, so content that looks like a header is
// never rewritten; lines are streamed, never held whole.
func normalizeLookDiff(r io.Reader, w io.Writer, info *repoInfo) error {
	n := &lookDiffNormalizer{br: bufio.NewReaderSize(r, 64<<10), w: w, info: info, keep: true}
	for {
		b, full, ok, err := n.readLine()
		if err != nil {
			return fmt.Errorf("read svnlook diff: %w", err)
		}
		if !ok {
			return nil
		}
		if n.oldLeft > 0 || n.newLeft > 0 {
			if err := n.hunkLine(b, full); err != nil {
				return err
			}
			continue
		}
		if !full {
			// Only content lines can be this long.
			return fmt.Errorf("svnlook diff: line over %d bytes outside a hunk", n.br.Size())
		}
		if err := n.headerLine(b); err != nil {
			return err
		}
	}
}

// lookDiffNormalizer is normalizeLookDiff's state: where it is in the
// stream (inside a hunk, how many lines of it are left), whether the
// current section is inside the reviewed directory, and one peeked line.
type lookDiffNormalizer struct {
	br   *bufio.Reader
	w    io.Writer
	info *repoInfo

	keep             bool   // the current section is written out
	kind             string // Added, Deleted, Copied, Modified, Index
	oldLeft, newLeft int    // lines left in the current hunk

	pending            []byte // a peeked line
	pendingFull        bool
	pendingOK, hasPend bool
}

// readLine returns a line's first chunk (up to the buffer size), whether
// that chunk holds the whole line, and false at the end of the stream.
func (n *lookDiffNormalizer) readLine() ([]byte, bool, bool, error) {
	if n.hasPend {
		n.hasPend = false
		return n.pending, n.pendingFull, n.pendingOK, nil
	}
	b, err := n.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return append([]byte(nil), b...), false, true, nil
	case err == io.EOF:
		return append([]byte(nil), b...), true, len(b) > 0, nil
	case err != nil:
		return nil, false, false, err
	}
	return append([]byte(nil), b...), true, true, nil
}

// peek is the next line, left to be read again; nil at the end.
func (n *lookDiffNormalizer) peek() ([]byte, error) {
	if !n.hasPend {
		b, full, ok, err := n.readLine()
		if err != nil {
			return nil, err
		}
		n.pending, n.pendingFull, n.pendingOK, n.hasPend = b, full, ok, true
	}
	if !n.pendingOK {
		return nil, nil
	}
	return n.pending, nil
}

// write passes b on unless the current section is dropped.
func (n *lookDiffNormalizer) write(b []byte) error {
	if !n.keep {
		return nil
	}
	_, err := n.w.Write(b)
	return err
}

// copyRest streams the remainder of a line longer than the buffer.
func (n *lookDiffNormalizer) copyRest() error {
	for {
		b, err := n.br.ReadSlice('\n')
		if werr := n.write(b); werr != nil {
			return werr
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			return nil
		}
		return err
	}
}

func (n *lookDiffNormalizer) rel(p string) (string, bool) { return n.info.relPath("/" + p) }

// hunkLine copies a line inside a hunk verbatim, counting it off the
// hunk's declared lengths.
func (n *lookDiffNormalizer) hunkLine(b []byte, full bool) error {
	switch firstByte(b) {
	case ' ':
		n.oldLeft--
		n.newLeft--
	case '+':
		n.newLeft--
	case '-':
		n.oldLeft--
	}
	if err := n.write(b); err != nil {
		return err
	}
	if !full {
		return n.copyRest()
	}
	return nil
}

// headerLine rewrites a line between hunks: a section header, the file
// labels, a binary marker, a property section; a hunk header starts a
// hunk. Anything else is copied.
func (n *lookDiffNormalizer) headerLine(b []byte) error {
	text := strings.TrimRight(string(b), "\r\n")
	if name, head, ok := lookSectionHeader(text); ok {
		next, err := n.peek()
		if err != nil {
			return err
		}
		if strings.HasPrefix(string(next), "=====") {
			r, in := n.rel(name)
			n.keep, n.kind = in, head
			return n.write([]byte("Index: " + r + "\n"))
		}
	}
	switch {
	case strings.HasPrefix(text, "--- "):
		next, err := n.peek()
		if err != nil {
			return err
		}
		if strings.HasPrefix(string(next), "+++ ") {
			n.hasPend = false
			return n.fileLabels(text, string(next))
		}
	case text == "(Binary files differ)":
		return n.write([]byte("Cannot display: file marked as a binary type.\n"))
	case strings.HasPrefix(text, "Property changes on: "):
		r, in := n.rel(strings.TrimPrefix(text, "Property changes on: "))
		n.keep = in
		return n.write([]byte("Property changes on: " + r + "\n"))
	case strings.HasPrefix(text, "@@ -"), strings.HasPrefix(text, "## -"):
		var err error
		n.oldLeft, n.newLeft, err = hunkCounts(text)
		if err != nil {
			return fmt.Errorf("svnlook diff: %w", err)
		}
	}
	return n.write(b)
}

// fileLabels rewrites svnlook's ---/+++ pair into svn's: relative paths,
// "(revision N)", or "(nonexistent)" for the side an add or delete lacks.
func (n *lookDiffNormalizer) fileLabels(oldLine, newLine string) error {
	oldName, oldRev := lookLabel(strings.TrimPrefix(oldLine, "--- "))
	newName, newRev := lookLabel(strings.TrimRight(strings.TrimPrefix(newLine, "+++ "), "\r\n"))
	oldSide, newSide := "(revision "+oldRev+")", "(revision "+newRev+")"
	switch n.kind {
	case "Added", "Copied":
		oldSide = "(nonexistent)"
	case "Deleted":
		newSide = "(nonexistent)"
	}
	or, _ := n.rel(oldName)
	nr, _ := n.rel(newName)
	return n.write([]byte("--- " + or + "\t" + oldSide + "\n+++ " + nr + "\t" + newSide + "\n"))
}

func firstByte(b []byte) byte {
	if len(b) == 0 || b[0] == '\n' || b[0] == '\r' {
		return ' ' // an empty line is a context line whose space was stripped
	}
	return b[0]
}

// lookSectionHeader recognises "Added: P", "Copied: P (from rev N, Q)"
// and the like; the caller confirms with the "=====" line that follows,
// since property names inside a property section look the same.
func lookSectionHeader(text string) (path, kind string, ok bool) {
	for _, k := range []string{"Added", "Deleted", "Modified", "Copied", "Index"} {
		if p, found := strings.CutPrefix(text, k+": "); found {
			if k == "Copied" {
				if i := strings.LastIndex(p, " (from rev "); i >= 0 {
					p = p[:i]
				}
			}
			return p, k, true
		}
	}
	return "", "", false
}

// lookLabel splits "trunk/a.c\t2024-01-01 00:00:00 UTC (rev 3)".
func lookLabel(label string) (name, rev string) {
	name, rest, _ := strings.Cut(label, "\t")
	if i := strings.LastIndex(rest, "(rev "); i >= 0 {
		rev = strings.TrimSuffix(rest[i+len("(rev "):], ")")
	}
	return name, rev
}

// hunkCounts reads the line counts of "@@ -a,b +c,d @@" or "## ... ##";
// a missing count means 1.
func hunkCounts(text string) (oldLines, newLines int, err error) {
	f := strings.Fields(text)
	if len(f) < 4 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, fmt.Errorf("malformed hunk header %q", text)
	}
	count := func(s string) (int, error) {
		_, c, has := strings.Cut(s[1:], ",")
		if !has {
			return 1, nil
		}
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("malformed hunk header %q", text)
		}
		return n, nil
	}
	if oldLines, err = count(f[1]); err != nil {
		return 0, 0, err
	}
	if newLines, err = count(f[2]); err != nil {
		return 0, 0, err
	}
	return oldLines, newLines, nil
}
