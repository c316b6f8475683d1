package svn

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs"
)

// Neither `svnlook diff` (no path arguments) nor `svn diff -c N URL` can
// leave one file out, and diffing a large file costs tens of seconds
// (18-23 s for a 10-line edit of 50 MB) only for the file to be dropped
// as too large. When the revision's dump says a changed file is over
// MaxFileBytes, the diff is taken instead of the files that will be
// reviewed, named one by one: `svn diff -c N --depth empty URL/P@REV...`.

// diffTargets returns the files to diff by name when the dump found an
// oversized one, in the order given, and ok false when the diff of the
// whole directory will do. Added files are left out (their sections
// come from their content) and so are directories: a directory target
// would bring back its oversized children. The cost is that a
// directory's own property changes, and the files of a deleted
// directory, are missing from the diff of such a revision.
func (a *Adapter) diffTargets(c *vcs.Change, dumped map[string]*dumpedFile) (targets []vcs.FileChange, ok bool) {
	over := false
	for _, f := range c.Files {
		if d := dumped[f.Path]; d != nil && d.tooLarge && a.filter.Match(f.Path) {
			over = true
		}
	}
	if !over || a.svn == "" {
		return nil, false
	}
	for _, f := range c.Files {
		if f.NodeKind != vcs.NodeFile || f.Action == vcs.ActionAdd || !a.filter.Match(f.Path) {
			continue
		}
		if d := dumped[f.Path]; d != nil && d.tooLarge {
			continue
		}
		targets = append(targets, f)
	}
	return targets, true
}

// diffNamed writes the diff of the named files to w, one `svn diff` per
// maxTargetBytes of URLs, with each section's paths put back relative to
// the reviewed directory (svn prints them relative to each target).
func (a *Adapter) diffNamed(ctx context.Context, info *repoInfo, rev int64, targets []vcs.FileChange, w io.Writer) error {
	for start := 0; start < len(targets); {
		args := []string{"--internal-diff", "--no-diff-added", "--depth", "empty", "-c", strconv.FormatInt(rev, 10)}
		var names []string
		size := 0
		for ; start < len(targets) && (size == 0 || size < maxTargetBytes); start++ {
			f := targets[start]
			peg := rev
			if f.Action == vcs.ActionDelete {
				peg = rev - 1 // gone at rev
			}
			u := fileURL(info.url, f.Path, peg)
			args = append(args, u)
			names = append(names, f.Path)
			size += len(u) + 1
		}
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			err := relabelDiff(pr, w, names)
			pr.CloseWithError(err)
			done <- err
		}()
		err := a.run(ctx, pw, "diff", args...)
		pw.CloseWithError(err)
		if rerr := <-done; rerr != nil && err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// relabelDiff copies the diff of the files named, in order, from r to w,
// replacing the base name svn prints in "Index:", "---"/"+++" and
// "Property changes on:" with the full relative path. Each target prints
// at most one section, in target order, so a section belongs to the next
// target with its base name. Hunk lines are copied by their declared
// counts, never rewritten, and streamed whatever their length.
func relabelDiff(r io.Reader, w io.Writer, names []string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	next, cur, base := 0, "", ""
	oldLeft, newLeft := 0, 0
	for {
		b, err := br.ReadSlice('\n')
		full := err == nil || err == io.EOF
		switch {
		case errors.Is(err, bufio.ErrBufferFull), err == nil, errors.Is(err, io.EOF):
		default:
			return fmt.Errorf("read svn diff: %w", err)
		}
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		if oldLeft > 0 || newLeft > 0 {
			switch firstByte(b) {
			case ' ':
				oldLeft--
				newLeft--
			case '+':
				newLeft--
			case '-':
				oldLeft--
			}
			if _, werr := w.Write(b); werr != nil {
				return werr
			}
			for !full {
				b, err = br.ReadSlice('\n')
				if _, werr := w.Write(b); werr != nil {
					return werr
				}
				full = !errors.Is(err, bufio.ErrBufferFull)
				if full && err != nil && err != io.EOF {
					return fmt.Errorf("read svn diff: %w", err)
				}
			}
			if err == io.EOF {
				return nil
			}
			continue
		}
		if !full {
			return fmt.Errorf("svn diff: line over %d bytes outside a hunk", br.Size())
		}
		line := string(b)
		text := strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(text, "Index: "):
			name := strings.TrimPrefix(text, "Index: ")
			// A file changed under a copied directory is diffed as an add,
			// which --no-diff-added reduces to this stub.
			name, added := strings.CutSuffix(name, " (added)")
			for next < len(names) && path.Base(names[next]) != name {
				next++
			}
			if next == len(names) {
				return fmt.Errorf("svn diff: section %q matches no file asked for", name)
			}
			cur, base = names[next], name
			next++
			line = "Index: " + cur + "\n"
			if added {
				line = "Index: " + cur + " (added)\n"
			}
		case base != "" && (strings.HasPrefix(text, "--- "+base+"\t") || strings.HasPrefix(text, "+++ "+base+"\t")):
			line = text[:4] + cur + text[4+len(base):] + "\n"
		case base != "" && text == "Property changes on: "+base:
			line = "Property changes on: " + cur + "\n"
		case strings.HasPrefix(text, "@@ -"), strings.HasPrefix(text, "## -"):
			var perr error
			if oldLeft, newLeft, perr = hunkCounts(text); perr != nil {
				return fmt.Errorf("svn diff: %w", perr)
			}
		}
		if _, werr := io.WriteString(w, line); werr != nil {
			return werr
		}
		if err == io.EOF {
			return nil
		}
	}
}
