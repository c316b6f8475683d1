package vcs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// FileDiff is what a unified diff says about one file.
type FileDiff struct {
	// Path is the file's path as the diff names it: the "Index:" line of
	// svn output, else the new side of the "---"/"+++" header.
	Path string
	// Binary is set when the diff declined to show content
	// ("Cannot display: file marked as a binary type." from svn,
	// "Binary files ... differ" from diff/git).
	Binary bool
	// MimeType is the svn:mime-type svn printed under a binary marker.
	MimeType string
	// PropMimeType is the value a "Property changes on:" section gives
	// svn:mime-type ("Added:" or "Modified:"); empty when the section does
	// not set it. For a file added without history the section lists all
	// its properties, so an empty value there means it has no mime type.
	PropMimeType string
	// Deleted is set when the new side of the header is svn's
	// "(nonexistent)" or /dev/null.
	Deleted bool
	// PropsChanged is set when the diff has a "Property changes on:"
	// section for the path.
	PropsChanged bool
	// Added and Hunks are new-file line numbers, merged into sorted ranges;
	// see FileChange.
	Added []LineRange
	Hunks []LineRange
	// Start and End are byte offsets in the patch from the first to the
	// last line about the file, so callers can copy or drop whole sections.
	Start, End int
}

// ParseDiff reads a unified diff as `svn diff` prints it and returns, per
// path, the new-file lines it adds and the spans of its hunks.
//
// github.com/sourcegraph/go-diff is not used: it rejects svn's
// "--- a.c\t(revision 3)" headers (it insists the label is a timestamp),
// and it has no notion of svn's "Property changes on:" sections, whose
// "## -0,0 +1 ##" hunks carry property values, not file lines, and must
// not be counted as content. Plain "---"/"+++" diffs without "Index:"
// lines are accepted as well.
//
// Hunks are consumed by their declared line counts, so content lines that
// look like headers ("+Index: x") are never mistaken for them; a hunk that
// ends before its counts are used up is an error, because a truncated diff
// would give a wrong changed-line map.
func ParseDiff(patch []byte) (map[string]FileDiff, error) {
	return ParseDiffReader(bytes.NewReader(patch))
}

// ParseDiffReader is ParseDiff over a stream. It holds one line at a time
// (at most maxKeptLine bytes of it), so a diff of a huge file is parsed in
// constant memory apart from the line ranges.
func ParseDiffReader(r io.Reader) (map[string]FileDiff, error) {
	p := &diffParser{files: map[string]*FileDiff{}, src: newLineReader(r)}
	if err := p.parse(); err != nil {
		return nil, err
	}
	out := make(map[string]FileDiff, len(p.files))
	for path, f := range p.files {
		f.Added = mergeRanges(f.Added)
		f.Hunks = mergeRanges(f.Hunks)
		out[path] = *f
	}
	return out, nil
}

type diffParser struct {
	files map[string]*FileDiff
	cur   *FileDiff
	src   *lineReader
	// sawIndex is set while the current section was opened by an "Index:"
	// line, whose path wins over the "---"/"+++" names.
	sawIndex bool
	// inProps is set inside a "Property changes on:" section, where
	// anything that is not a new file header is property text.
	inProps bool
	// propName is the property whose "Added:"/"Modified:"/"Deleted:" line
	// came last in the property section, so its hunk can be attributed.
	propName string
}

func (p *diffParser) parse() error {
	for {
		ln, ok, err := p.src.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		text := ln.text
		switch {
		case strings.HasPrefix(text, "Index: "):
			p.open(strings.TrimPrefix(text, "Index: "), ln.start)
			p.sawIndex = true
		case strings.HasPrefix(text, "--- ") && p.src.peekHasPrefix("+++ "):
			plus, _, err := p.src.next()
			if err != nil {
				return err
			}
			oldName, _ := headerName(strings.TrimPrefix(text, "--- "))
			newName, gone := headerName(strings.TrimPrefix(plus.text, "+++ "))
			if !p.sawIndex || p.cur == nil {
				name := newName
				if gone {
					name = oldName
				}
				p.open(name, ln.start)
			}
			p.sawIndex = false
			p.inProps = false
			p.cur.Deleted = gone
			ln = plus
		case p.inProps:
			if isHunkHeader(text, "##") {
				if ln, err = p.skipPropHunk(ln); err != nil {
					return err
				}
			} else if name, ok := propLine(text); ok {
				p.propName = name
			}
			// Anything else is property names or svn 1.6-style
			// "   + value" lines: not content.
		case strings.HasPrefix(text, "Property changes on: "):
			name := strings.TrimPrefix(text, "Property changes on: ")
			if p.cur == nil || p.cur.Path != name {
				p.open(name, ln.start)
			}
			p.cur.PropsChanged = true
			p.inProps = true
			p.propName = ""
			p.sawIndex = false
		case isHunkHeader(text, "@@"):
			if p.cur == nil {
				return fmt.Errorf("diff line %d: hunk before any file header", ln.no)
			}
			if ln, err = p.readHunk(ln); err != nil {
				return err
			}
		case text == "Cannot display: file marked as a binary type.",
			strings.HasPrefix(text, "Binary files ") && strings.HasSuffix(text, " differ"),
			text == "GIT binary patch":
			if p.cur == nil {
				return fmt.Errorf("diff line %d: binary marker before any file header", ln.no)
			}
			p.cur.Binary = true
		case strings.HasPrefix(text, "svn:mime-type = ") && p.cur != nil:
			p.cur.MimeType = strings.TrimPrefix(text, "svn:mime-type = ")
		}
		if p.cur != nil {
			p.cur.End = ln.end
		}
	}
}

