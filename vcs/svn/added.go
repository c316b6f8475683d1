package svn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"strings"

	"github.com/aicr-dev/aicr/vcs"
)

// This file gives added files their line maps and diff.patch sections
// without Subversion's diff, which runs with --no-diff-added: diffing a
// text file against nothing costs minutes per 50 MB inside Subversion,
// while every line of an added file is an added line by definition. The
// content is fetched anyway, so its lines are counted while it streams to
// src/ and its section is written from that copy.

// linesFromContent reports whether f's line map comes from its fetched
// content instead of the diff: a file added (copies included, since svn
// and svnlook both diff a copy as an add) or replaced for which the diff
// shows no new-side lines. svn shows a replaced file as a modification,
// so only svnlook's replacements (a delete section, no add) land here. svn
// also diffs a file changed under a copied directory as an add, which
// --no-diff-added reduces to the stub "Index: P (added)"; svnlook diffs
// that file against its copy source.
func linesFromContent(f vcs.FileChange, diffs map[string]vcs.FileDiff) bool {
	d := diffs[f.Path]
	if f.NodeKind != vcs.NodeFile || d.Binary || len(d.Hunks) != 0 {
		return false
	}
	if f.Action == vcs.ActionAdd || f.Action == vcs.ActionReplace {
		return true
	}
	stub, ok := diffs[f.Path+" (added)"]
	return ok && len(stub.Hunks) == 0 && !stub.Binary && !stub.PropsChanged
}

// addedFile is a file whose section appendAdded writes.
type addedFile struct {
	f    *vcs.FileChange
	mime string // svn:mime-type, for the binary marker
}

// maxTargetBytes bounds the URLs one batched svn command carries: well
// under Windows' 32 KiB command line (a few hundred paths per process),
// and 1 MiB elsewhere, half of Linux's usual 2 MiB for argv and
// environment together (about ten thousand paths per process).
var maxTargetBytes = map[bool]int{true: 24 << 10, false: 1 << 20}[runtime.GOOS == "windows"]

// mimeTypes returns the svn:mime-type at rev of each file that has one.
// Through svn it is one `svn proplist -v --xml URL@REV...` per
// maxTargetBytes of URLs, not one process per file; svnlook takes one path
// per call, so it is used only for files its diff says nothing about
// (copies, replacements, property-only changes).
func (a *Adapter) mimeTypes(ctx context.Context, info *repoInfo, rev int64, files []*vcs.FileChange) (map[string]string, error) {
	out := map[string]string{}
	if a.access == AccessSvnlook {
		for _, f := range files {
			m, err := a.mimeType(ctx, info, f.Path, rev)
			if err != nil {
				return nil, err
			}
			if m = strings.TrimSpace(m); m != "" {
				out[f.Path] = m
			}
		}
		return out, nil
	}
	// svn prints each target as its canonical URL without the peg
	// revision; compare unescaped paths, since its escaping may differ
	// from escapePath's.
	base, err := url.PathUnescape(info.url)
	if err != nil {
		return nil, fmt.Errorf("svn proplist: bad url %q: %w", info.url, err)
	}
	for start := 0; start < len(files); {
		args := []string{"--xml", "-v"}
		size := 0
		for ; start < len(files) && (size == 0 || size < maxTargetBytes); start++ {
			u := fileURL(info.url, files[start].Path, rev)
			args = append(args, u)
			size += len(u) + 1
		}
		xmlOut, err := a.output(ctx, "proplist", args...)
		if err != nil {
			return nil, err
		}
		var x struct {
			Targets []struct {
				Path  string `xml:"path,attr"`
				Props []struct {
					Name  string `xml:"name,attr"`
					Value string `xml:",chardata"`
				} `xml:"property"`
			} `xml:"target"`
		}
		if err := xml.Unmarshal(xmlOut, &x); err != nil {
			return nil, fmt.Errorf("svn proplist: parse xml: %w", err)
		}
		for _, t := range x.Targets {
			p, err := url.PathUnescape(t.Path)
			if err != nil {
				return nil, fmt.Errorf("svn proplist: bad target %q: %w", t.Path, err)
			}
			rel, ok := strings.CutPrefix(p, base+"/")
			if !ok {
				return nil, fmt.Errorf("svn proplist: target %q is not under %s", t.Path, info.url)
			}
			for _, pr := range t.Props {
				if pr.Name == "svn:mime-type" && strings.TrimSpace(pr.Value) != "" {
					out[rel] = strings.TrimSpace(pr.Value)
				}
			}
		}
	}
	return out, nil
}

