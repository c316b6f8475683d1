package im

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultMaxParts caps how many messages one report may become. Past it
// a chat channel is being flooded; the least severe problems are left out
// instead, and the last part says how many.
const DefaultMaxParts = 5

// ErrTooLarge is wrapped when a report cannot be made to fit at all (not
// even a part holding only its heading and the "left out" note).
var ErrTooLarge = errors.New("report does not fit the platform limit")

// Block is one unit of a rendered report that Split keeps in one message:
// the header, one problem, one summary. A block too big for a message on
// its own is broken at blank lines outside code fences, and, as a last
// resort, cut at a line boundary with its fence closed.
type Block struct {
	Text string
	// Problem marks a problem's block: problems are what Split leaves
	// out, least severe (last) first, when MaxParts is reached.
	Problem bool
}

// Part is one message of a split report.
type Part struct {
	Index, Total int // 1-based
	Head         string
	Body         string
	// Omitted is the number of problems left out of the whole report; it
	// is non-zero only on the last part, which says so in its body.
	Omitted int
}

// SplitOptions describes one platform's limit.
type SplitOptions struct {
	// Fits reports whether a message made of head and body is within the
	// platform's limit, measured the way the platform measures: on the
	// serialized request, in bytes. It must be monotonic: a shorter body
	// never fits worse.
	Fits func(head, body string) bool
	// Head returns the heading of part i of n; PartLabel gives the
	// "(i/n)" suffix.
	Head func(i, n int) string
	// MaxParts defaults to DefaultMaxParts.
	MaxParts int
	// Sep joins blocks; it defaults to a blank line.
	Sep string
	// Omitted renders the note that ends the last part when problems
	// were left out; it defaults to OmittedText.
	Omitted func(problems int) string
}

// PartLabel is the suffix that numbers parts: "" for a single message,
// otherwise "(i/n)".
func PartLabel(i, n int) string {
	if n <= 1 {
		return ""
	}
	return "(" + strconv.Itoa(i) + "/" + strconv.Itoa(n) + ")"
}

// OmittedText is the default note for problems left out.
func OmittedText(problems int) string { return omittedText(LangEnglish, problems, 0) }

// OmittedNote is OmittedText pointing at this report's run in the audit
// trail, for channels that cut the report to their limit.
func (r Report) OmittedNote(problems int) string { return omittedText(r.Language, problems, r.RunID) }

func omittedText(lang Language, problems int, runID int64) string {
	show := "aicr audit show"
	if runID > 0 {
		show += " " + strconv.FormatInt(runID, 10)
	}
	switch problems {
	case 0:
		return lang.T(KeyOmittedRest, show)
	case 1:
		return lang.T(KeyOmitted1, problems, show)
	}
	return lang.T(KeyOmittedN, problems, show)
}

