package findings

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// keyLen is how many hex digits of the SHA-256 a Key keeps: 80 bits, far
// beyond any repo's count of findings, short enough for a URL and a log.
const keyLen = 20

// normLine is one line as keys compare it: every run of whitespace one
// space, none at the ends, so re-indenting or re-wrapping spaces is not a
// change of the code.
func normLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// span clamps line..endLine (1-based, endLine 0 meaning line) to lines;
// ok is false when line is not in the file.
func span(lines []string, line, endLine int) (from, to int, ok bool) {
	if line < 1 || line > len(lines) {
		return 0, 0, false
	}
	if endLine < line {
		endLine = line
	}
	return line - 1, min(endLine, len(lines)) - 1, true
}

// Anchor is the normalised content of lines line..endLine of a file
// (1-based, endLine 0 for a single line): whitespace runs collapsed, each
// line trimmed, blank lines dropped, joined with newlines. It is "" when
// line is outside the file or the span holds only blank lines.
func Anchor(lines []string, line, endLine int) string {
	from, to, ok := span(lines, line, endLine)
	if !ok {
		return ""
	}
	var out []string
	for _, l := range lines[from : to+1] {
		if n := normLine(l); n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "\n")
}

// surrounding is the first non-blank line before the span and the first
// after it, normalised ("" at the file's ends).
func surrounding(lines []string, from, to int) (before, after string) {
	for i := from - 1; i >= 0 && before == ""; i-- {
		before = normLine(lines[i])
	}
	for i := to + 1; i < len(lines) && after == ""; i++ {
		after = normLine(lines[i])
	}
	return before, after
}

// Key is aicr's fingerprint of a finding: a hash of the repo, the path,
// the category (case folded) and the anchored lines with one non-blank
// line of context either side, all normalised. The line number is not in
// it, so the same code moved down the file keeps its key, and neither is
// whitespace. It is "" when the anchored span is empty or outside the
// file (see MessageKey for that case).
func Key(repo, path, category string, lines []string, line, endLine int) string {
	anchor := Anchor(lines, line, endLine)
	if anchor == "" {
		return ""
	}
	from, to, _ := span(lines, line, endLine)
	before, after := surrounding(lines, from, to)
	return hashKey(repo, path, category, "code", before, anchor, after)
}

// MessageKey is the fingerprint of a finding whose anchored lines cannot
// be read (the file's text is not available, or the line is outside it):
// repo, path, category and the normalised message, so the same report
// still matches itself.
func MessageKey(repo, path, category, message string) string {
	return hashKey(repo, path, category, "message", normLine(message))
}

func hashKey(repo, path, category string, parts ...string) string {
	h := sha256.New()
	for _, p := range append([]string{repo, path, strings.ToLower(strings.TrimSpace(category))}, parts...) {
		// Length-prefixed, so no two lists of parts hash alike.
		h.Write([]byte{byte(len(p) >> 24), byte(len(p) >> 16), byte(len(p) >> 8), byte(len(p))})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:keyLen]
}

// lineDigestLen is how many hex digits of a line's SHA-256 an anchor
// digest keeps per line: enough that two different lines never pass for
// one, nothing a reader could turn back into the line.
const lineDigestLen = 16

func lineDigest(norm string) string {
	sum := sha256.Sum256([]byte(norm))
	return hex.EncodeToString(sum[:])[:lineDigestLen]
}

// AnchorDigest is how a finding keeps its anchor (Finding.Anchor): a
// digest of each normalised line of Anchor's result, one per line. The
// anchored code is often the very line that leaked a credential, and the
// audit database must not keep it after the run's copies of the code are
// gone; the digests still tell whether a later version holds the code
// (Locate). "" for "".
func AnchorDigest(anchor string) string {
	if anchor == "" {
		return ""
	}
	parts := strings.Split(anchor, "\n")
	for i, p := range parts {
		parts[i] = lineDigest(p)
	}
	return strings.Join(parts, "\n")
}

// Locate finds an anchor digest (AnchorDigest, as Finding.Anchor holds
// it) in lines, and returns the span of its first occurrence, blank
// lines inside it included; ok is false when the lines no longer contain
// it (the anchored code was rewritten or removed) or digest is "".
func Locate(lines []string, digest string) (line, endLine int, ok bool) {
	if digest == "" {
		return 0, 0, false
	}
	want := strings.Split(digest, "\n")
	type nonBlank struct {
		idx  int
		text string
	}
	var nb []nonBlank
	for i, l := range lines {
		if n := normLine(l); n != "" {
			nb = append(nb, nonBlank{i, lineDigest(n)})
		}
	}
	for i := 0; i+len(want) <= len(nb); i++ {
		match := true
		for j, w := range want {
			if nb[i+j].text != w {
				match = false
				break
			}
		}
		if match {
			return nb[i].idx + 1, nb[i+len(want)-1].idx + 1, true
		}
	}
	return 0, 0, false
}
