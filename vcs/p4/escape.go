package p4

import (
	"errors"
	"fmt"
	"strings"
)

// Perforce stores the four characters it reserves for revision specifiers
// and wildcards escaped in depot file names ("@"→"%40", "#"→"%23",
// "*"→"%2A", "%"→"%25"), and every command prints names escaped. Only
// these four are ever escaped, so decoding must not touch anything else:
// a name may legitimately contain "%41" produced from "%2541".

// UnescapePath turns a depot path as p4 prints it into the file's real
// name. Malformed or non-reserved escapes are kept verbatim.
func UnescapePath(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			switch strings.ToUpper(p[i+1 : i+3]) {
			case "40":
				b.WriteByte('@')
				i += 2
				continue
			case "23":
				b.WriteByte('#')
				i += 2
				continue
			case "2A":
				b.WriteByte('*')
				i += 2
				continue
			case "25":
				b.WriteByte('%')
				i += 2
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// EscapePath is the inverse of UnescapePath: the form p4 expects on its
// command line for a real file name.
func EscapePath(p string) string {
	if !strings.ContainsAny(p, "@#*%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%':
			b.WriteString("%25")
		case '@':
			b.WriteString("%40")
		case '#':
			b.WriteString("%23")
		case '*':
			b.WriteString("%2A")
		default:
			b.WriteByte(p[i])
		}
	}
	return b.String()
}

// ErrBadDepotPath is wrapped when a path cannot be a depot file name.
var ErrBadDepotPath = errors.New("bad depot path")

// checkFileName rejects real (unescaped) depot-relative names that p4
// would read as something else than one file: "..." wildcards, empty or
// dot segments, control characters. Reserved characters are fine here
// because EscapePath neutralises them.
func checkFileName(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty path", ErrBadDepotPath)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%w: %q starts with /", ErrBadDepotPath, p)
	case strings.Contains(p, "..."):
		return fmt.Errorf("%w: %q contains the ... wildcard", ErrBadDepotPath, p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: %q contains a control character", ErrBadDepotPath, p)
		}
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q has an empty, . or .. segment", ErrBadDepotPath, p)
		}
	}
	return nil
}