// open starts the section of path at byte offset start. A path that shows
// up twice (svn prints the property section of a file after its content)
// keeps one entry.
func (p *diffParser) open(path string, start int) {
	p.inProps = false
	p.propName = ""
	p.sawIndex = false
	if f, ok := p.files[path]; ok {
		p.cur = f
		return
	}
	p.cur = &FileDiff{Path: path, Start: start, End: start}
	p.files[path] = p.cur
}

// headerName splits a "---"/"+++" label into the name and whether it says
// the file does not exist on that side. svn appends "\t(revision 3)",
// "\t(nonexistent)" or "\t(working copy)"; diff appends a tab and a date.
func headerName(label string) (name string, missing bool) {
	name, rest, _ := strings.Cut(label, "\t")
	missing = rest == "(nonexistent)" || name == "/dev/null"
	return name, missing
}

func isHunkHeader(text, delim string) bool {
	return strings.HasPrefix(text, delim+" -") && strings.Contains(text[len(delim):], " "+delim)
}

// parseHunkHeader reads "@@ -a,b +c,d @@" (or "## ... ##"); a missing
// count means 1.
func parseHunkHeader(text, delim string) (oldStart, oldLines, newStart, newLines int, err error) {
	body := strings.TrimPrefix(text, delim+" ")
	body, _, ok := strings.Cut(body, " "+delim)
	if !ok {
		return 0, 0, 0, 0, fmt.Errorf("malformed hunk header %q", text)
	}
	oldPart, newPart, ok := strings.Cut(body, " ")
	if !ok || !strings.HasPrefix(oldPart, "-") || !strings.HasPrefix(newPart, "+") {
		return 0, 0, 0, 0, fmt.Errorf("malformed hunk header %q", text)
	}
	if oldStart, oldLines, err = parseRange(oldPart[1:]); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("malformed hunk header %q: %w", text, err)
	}
	if newStart, newLines, err = parseRange(newPart[1:]); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("malformed hunk header %q: %w", text, err)
	}
	return oldStart, oldLines, newStart, newLines, nil
}

// maxHunkLine bounds line numbers so arithmetic on hostile input cannot
// overflow.
const maxHunkLine = 1 << 40

func parseRange(s string) (start, count int, err error) {
	startStr, countStr, hasCount := strings.Cut(s, ",")
	start, err = strconv.Atoi(startStr)
	if err != nil || start < 0 || start > maxHunkLine {
		return 0, 0, fmt.Errorf("bad line number %q", startStr)
	}
	count = 1
	if hasCount {
		count, err = strconv.Atoi(countStr)
		if err != nil || count < 0 || count > maxHunkLine {
			return 0, 0, fmt.Errorf("bad line count %q", countStr)
		}
	}
	return start, count, nil
}