// Split packs blocks, in order, into as few parts as fit, and at most
// MaxParts. When even MaxParts parts cannot hold everything, it keeps as
// many problems as fit (they come most severe first, so the least severe
// are dropped) while keeping every non-problem block, and ends the last
// part with the Omitted note. It never cuts inside a code fence or a
// UTF-8 sequence.
func Split(blocks []Block, opt SplitOptions) ([]Part, error) {
	if opt.MaxParts <= 0 {
		opt.MaxParts = DefaultMaxParts
	}
	if opt.Sep == "" {
		opt.Sep = "\n\n"
	}
	if opt.Omitted == nil {
		opt.Omitted = OmittedText
	}
	s := splitter{opt: opt}

	parts, err := s.pack(blocks, 0)
	if err != nil {
		return nil, err
	}
	if len(parts) <= opt.MaxParts {
		return parts, nil
	}

	total := 0
	for _, b := range blocks {
		if b.Problem {
			total++
		}
	}
	// Fewer problems never need more parts, so the largest count that
	// fits can be found by bisection.
	lo, hi := 0, total-1 // keep lo problems: known to be tried last
	var best []Part
	for lo <= hi {
		mid := (lo + hi) / 2
		p, err := s.pack(keepProblems(blocks, mid), total-mid)
		if err == nil && len(p) <= opt.MaxParts {
			best = p
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	if best != nil {
		return best, nil
	}
	// Even without problems the rest does not fit: keep the first parts
	// and let the last one carry only the note.
	p, err := s.pack(keepProblems(blocks, 0), total)
	if err != nil {
		return nil, err
	}
	p = p[:opt.MaxParts]
	last := &p[len(p)-1]
	last.Body = opt.Omitted(total)
	last.Omitted = total
	if err := s.finish(p); err != nil {
		return nil, err
	}
	return p, nil
}

// keepProblems returns blocks with only the first n problem blocks.
func keepProblems(blocks []Block, n int) []Block {
	out := make([]Block, 0, len(blocks))
	for _, b := range blocks {
		if b.Problem {
			if n == 0 {
				continue
			}
			n--
		}
		out = append(out, b)
	}
	return out
}

type splitter struct {
	opt SplitOptions
}

// pack lays blocks out greedily. The heading of each part depends on the
// number of parts ("(1/3)" vs "(1/12)"), which is only known after
// packing, so it packs again until the count is stable.
func (s splitter) pack(blocks []Block, omitted int) ([]Part, error) {
	if omitted > 0 {
		blocks = append(blocks[:len(blocks):len(blocks)], Block{Text: s.opt.Omitted(omitted)})
	}
	guess := 1
	var parts []Part
	for range 4 {
		var err error
		parts, err = s.packWith(blocks, guess)
		if err != nil {
			return nil, err
		}
		if len(parts) == guess {
			break
		}
		guess = len(parts)
	}
	if err := s.finish(parts); err != nil {
		return nil, err
	}
	if omitted > 0 && len(parts) > 0 {
		parts[len(parts)-1].Omitted = omitted
	}
	return parts, nil
}

// finish numbers the parts and checks each against the limit once more,
// with the heading it will really carry.
func (s splitter) finish(parts []Part) error {
	for i := range parts {
		parts[i].Index = i + 1
		parts[i].Total = len(parts)
		parts[i].Head = s.opt.Head(i+1, len(parts))
		if !s.opt.Fits(parts[i].Head, parts[i].Body) {
			return fmt.Errorf("part %d of %d: %w", i+1, len(parts), ErrTooLarge)
		}
	}
	return nil
}

func (s splitter) packWith(blocks []Block, total int) ([]Part, error) {
	var parts []Part
	body := ""
	head := func() string { return s.opt.Head(len(parts)+1, total) }
	flush := func() {
		parts = append(parts, Part{Index: len(parts) + 1, Body: body})
		body = ""
	}
	var place func(text string, depth int) error
	place = func(text string, depth int) error {
		if strings.TrimSpace(text) == "" {
			return nil
		}
		if body != "" {
			if cand := body + s.opt.Sep + text; s.opt.Fits(head(), cand) {
				body = cand
				return nil
			}
			flush()
		}
		if s.opt.Fits(head(), text) {
			body = text
			return nil
		}
		// Too big for a message of its own.
		if pieces := paragraphs(text); len(pieces) > 1 && depth == 0 {
			for _, p := range pieces {
				if err := place(p, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		cut := truncate(text, func(t string) bool { return s.opt.Fits(head(), t) })
		if cut == "" {
			return ErrTooLarge
		}
		body = cut
		return nil
	}
	for _, b := range blocks {
		if err := place(b.Text, 0); err != nil {
			return nil, err
		}
	}
	if body != "" || len(parts) == 0 {
		flush()
	}
	return parts, nil
}

// fenceOf returns the fence a line opens or closes ("```", "~~~~"), or "".
func fenceOf(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return ""
	}
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(t) && t[n] == c {
			n++
		}
		if n >= 3 {
			return t[:n]
		}
	}
	return ""
}

// fenceState walks lines and reports, per line, the fence open after it.
type fenceState struct{ open string }

func (f *fenceState) step(line string) {
	fence := fenceOf(line)
	switch {
	case fence == "":
	case f.open == "":
		f.open = fence
	case fence[0] == f.open[0] && len(fence) >= len(f.open) &&
		strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), fence[:1])) == "":
		f.open = ""
	}
}

// paragraphs splits text at blank lines that are not inside a fence.
func paragraphs(text string) []string {
	var out []string
	var cur []string
	var fs fenceState
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" && fs.open == "" {
			if len(cur) > 0 {
				out = append(out, strings.Join(cur, "\n"))
				cur = nil
			}
			continue
		}
		fs.step(line)
		cur = append(cur, line)
	}
	if len(cur) > 0 {
		out = append(out, strings.Join(cur, "\n"))
	}
	return out
}

const truncatedMark = "… (truncated)"

// truncate returns the longest prefix of text ending at a line boundary
// (or, for a single huge line, a rune boundary) that fits with the
// truncation mark, closing a fence the cut left open. "" if nothing fits.
func truncate(text string, fits func(string) bool) string {
	lines := strings.Split(text, "\n")
	build := func(n int, tail string) string {
		var fs fenceState
		for _, l := range lines[:n] {
			fs.step(l)
		}
		out := strings.Join(lines[:n], "\n")
		if tail != "" {
			out += "\n" + tail
		}
		if fs.open != "" {
			out += "\n" + fs.open
		}
		return out + "\n" + truncatedMark
	}
	// Bisect on the number of whole lines.
	lo, hi, best := 1, len(lines)-1, 0
	for lo <= hi {
		mid := (lo + hi) / 2
		if fits(build(mid, "")) {
			best, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	if best > 0 {
		return build(best, "")
	}
	// Not even the first line fits: cut it at a rune boundary.
	first := lines[0]
	if fenceOf(first) != "" {
		return ""
	}
	lo, hi, cut := 1, len(first), 0
	for lo <= hi {
		mid := (lo + hi) / 2
		prefix := first[:mid]
		for !utf8.ValidString(prefix) && len(prefix) > 0 {
			prefix = prefix[:len(prefix)-1]
		}
		if fits(prefix + "\n" + truncatedMark) {
			cut, lo = len(prefix), mid+1
		} else {
			hi = mid - 1
		}
	}
	if cut == 0 {
		return ""
	}
	return first[:cut] + "\n" + truncatedMark
}
