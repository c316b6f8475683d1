package p4

import (
	"bytes"
	"strings"
)

// ParseZtag splits `p4 -ztag` output into records. Lines before the first
// "... " line (and lines that cannot continue a value) are informational
// messages p4 prints untagged; they are returned separately.
//
// Tagged text is ambiguous where -G is not: a value may span lines, and
// the blank line p4 prints after each record is indistinguishable from a
// blank line at the end of a multi-line value. The rules, checked against
// real captures (../shared/fixtures/p4/ztag):
//   - a line not starting with "... " continues the previous value;
//   - a key already present in the current record starts a new record
//     (p4 never repeats a key inside one record), and the last blank line
//     before it was the record separator;
//   - a blank line after a field that cannot hold newlines (anything but
//     desc/data/Description) also ends the record: p4 annotate's header
//     record and its line records share no key;
//   - otherwise blank lines before a new key belong to the previous value
//     (a description's trailing newline).
func ParseZtag(out []byte) (records []Record, messages []string) {
	var cur *Record
	var last string // key whose value continues on untagged lines
	blanks := 0
	flush := func() {
		if cur != nil && len(cur.Keys) > 0 {
			records = append(records, *cur)
		}
		cur, last = nil, ""
	}
	text := string(out)
	text = strings.TrimSuffix(text, "\n")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			blanks++
			continue
		}
		if rest, ok := strings.CutPrefix(line, "... "); ok {
			key, val, _ := strings.Cut(rest, " ")
			if cur != nil && (cur.Has(key) || (blanks > 0 && !isTextKey(last))) {
				if blanks > 1 && last != "" {
					cur.Values[last] = append(cur.Values[last], bytes.Repeat([]byte("\n"), blanks-1)...)
				}
				flush()
			} else if cur != nil && blanks > 0 && last != "" {
				cur.Values[last] = append(cur.Values[last], bytes.Repeat([]byte("\n"), blanks)...)
			}
			blanks = 0
			if cur == nil {
				cur = &Record{Values: map[string][]byte{}}
			}
			cur.Set(key, []byte(val))
			last = key
			continue
		}
		if line == "..." {
			// A key-less tag line: nothing to attach it to.
			blanks = 0
			continue
		}
		if cur == nil || last == "" {
			messages = append(messages, line)
			blanks = 0
			continue
		}
		v := cur.Values[last]
		v = append(v, '\n')
		v = append(v, bytes.Repeat([]byte("\n"), blanks)...)
		cur.Values[last] = append(v, line...)
		blanks = 0
	}
	flush()
	return records, messages
}

// isTextKey reports whether a field can hold multi-line text whose
// trailing newline shows up as a blank line ("desc", "desc1", "data").
func isTextKey(k string) bool {
	k = strings.TrimRight(k, "0123456789,")
	switch k {
	case "desc", "data", "Description", "message":
		return true
	}
	return false
}