// readHunk consumes the content hunk whose header is hdr and returns its
// last line.
func (p *diffParser) readHunk(hdr line) (line, error) {
	_, oldLeft, newLine, newLeft, err := parseHunkHeader(hdr.text, "@@")
	if err != nil {
		return line{}, fmt.Errorf("diff line %d: %w", hdr.no, err)
	}
	if newLeft > 0 {
		p.cur.Hunks = append(p.cur.Hunks, LineRange{Start: newLine, End: newLine + newLeft - 1})
	}
	last := hdr
	for oldLeft > 0 || newLeft > 0 {
		ln, ok, err := p.src.next()
		if err != nil {
			return line{}, err
		}
		if !ok {
			return line{}, fmt.Errorf("diff ends inside hunk of %q (line %d)", p.cur.Path, hdr.no)
		}
		last = ln
		text := ln.text
		var kind byte = ' ' // an empty line is a context line whose space was stripped
		if text != "" {
			kind = text[0]
		}
		switch kind {
		case ' ':
			if oldLeft == 0 || newLeft == 0 {
				return line{}, fmt.Errorf("diff line %d: hunk of %q has more lines than its header says", ln.no, p.cur.Path)
			}
			oldLeft--
			newLeft--
			newLine++
		case '+':
			if newLeft == 0 {
				return line{}, fmt.Errorf("diff line %d: hunk of %q has more added lines than its header says", ln.no, p.cur.Path)
			}
			p.cur.Added = appendLine(p.cur.Added, newLine)
			newLeft--
			newLine++
		case '-':
			if oldLeft == 0 {
				return line{}, fmt.Errorf("diff line %d: hunk of %q has more removed lines than its header says", ln.no, p.cur.Path)
			}
			oldLeft--
		case '\\':
			// "\ No newline at end of file"
		default:
			return line{}, fmt.Errorf("diff line %d: hunk of %q ends early", ln.no, p.cur.Path)
		}
	}
	// The marker for a missing final newline follows the last counted line.
	if p.src.peekHasPrefix(`\`) {
		ln, _, err := p.src.next()
		if err != nil {
			return line{}, err
		}
		last = ln
	}
	return last, nil
}

// propLine recognises the line that names the property a property hunk
// belongs to: "Added: svn:mime-type", "Modified: x", "Deleted: y".
func propLine(text string) (string, bool) {
	for _, k := range []string{"Added: ", "Modified: ", "Deleted: "} {
		if name, ok := strings.CutPrefix(text, k); ok {
			return name, true
		}
	}
	return "", false
}

// skipPropHunk consumes a "## -0,0 +1 ##" property hunk. Its lines are
// property values, so they are counted only to find where it ends.
func (p *diffParser) skipPropHunk(hdr line) (line, error) {
	_, oldLeft, _, newLeft, err := parseHunkHeader(hdr.text, "##")
	if err != nil {
		return line{}, fmt.Errorf("diff line %d: %w", hdr.no, err)
	}
	last := hdr
	for oldLeft > 0 || newLeft > 0 {
		ln, ok, err := p.src.next()
		if err != nil {
			return line{}, err
		}
		if !ok {
			return line{}, fmt.Errorf("diff ends inside property hunk of %q (line %d)", p.cur.Path, hdr.no)
		}
		last = ln
		text := ln.text
		switch {
		case strings.HasPrefix(text, `\`):
		case strings.HasPrefix(text, "+") && newLeft > 0:
			if p.propName == "svn:mime-type" && p.cur.PropMimeType == "" {
				// A mime type is one line; a multi-line value keeps its
				// first line, which is what decides text or binary.
				p.cur.PropMimeType = text[1:]
			}
			newLeft--
		case strings.HasPrefix(text, "-") && oldLeft > 0:
			oldLeft--
		case (text == "" || text[0] == ' ') && oldLeft > 0 && newLeft > 0:
			oldLeft--
			newLeft--
		default:
			return line{}, fmt.Errorf("diff line %d: property hunk of %q ends early", ln.no, p.cur.Path)
		}
	}
	for p.src.peekHasPrefix(`\`) {
		ln, _, err := p.src.next()
		if err != nil {
			return line{}, err
		}
		last = ln
	}
	return last, nil
}

// appendLine adds line to ranges that are built in ascending order.
func appendLine(rs []LineRange, line int) []LineRange {
	if n := len(rs); n > 0 && rs[n-1].End+1 == line {
		rs[n-1].End = line
		return rs
	}
	return append(rs, LineRange{Start: line, End: line})
}

// mergeRanges sorts rs and joins ranges that overlap or touch.
func mergeRanges(rs []LineRange) []LineRange {
	if len(rs) < 2 {
		return rs
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.Start <= last.End+1 {
			if r.End > last.End {
				last.End = r.End
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

type line struct {
	text       string
	start, end int // byte offsets of the line including its newline
	no         int // 1-based line number
}

// maxKeptLine bounds the text kept per line: markers and headers are
// short, and content lines are only classified by their first byte.
const maxKeptLine = 64 << 10

// lineReader yields lines with their byte offsets, with one line of
// lookahead. A trailing "\r" is dropped so CRLF patches parse.
type lineReader struct {
	r      *bufio.Reader
	off    int
	no     int
	peeked *line
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

func (lr *lineReader) next() (line, bool, error) {
	if lr.peeked != nil {
		ln := *lr.peeked
		lr.peeked = nil
		return ln, true, nil
	}
	return lr.read()
}

func (lr *lineReader) peekHasPrefix(prefix string) bool {
	if lr.peeked == nil {
		ln, ok, err := lr.read()
		if err != nil || !ok {
			return false
		}
		lr.peeked = &ln
	}
	return strings.HasPrefix(lr.peeked.text, prefix)
}

func (lr *lineReader) read() (line, bool, error) {
	start := lr.off
	var buf []byte
	for {
		chunk, err := lr.r.ReadSlice('\n')
		lr.off += len(chunk)
		if room := maxKeptLine - len(buf); room > 0 {
			buf = append(buf, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF {
			if lr.off == start {
				return line{}, false, nil
			}
			break
		}
		if err != nil {
			return line{}, false, fmt.Errorf("read diff: %w", err)
		}
		break
	}
	lr.no++
	text := strings.TrimSuffix(string(buf), "\n")
	text = strings.TrimSuffix(text, "\r")
	return line{text: text, start: start, end: lr.off, no: lr.no}, true, nil
}
