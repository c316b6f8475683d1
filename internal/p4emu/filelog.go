package p4emu

import (
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs/p4"
)

// `p4 filelog`: what the adapter asks to learn where a move/add came
// from, since describe does not say. The tagged record is the one of the
// -ztag capture p4_filelog_long_desc.ztag: depotFile, then per revision,
// newest first, revN changeN actionN typeN timeN userN clientN fileSizeN
// digestN descN, each followed by its integration records howN,M fileN,M
// srevN,M erevN,M (srev "#none" when the range starts at the first
// revision). The integration words are those p4 filelog documents:
// "moved from" and "moved into" for the two halves of a move, "branch
// from" for a branch. An integrate's word depends on how it was resolved
// (copy, merge, edit, ignored), which the depot does not record, so its
// record is left out rather than guessed. Only the tagged forms (-G,
// -ztag) are emulated: the adapter reads no other.

func (e *emu) filelog(args []string) {
	long, max := false, 0
	var specs []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-l", a == "-L":
			long = true
		case a == "-m":
			i++
			if i < len(args) {
				max, _ = strconv.Atoi(args[i])
			}
		case strings.HasPrefix(a, "-m"):
			max, _ = strconv.Atoi(strings.TrimPrefix(a, "-m"))
		case strings.HasPrefix(a, "-"):
		default:
			specs = append(specs, a)
		}
	}
	for _, arg := range specs {
		s := parseSpec(arg, e.d.maxCommit())
		h := e.d.history[s.path]
		var revs []*FileV
		for i := len(h) - 1; i >= 0; i-- {
			v := h[i]
			if v.Change.Num > s.change || (s.rev > 0 && v.Rev > s.rev) {
				continue
			}
			revs = append(revs, v)
			if max > 0 && len(revs) == max {
				break
			}
		}
		if len(revs) == 0 {
			e.err(arg+" - no such file(s).", sevWarn, genEmpty)
			continue
		}
		e.stat(e.filelogRecord(s.path, revs, long))
	}
}

// filelogRecord is one file's record over revs (newest first).
func (e *emu) filelogRecord(path string, revs []*FileV, long bool) p4.Record {
	r := kv("depotFile", p4.EscapePath(path))
	for n, v := range revs {
		ns := strconv.Itoa(n)
		f := v.File
		desc := v.Change.Desc
		if !long && len(desc) > 31 {
			// The same cut as the captured `p4 changes` without -l.
			desc = desc[:31]
		}
		r.Set("rev"+ns, []byte(strconv.Itoa(v.Rev)))
		r.Set("change"+ns, []byte(strconv.Itoa(v.Change.Num)))
		r.Set("action"+ns, []byte(f.Action))
		r.Set("type"+ns, []byte(f.Type))
		r.Set("time"+ns, []byte(strconv.FormatInt(v.Change.Time, 10)))
		r.Set("user"+ns, []byte(v.Change.User))
		r.Set("client"+ns, []byte(v.Change.Client))
		if !isDeleted(f.Action) {
			body := e.d.content(v)
			r.Set("fileSize"+ns, []byte(strconv.Itoa(len(body))))
			r.Set("digest"+ns, []byte(digest(body)))
		}
		r.Set("desc"+ns, []byte(desc))
		for m, in := range e.integrations(v) {
			nm := ns + "," + strconv.Itoa(m)
			r.Set("how"+nm, []byte(in.how))
			r.Set("file"+nm, []byte(p4.EscapePath(in.file)))
			r.Set("srev"+nm, []byte("#none"))
			r.Set("erev"+nm, []byte("#"+strconv.Itoa(in.erev)))
		}
	}
	return r
}

type integration struct {
	how  string
	file string
	erev int
}

// integrations are the records filelog shows under revision v.
func (e *emu) integrations(v *FileV) []integration {
	f := v.File
	switch f.Action {
	case "move/add", "branch":
		if f.From == "" {
			return nil
		}
		src := e.d.at(f.From, v.Change.Num-1)
		if src == nil {
			return nil
		}
		how := "branch from"
		if f.Action == "move/add" {
			how = "moved from"
		}
		return []integration{{how: how, file: f.From, erev: src.Rev}}
	case "move/delete":
		for _, g := range v.Change.Files {
			if g.Action == "move/add" && g.From == f.Path {
				return []integration{{how: "moved into", file: g.Path, erev: g.rev}}
			}
		}
	}
	return nil
}
