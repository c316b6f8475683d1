package svn

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aicr-dev/aicr/vcs"
)

// ErrBadRange is wrapped when a blame range is not 1 <= start <= end.
var ErrBadRange = errors.New("invalid line range")

// Blame attributes lines start..end (1-based, inclusive) of path at rev
// with `svn blame --xml URL/path@REV` (file://local_path with svnlook
// access, which has no blame of its own). It returns line numbers,
// revisions, authors and dates only, never the text. Status is
// vcs.BlameNotFound when path is not a file at rev, vcs.BlamePartial when
// the range runs past the end of the file (clipped) or the file is binary
// (no lines), else vcs.BlameOK. Paths leaving the reviewed directory or
// outside include/exclude fail with vcs.ErrPathOutOfScope.
func (a *Adapter) Blame(ctx context.Context, path, rev string, start, end int) (vcs.BlameResult, error) {
	res := vcs.BlameResult{Path: path, Revision: rev, Lines: []vcs.BlameLine{}}
	r, err := parseRev(rev)
	if err != nil {
		return res, err
	}
	if err := a.scopedFile(path); err != nil {
		return res, err
	}
	if start < 1 || end < start {
		return res, fmt.Errorf("%w: %d-%d (want 1 <= start <= end)", ErrBadRange, start, end)
	}
	if a.svn == "" {
		return res, ErrNoSVNClient
	}
	info, err := a.info(ctx)
	if err != nil {
		return res, err
	}
	pr, pw := io.Pipe()
	type parsed struct {
		lines  []vcs.BlameLine
		target bool
		total  int
		err    error
	}
	done := make(chan parsed, 1)
	go func() {
		var p parsed
		p.lines, p.target, p.total, p.err = decodeBlame(pr, start, end)
		pr.CloseWithError(io.ErrClosedPipe)
		done <- p
	}()
	err = a.run(ctx, pw, "blame", "--xml", fileURL(info.url, path, r))
	pw.CloseWithError(err)
	p := <-done
	switch {
	case svnSays(err, "W160013"), svnSays(err, "W160017"), svnSays(err, "E160013"), svnSays(err, "E195012"):
		res.Status, res.Reason = vcs.BlameNotFound, "no file "+path+" at r"+rev
		return res, nil
	case svnSays(err, "E160006"):
		return res, fmt.Errorf("%w: r%d", vcs.ErrNoSuchRevision, r)
	case err != nil:
		return res, err
	case p.err != nil:
		return res, fmt.Errorf("svn blame: %w", p.err)
	}
	res.Lines = p.lines
	switch {
	case !p.target:
		// svn skips binary files with a warning and an empty <blame>.
		res.Status, res.Reason = vcs.BlamePartial, "binary file: no lines to attribute"
	case end > p.total:
		res.Status, res.Reason = vcs.BlamePartial, fmt.Sprintf("range clipped: the file has %d lines", p.total)
	default:
		res.Status = vcs.BlameOK
	}
	return res, nil
}

// decodeBlame streams svn's blame XML, keeping only lines in range, so a
// huge file's blame costs memory for the range only.
func decodeBlame(r io.Reader, start, end int) (lines []vcs.BlameLine, target bool, total int, err error) {
	dec := xml.NewDecoder(r)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return lines, target, total, nil
		}
		if err != nil {
			return nil, false, 0, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch se.Name.Local {
		case "target":
			target = true
		case "entry":
			var e struct {
				Line   int `xml:"line-number,attr"`
				Commit struct {
					Revision string `xml:"revision,attr"`
					Author   string `xml:"author"`
					Date     string `xml:"date"`
				} `xml:"commit"`
			}
			if err := dec.DecodeElement(&e, &se); err != nil {
				return nil, false, 0, err
			}
			total = e.Line
			if e.Line < start || e.Line > end {
				continue
			}
			bl := vcs.BlameLine{Line: e.Line, Revision: e.Commit.Revision, Author: e.Commit.Author}
			if e.Commit.Date != "" {
				if bl.Date, err = time.Parse(time.RFC3339Nano, e.Commit.Date); err != nil {
					return nil, false, 0, fmt.Errorf("bad date %q: %w", e.Commit.Date, err)
				}
			}
			lines = append(lines, bl)
		}
	}
}