// diffSep is the line svn prints under "Index:".
const diffSep = "==================================================================="

// appendAdded appends to the patch at path one section per added file, in
// the order given (path order), in the format `svn diff` would have used:
//
//   - fetched text: "--- P\t(nonexistent)", "+++ P\t(revision N)",
//     "@@ -0,0 +1,L @@" and every line, streamed from dir/src/P;
//   - empty: the "Index:" header alone, as svn prints it;
//   - binary: svn's "Cannot display" marker and the mime type;
//   - not fetched (too large, over a cap): one note line saying why. Its
//     size is only known to exceed the cap, so it has no line map either.
//
// ParseDiff of the result therefore agrees with the files' line maps.
func appendAdded(path string, dst vcs.Dest, rev int64, added []*addedFile) error {
	if len(added) == 0 {
		return nil
	}
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("write diff: %w", err)
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	for _, af := range added {
		if err = writeAddedSection(bw, dst, rev, af); err != nil {
			break
		}
	}
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write diff: %w", ferr)
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write diff: %w", cerr)
	}
	return err
}

func writeAddedSection(bw *bufio.Writer, dst vcs.Dest, rev int64, af *addedFile) error {
	f := af.f
	fmt.Fprintf(bw, "Index: %s\n%s\n", f.Path, diffSep)
	switch {
	case f.Binary:
		fmt.Fprintf(bw, "Cannot display: file marked as a binary type.\nsvn:mime-type = %s\n", af.mime)
		return nil
	case f.Skipped != "":
		// A line the parser ignores: no header, no hunk.
		fmt.Fprintf(bw, "(aicr: content not shown: %s)\n", f.Skipped)
		return nil
	case len(f.Added) == 0:
		return nil
	}
	lines := f.Added[0].End
	fmt.Fprintf(bw, "--- %s\t(nonexistent)\n+++ %s\t(revision %d)\n", f.Path, f.Path, rev)
	if lines == 1 {
		bw.WriteString("@@ -0,0 +1 @@\n")
	} else {
		fmt.Fprintf(bw, "@@ -0,0 +1,%d @@\n", lines)
	}
	src, err := srcPath(dst, f.Path)
	if err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("write diff of %s: %w", f.Path, err)
	}
	defer in.Close()
	n, err := copyPlusLines(bw, in)
	if err != nil {
		return fmt.Errorf("write diff of %s: %w", f.Path, err)
	}
	if n != lines {
		// The map was counted while the same bytes were fetched; a
		// mismatch means src/ changed under us.
		return fmt.Errorf("write diff of %s: %d lines, counted %d while fetching", f.Path, n, lines)
	}
	return nil
}

// copyPlusLines copies r to w with "+" before every line, one buffer at a
// time (lines of any length), ending an unterminated last line with svn's
// marker. It returns the number of lines.
func copyPlusLines(w *bufio.Writer, r io.Reader) (int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	n, atStart := 0, true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if atStart {
				w.WriteByte('+')
				n++
			}
			if _, werr := w.Write(chunk); werr != nil {
				return n, werr
			}
			atStart = chunk[len(chunk)-1] == '\n'
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
	}
	if !atStart {
		w.WriteString("\n\\ No newline at end of file\n")
	}
	return n, nil
}

// lineCounter counts lines the way copyPlusLines writes them: every "\n",
// plus an unterminated last line.
type lineCounter struct {
	newlines int
	last     byte
	any      bool
}

func (l *lineCounter) add(p []byte) {
	if len(p) == 0 {
		return
	}
	l.newlines += bytes.Count(p, []byte{'\n'})
	l.last, l.any = p[len(p)-1], true
}

func (l *lineCounter) lines() int {
	if l.any && l.last != '\n' {
		return l.newlines + 1
	}
	return l.newlines
}
