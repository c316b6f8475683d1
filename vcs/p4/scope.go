package p4

import "strings"

// scope applies depot_paths the way a client view does: patterns are
// tried in order and the last one that matches decides, so
// "-//depot/main/vendor/..." after "//depot/main/..." carves a hole.
// Patterns and names are compared in p4's escaped form, as p4 does.
type scope struct {
	lines []scopeLine
}

type scopeLine struct {
	exclude bool
	pattern string
}

func newScope(paths []string) scope {
	var s scope
	for _, p := range paths {
		ex := strings.HasPrefix(p, "-")
		s.lines = append(s.lines, scopeLine{exclude: ex, pattern: strings.TrimPrefix(p, "-")})
	}
	return s
}

// contains reports whether the escaped depot path is reviewed.
func (s scope) contains(depotPath string) bool {
	in := false
	for _, l := range s.lines {
		if wildMatch(l.pattern, depotPath) {
			in = !l.exclude
		}
	}
	return in
}

// includes returns the include patterns, for commands such as p4
// changes that take paths but not exclusions.
func (s scope) includes() []string {
	var out []string
	for _, l := range s.lines {
		if !l.exclude {
			out = append(out, l.pattern)
		}
	}
	return out
}

// wildMatch matches p4 wildcards: "..." spans directories, "*" does not.
func wildMatch(pat, s string) bool {
	for len(pat) > 0 {
		if strings.HasPrefix(pat, "...") {
			rest := pat[3:]
			for i := len(s); i >= 0; i-- {
				if wildMatch(rest, s[i:]) {
					return true
				}
			}
			return false
		}
		if pat[0] == '*' {
			for i := 0; i <= len(s); i++ {
				if wildMatch(pat[1:], s[i:]) {
					return true
				}
				if i < len(s) && s[i] == '/' {
					return false
				}
			}
			return false
		}
		if len(s) == 0 || s[0] != pat[0] {
			return false
		}
		pat, s = pat[1:], s[1:]
	}
	return len(s) == 0
}
