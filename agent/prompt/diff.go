package prompt

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs"
)

// renderedDiff is the diff as the model sees it.
type renderedDiff struct {
	text string
	// clipped are the files left out or cut short, in diff order.
	clipped []string
	// cut marks the clipped files of which a part is shown.
	cut map[string]bool
}

// fileSection is one file's part of the diff, numbered, split into the
// header and the hunks so a file too large for the budget can be cut at a
// hunk boundary.
type fileSection struct {
	path   string
	header string
	hunks  []string
}

func (f fileSection) size() int {
	n := len(f.header)
	for _, h := range f.hunks {
		n += len(h)
	}
	return n
}

func (f fileSection) String() string { return f.header + strings.Join(f.hunks, "") }

// renderDiff numbers the diff's lines and, when budget (bytes) is
// positive, keeps whole files in diff order while they fit. The first file
// that does not fit ends the diff; if it could not fit even alone, the
// hunks that fit are shown so the model still sees the start of it.
func renderDiff(diff string, budget int) renderedDiff {
	preamble, sections := splitDiff(diff)
	out := renderedDiff{cut: map[string]bool{}}
	var s strings.Builder
	s.WriteString(preamble)
	used := len(preamble)
	for i, sec := range sections {
		if budget <= 0 || used+sec.size() <= budget {
			s.WriteString(sec.String())
			used += sec.size()
			continue
		}
		rest := sections[i:]
		if sec.size() > budget-len(preamble) {
			if shown, n := cutSection(sec, budget-used); n > 0 {
				s.WriteString(shown)
				out.cut[sec.path] = true
			}
		}
		for _, r := range rest {
			out.clipped = append(out.clipped, r.path)
		}
		break
	}
	out.text = s.String()
	return out
}

// cutSection returns the header and the leading hunks of sec that fit in
// room bytes, with a note, and how many hunks that is.
func cutSection(sec fileSection, room int) (string, int) {
	note := fmt.Sprintf("[aicr: the rest of the diff of %s is not shown; read it with fetch_more_context]\n", oneLine(sec.path))
	used := len(sec.header) + len(note)
	n := 0
	for _, h := range sec.hunks {
		if used+len(h) > room {
			break
		}
		used += len(h)
		n++
	}
	if n == 0 {
		return "", 0
	}
	return sec.header + strings.Join(sec.hunks[:n], "") + note, n
}

// splitDiff cuts the diff into per-file sections using vcs.ParseDiff's
// byte offsets, so the file boundaries are the ones the rest of aicr
// uses. A diff the parser rejects is kept whole, as one section.
func splitDiff(diff string) (string, []fileSection) {
	if diff == "" {
		return "", nil
	}
	files, err := vcs.ParseDiff([]byte(diff))
	if err != nil || len(files) == 0 {
		return "", []fileSection{numberSection("", diff)}
	}
	spans := make([]vcs.FileDiff, 0, len(files))
	for _, f := range files {
		spans = append(spans, f)
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].Start < spans[j].Start })
	preamble := diff[:min(spans[0].Start, len(diff))]
	var out []fileSection
	for i, f := range spans {
		end := len(diff)
		if i+1 < len(spans) {
			end = spans[i+1].Start
		}
		if f.Start >= end {
			continue
		}
		out = append(out, numberSection(f.Path, diff[f.Start:end]))
	}
	return preamble, out
}

// numberSection prefixes every line of text with a gutter: the new-file
// line number for added and context lines of a hunk, blanks otherwise.
// Hunks are followed by their declared counts, so a content line that
// looks like a header ("+@@ ...") is numbered as content.
func numberSection(path, text string) fileSection {
	sec := fileSection{path: path}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var cur *strings.Builder
	oldLeft, newLeft, newNo := 0, 0, 0
	blank := strings.Repeat(" ", gutterWidth)
	flush := func() {
		if cur != nil {
			sec.hunks = append(sec.hunks, cur.String())
			cur = nil
		}
	}
	write := func(gutter, line string) {
		if !strings.HasSuffix(line, "\n") {
			line += "\n"
		}
		if cur != nil {
			cur.WriteString(gutter + " | " + line)
		} else {
			sec.header += gutter + " | " + line
		}
	}
	for _, line := range lines {
		body := strings.TrimSuffix(line, "\n")
		if oldLeft > 0 || newLeft > 0 {
			switch {
			case strings.HasPrefix(body, "+") && newLeft > 0:
				write(lineNo(newNo), line)
				newNo++
				newLeft--
				continue
			case strings.HasPrefix(body, "-") && oldLeft > 0:
				write(blank, line)
				oldLeft--
				continue
			case (strings.HasPrefix(body, " ") || body == "" || body == "\r") && oldLeft > 0 && newLeft > 0:
				write(lineNo(newNo), line)
				newNo++
				oldLeft--
				newLeft--
				continue
			case strings.HasPrefix(body, `\`):
				write(blank, line)
				continue
			}
			// A short hunk: the diff is malformed; number nothing more.
			oldLeft, newLeft = 0, 0
		}
		if strings.HasPrefix(body, `\`) && cur != nil {
			write(blank, line)
			continue
		}
		if o, n, start, ok := hunkHeader(body); ok {
			flush()
			cur = &strings.Builder{}
			write(blank, line)
			oldLeft, newLeft, newNo = o, n, start
			continue
		}
		flush()
		write(blank, line)
	}
	flush()
	return sec
}

// gutterWidth fits line numbers up to 99,999 without shifting the bar;
// longer numbers just widen their own line.
const gutterWidth = 5

func lineNo(n int) string {
	s := strconv.Itoa(n)
	if len(s) < gutterWidth {
		s = strings.Repeat(" ", gutterWidth-len(s)) + s
	}
	return s
}

// hunkHeader reads "@@ -a,b +c,d @@ ..." and returns the old and new
// line counts and the new start; a missing count means 1.
func hunkHeader(s string) (oldLines, newLines, newStart int, ok bool) {
	if !strings.HasPrefix(s, "@@ -") {
		return 0, 0, 0, false
	}
	rest, _, found := strings.Cut(s[len("@@ -"):], " @@")
	if !found {
		return 0, 0, 0, false
	}
	oldPart, newPart, found := strings.Cut(rest, " +")
	if !found {
		return 0, 0, 0, false
	}
	_, oldLines, ok1 := rangeOf(oldPart)
	newStart, newLines, ok2 := rangeOf(newPart)
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	return oldLines, newLines, newStart, true
}

func rangeOf(s string) (start, count int, ok bool) {
	a, b, hasCount := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	count = 1
	if hasCount {
		if count, err = strconv.Atoi(b); err != nil || count < 0 {
			return 0, 0, false
		}
	}
	return start, count, true
}
