package p4emu

import (
	"sort"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs/p4"
)

// File specs: depot paths with wildcards and revision or change
// specifiers, resolved against the emulated depot.

func parseSpec(arg string, head int) fileSpec {
	s := fileSpec{change: head}
	p, rev, hasAt := strings.Cut(arg, "@")
	if !hasAt {
		if q, r, ok := strings.Cut(arg, "#"); ok {
			p = q
			s.rev, _ = strconv.Atoi(r)
		}
	}
	s.path = p4.UnescapePath(p)
	if hasAt {
		lo, hi, isRange := strings.Cut(rev, ",")
		switch {
		case strings.HasPrefix(lo, ">"):
			s.rangeLow, _ = strconv.Atoi(lo[1:])
		case strings.HasPrefix(lo, "="):
			s.exact = true
			s.change, _ = strconv.Atoi(lo[1:])
		default:
			s.change, _ = strconv.Atoi(lo)
			if isRange {
				s.rangeLow = s.change - 1
				s.change = head
			}
		}
		if isRange {
			s.change, _ = strconv.Atoi(strings.TrimPrefix(hi, "@"))
		}
	}
	return s
}

// match reports whether the real name p matches pattern (p4 wildcards
// "..." and "*"; the pattern is compared in escaped form as p4 does).
func match(pattern, p string) bool {
	return wild(p4.EscapePath(pattern), p4.EscapePath(p))
}

func wild(pat, s string) bool {
	for len(pat) > 0 {
		switch {
		case strings.HasPrefix(pat, "..."):
			rest := pat[3:]
			for i := len(s); i >= 0; i-- {
				if wild(rest, s[i:]) {
					return true
				}
			}
			return false
		case strings.HasPrefix(pat, "%2A"), pat[0] == '*':
			// "*" arrives escaped by EscapePath; treat it as the wildcard.
			rest := pat[1:]
			if pat[0] == '%' {
				rest = pat[3:]
			}
			for i := 0; i <= len(s); i++ {
				if wild(rest, s[i:]) {
					return true
				}
				if i < len(s) && s[i] == '/' {
					break
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

func (e *emu) resolve(arg string) ([]*FileV, string) {
	s := parseSpec(arg, e.d.maxCommit())
	if vs, ok := e.resolveShelf(s); ok {
		if len(vs) == 0 {
			return nil, arg + " - no such file(s)."
		}
		return vs, ""
	}
	var paths []string
	if strings.Contains(s.path, "...") {
		for p := range e.d.history {
			if wild(p4.EscapePath(s.path), p4.EscapePath(p)) {
				paths = append(paths, p)
			}
		}
		sort.Strings(paths)
	} else {
		paths = []string{s.path}
	}
	var out []*FileV
	for _, p := range paths {
		h := e.d.history[p]
		var v *FileV
		switch {
		case s.rev > 0:
			if s.rev <= len(h) {
				v = h[s.rev-1]
			}
		case s.exact:
			for _, x := range h {
				if x.Change.Num == s.change {
					v = x
				}
			}
		default:
			v = e.d.at(p, s.change)
		}
		if v != nil {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		if len(e.d.history[s.path]) > 0 {
			return nil, arg + " - no file(s) at that changelist number."
		}
		return nil, arg + " - no such file(s)."
	}
	return out, ""
}
