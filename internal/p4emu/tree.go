package p4emu

import (
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs/p4"
)

// `p4 files` and `p4 dirs`: what the adapter lists a directory with. The
// record shapes are p4's: files prints depotFile, rev, change, action,
// type and time per file (the same keys as the print header, as in the
// -ztag captures), dirs prints one "dir" per subdirectory, and a pattern
// that matches nothing is the "no such file(s)." warning.

// livePaths are the paths matching the spec's path pattern (escaped,
// wildcards "*" and "...") with their newest revision at its change.
func (e *emu) livePaths(arg string) ([]*FileV, fileSpec) {
	s := parseSpec(arg, e.d.maxCommit())
	raw := arg
	if i := strings.IndexAny(raw, "@#"); i >= 0 {
		raw = raw[:i]
	}
	var out []*FileV
	for p := range e.d.history {
		if !wild(raw, p4.EscapePath(p)) {
			continue
		}
		if v := e.d.at(p, s.change); v != nil {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File.Path < out[j].File.Path })
	return out, s
}

func (e *emu) files(args []string) {
	existing := false
	limit := -1
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-e" {
			existing = true
			continue
		}
		if strings.HasPrefix(a, "-m") {
			// -m N or -mN: at most N files per argument (aicr doctor).
			n := strings.TrimPrefix(a, "-m")
			if n == "" && i+1 < len(args) {
				i++
				n = args[i]
			}
			limit, _ = strconv.Atoi(n)
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		vs, _ := e.livePaths(a)
		n := 0
		for _, v := range vs {
			f := v.File
			if existing && isDeleted(f.Action) {
				continue
			}
			if limit >= 0 && n >= limit {
				break
			}
			n++
			e.stat(kv("depotFile", p4.EscapePath(f.Path), "rev", strconv.Itoa(v.Rev), "change", strconv.Itoa(v.Change.Num),
				"action", f.Action, "type", f.Type, "time", strconv.FormatInt(v.Change.Time, 10)))
		}
		if n == 0 {
			e.err(a+" - no such file(s).", sevWarn, genEmpty)
		}
	}
}

func (e *emu) dirs(args []string) {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		s := parseSpec(a, e.d.maxCommit())
		raw := a
		if i := strings.IndexAny(raw, "@#"); i >= 0 {
			raw = raw[:i]
		}
		found := map[string]bool{}
		for p := range e.d.history {
			v := e.d.at(p, s.change)
			if v == nil || isDeleted(v.File.Action) {
				continue // p4 dirs leaves out directories of deleted files unless -D
			}
			// path.Dir would clean the leading "//" away.
			for d := path.Dir(strings.TrimPrefix(p, "//")); d != "." && d != "/"; d = path.Dir(d) {
				if wild(raw, p4.EscapePath("//"+d)) {
					found["//"+d] = true
				}
			}
		}
		if len(found) == 0 {
			e.err(a+" - no such file(s).", sevWarn, genEmpty)
			continue
		}
		ds := make([]string, 0, len(found))
		for d := range found {
			ds = append(ds, d)
		}
		sort.Strings(ds)
		for _, d := range ds {
			e.stat(kv("dir", p4.EscapePath(d)))
		}
	}
}
