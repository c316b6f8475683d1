package p4emu

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/aicr-dev/aicr/vcs/p4"
)

// The p4 commands the emulator answers, each reproducing the captured
// output of the real client for the same request.

func (e *emu) info() {
	if e.d.Info != nil {
		e.stat(kv(e.d.Info...))
		return
	}
	pairs := []string{
		"userName", e.user, "clientName", orDefault(e.client, "*unknown*"),
		"clientCwd", "/", "peerAddress", "127.0.0.1:50000", "clientAddress", "127.0.0.1",
		"serverAddress", "localhost:1666", "serverRoot", "/p4/root",
		"serverDate", "2026/01/01 00:00:00 +0000 UTC", "tzoffset", "0",
		"serverUptime", "00:00:01", "serverVersion", "P4D/LINUX26X86_64/2023.1/2468153 (2023/05/02)",
		"ServerID", "emu", "serverServices", "standard", "serverLicense", "none",
		"caseHandling", "sensitive",
	}
	if e.d.Unicode {
		pairs = append(pairs, "unicode", "enabled")
	}
	e.stat(kv(pairs...))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (e *emu) changeNum(s string) (*Change, bool) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, false
	}
	c, ok := e.d.byNum[n]
	return c, ok
}

// changePath is the "path" field of changes/describe: the files' common
// directory plus "/*", or their common prefix plus "...".
func changePath(c *Change) string {
	if len(c.Files) == 0 {
		return ""
	}
	prefix := p4.EscapePath(c.Files[0].Path)
	sameDir := true
	dir0 := prefix[:strings.LastIndex(prefix, "/")]
	for _, f := range c.Files[1:] {
		p := p4.EscapePath(f.Path)
		for !strings.HasPrefix(p, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
		if p[:strings.LastIndex(p, "/")] != dir0 {
			sameDir = false
		}
	}
	if sameDir {
		return dir0 + "/*"
	}
	return prefix + "..."
}

func digest(b []byte) string { return fmt.Sprintf("%X", md5.Sum(b)) }

func (e *emu) describe(args []string) {
	short, du, shelved := false, false, false
	var nums []string
	for _, a := range args {
		switch {
		case a == "-S":
			shelved = true
		case a == "-s":
			short = true
		case a == "-du":
			du = true
		case strings.HasPrefix(a, "-"):
		default:
			nums = append(nums, a)
		}
	}
	for _, n := range nums {
		c, ok := e.changeNum(n)
		if !ok {
			e.err("Change "+n+" unknown.", sevFailed, genUnknown)
			continue
		}
		if shelved && e.describeShelf(c, short || !du) {
			continue
		}
		if e.mode == "text" {
			e.describeText(c, short || !du)
			continue
		}
		r := kv("change", strconv.Itoa(c.Num), "user", c.User, "client", c.Client,
			"time", strconv.FormatInt(c.Time, 10), "desc", c.Desc, "status", c.status(),
			"changeType", "public", "path", changePath(c))
		for i, f := range c.Files {
			is := strconv.Itoa(i)
			r.Set("depotFile"+is, []byte(p4.EscapePath(f.Path)))
			r.Set("action"+is, []byte(f.Action))
			r.Set("type"+is, []byte(f.Type))
			r.Set("rev"+is, []byte(strconv.Itoa(f.rev)))
			if !isDeleted(f.Action) {
				body := e.d.content(&FileV{Change: c, File: f, Rev: f.rev})
				r.Set("fileSize"+is, []byte(strconv.Itoa(len(body))))
				r.Set("digest"+is, []byte(digest(body)))
			}
		}
		e.stat(r)
	}
}

// describeText prints the layout of the published `p4 describe -du`
// example: header, tab-indented description, "Affected files ...",
// "Differences ..." with one "==== file#rev (type) ====" section per
// edited text file; added, branched and deleted files get no section.
func (e *emu) describeText(c *Change, short bool) {
	w := e.stdout
	t := time.Unix(c.Time, 0).UTC().Format("2006/01/02 15:04:05")
	fmt.Fprintf(w, "Change %d by %s@%s on %s\n\n", c.Num, c.User, c.Client, t)
	for _, l := range strings.Split(strings.TrimRight(c.Desc, "\n"), "\n") {
		fmt.Fprintf(w, "\t%s\n", l)
	}
	fmt.Fprintf(w, "\nAffected files ...\n\n")
	for _, f := range c.Files {
		fmt.Fprintf(w, "... %s#%d %s\n", p4.EscapePath(f.Path), f.rev, f.Action)
	}
	if short {
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "\nDifferences ...\n\n")
	for _, f := range c.Files {
		if f.Action != "edit" && f.Action != "integrate" {
			continue
		}
		fmt.Fprintf(w, "==== %s#%d (%s) ====\n\n", p4.EscapePath(f.Path), f.rev, f.Type)
		if !isTextType(f.Type) || f.rev < 2 {
			continue
		}
		prev := e.d.history[f.Path][f.rev-2]
		hunks := unifiedHunks(splitLinesKeep(e.d.content(prev)), splitLinesKeep(e.d.content(&FileV{Change: c, File: f, Rev: f.rev})))
		if hunks != "" {
			fmt.Fprint(w, hunks)
			fmt.Fprintln(w)
		}
	}
}

// fileSpec splits "//path@=N", "//path@N", "//path#R" or "//path".
type fileSpec struct {
	path     string // real (unescaped) name or a pattern
	exact    bool   // @=N
	change   int    // 0: head
	rev      int
	rangeLow int // @>N
}

func (e *emu) print(args []string) {
	quiet := false
	for _, a := range args {
		if a == "-q" {
			quiet = true
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		vs, msg := e.resolve(a)
		if msg != "" {
			e.err(msg, sevWarn, genEmpty)
			continue
		}
		for _, v := range vs {
			e.printOne(v, quiet)
		}
	}
}

func (e *emu) printOne(v *FileV, quiet bool) {
	f := v.File
	body := e.d.content(v)
	out := e.render(v, body)
	if e.mode == "text" {
		if !quiet {
			fmt.Fprintf(e.stdout, "%s#%d - %s change %d (%s)\n", p4.EscapePath(f.Path), v.Rev, f.Action, v.Change.Num, f.Type)
		}
		if !isDeleted(f.Action) {
			e.stdout.Write(out)
		}
		return
	}
	r := kv("depotFile", p4.EscapePath(f.Path), "rev", strconv.Itoa(v.Rev), "change", strconv.Itoa(v.Change.Num),
		"action", f.Action, "type", f.Type, "time", strconv.FormatInt(v.Change.Time, 10))
	if !isDeleted(f.Action) {
		r.Set("fileSize", []byte(strconv.Itoa(len(body))))
	}
	e.stat(r)
	if isDeleted(f.Action) {
		return
	}
	code := "text"
	if !isTextType(f.Type) && baseType(f.Type) != "symlink" {
		code = "binary"
	}
	e.data(code, out)
}

// render is a revision's bytes as the client writes them: keywords
// expanded for +k, a BOM for utf8, UTF-16LE with BOM for utf16.
func (e *emu) render(v *FileV, body []byte) []byte {
	f := v.File
	if strings.Contains(f.Type, "+k") || strings.HasPrefix(f.Type, "k") {
		s := string(body)
		s = strings.ReplaceAll(s, "$Id$", fmt.Sprintf("$Id: %s#%d $", p4.EscapePath(f.Path), v.Rev))
		s = strings.ReplaceAll(s, "$Change$", fmt.Sprintf("$Change: %d $", v.Change.Num))
		s = strings.ReplaceAll(s, "$Revision$", fmt.Sprintf("$Revision: #%d $", v.Rev))
		body = []byte(s)
	}
	switch baseType(f.Type) {
	case "utf8":
		return append([]byte("\xef\xbb\xbf"), body...)
	case "utf16":
		u := utf16.Encode([]rune(string(body)))
		out := []byte{0xff, 0xfe}
		for _, c := range u {
			out = binary.LittleEndian.AppendUint16(out, c)
		}
		return out
	}
	return body
}

func (e *emu) annotate(args []string) {
	byChange, quiet := false, false
	for _, a := range args {
		switch {
		case a == "-c":
			byChange = true
		case a == "-q":
			quiet = true
		case strings.HasPrefix(a, "-"):
		default:
			vs, msg := e.resolve(a)
			if msg != "" {
				e.err(msg, sevWarn, genEmpty)
				continue
			}
			for _, v := range vs {
				e.annotateOne(v, byChange, quiet)
			}
		}
	}
}

func (e *emu) annotateOne(v *FileV, byChange, quiet bool) {
	f := v.File
	if !quiet {
		e.stat(kv("depotFile", p4.EscapePath(f.Path), "rev", strconv.Itoa(v.Rev), "change", strconv.Itoa(v.Change.Num),
			"action", f.Action, "type", f.Type, "time", strconv.FormatInt(v.Change.Time, 10)))
	}
	if isDeleted(f.Action) || !isTextType(f.Type) {
		return
	}
	// Walk the history, carrying each line's origin through every diff.
	type origin struct{ rev, change int }
	var lines []string
	var from []origin
	for _, h := range e.d.history[f.Path][:v.Rev] {
		next := splitLinesKeep(e.d.content(h))
		var nf []origin
		for _, o := range lcsOps(lines, next) {
			switch o.kind {
			case ' ':
				nf = append(nf, from[o.a])
			case '+':
				nf = append(nf, origin{h.Rev, h.Change.Num})
			}
		}
		lines, from = next, nf
	}
	for i, l := range lines {
		upper, lower := strconv.Itoa(v.Rev), strconv.Itoa(from[i].rev)
		if byChange {
			upper, lower = strconv.Itoa(v.Change.Num), strconv.Itoa(from[i].change)
		}
		if e.mode == "text" {
			fmt.Fprintf(e.stdout, "%s: %s", lower, l)
			continue
		}
		e.stat(kv("upper", upper, "lower", lower, "data", l))
	}
}

func (e *emu) changes(args []string) {
	long, max := false, 0
	status := ""
	var specs []fileSpec
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-l", a == "-L":
			long = true
		case a == "-s":
			i++
			status = args[i]
		case a == "-m":
			i++
			max, _ = strconv.Atoi(args[i])
		case strings.HasPrefix(a, "-"):
		default:
			specs = append(specs, parseSpec(a, e.d.maxCommit()))
		}
	}
	var out []*Change
	for i := len(e.d.Changes) - 1; i >= 0; i-- {
		c := e.d.Changes[i]
		if status != "" && c.status() != status {
			continue
		}
		if len(specs) > 0 && !touches(c, specs) {
			continue
		}
		out = append(out, c)
		if max > 0 && len(out) == max {
			break
		}
	}
	for _, c := range out {
		desc := c.Desc
		if !long && len(desc) > 31 {
			desc = desc[:31]
		}
		r := kv("change", strconv.Itoa(c.Num), "time", strconv.FormatInt(c.Time, 10), "user", c.User,
			"client", c.Client, "status", c.status(), "changeType", "public", "path", changePath(c), "desc", desc)
		if e.mode == "text" {
			t := time.Unix(c.Time, 0).UTC().Format("2006/01/02")
			fmt.Fprintf(e.stdout, "Change %d on %s by %s@%s '%s'\n", c.Num, t, c.User, c.Client, strings.ReplaceAll(strings.TrimRight(desc, "\n"), "\n", " "))
			continue
		}
		e.stat(r)
	}
}

func touches(c *Change, specs []fileSpec) bool {
	for _, s := range specs {
		if c.Num <= s.rangeLow || c.Num > s.change {
			continue
		}
		for _, f := range c.Files {
			if wild(p4.EscapePath(s.path), p4.EscapePath(f.Path)) {
				return true
			}
		}
	}
	return false
}

func (e *emu) counter(args []string) {
	var pos []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			pos = append(pos, a)
		}
	}
	if len(pos) == 0 {
		e.err("Usage: counter [ -d | -i | -m ] [ -f ] name [ value ]", sevFailed, genUsage)
		return
	}
	name := pos[0]
	if len(pos) == 2 {
		if name == "change" || name == "maxCommitChange" {
			e.err("Protections table is empty.", sevFailed, genIllegal)
			return
		}
		if e.d.Counters == nil {
			e.d.Counters = map[string]string{}
		}
		e.d.Counters[name] = pos[1]
		if e.save != nil {
			if err := e.save(); err != nil {
				e.err(err.Error(), sevFailed, genUnknown)
				return
			}
		}
		e.infoMsg("Counter " + name + " set.")
		return
	}
	val := e.d.Counters[name]
	switch name {
	case "maxCommitChange":
		val = strconv.Itoa(e.d.maxCommit())
	case "change":
		if n := len(e.d.Changes); n > 0 {
			val = strconv.Itoa(e.d.Changes[n-1].Num)
		}
	}
	if val == "" {
		val = "0"
	}
	if e.mode == "text" {
		fmt.Fprintln(e.stdout, val)
		return
	}
	e.stat(kv("counter", name, "value", val))
}

func (e *emu) userSpec(args []string) {
	name := e.user
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			name = a
		}
	}
	u, ok := e.d.Users[name]
	if !ok {
		// p4 user -o of an unknown user prints a default spec with no
		// Update/Access dates.
		e.stat(kv("User", name, "Email", name+"@emu-host", "FullName", name, "Type", "standard"))
		return
	}
	e.stat(kv("User", name, "Update", time.Unix(u.Update, 0).UTC().Format("2006/01/02 15:04:05"),
		"Access", time.Unix(u.Access, 0).UTC().Format("2006/01/02 15:04:05"),
		"FullName", u.FullName, "Email", u.Email, "Type", "standard"))
}

func (e *emu) login(args []string) {
	for _, a := range args {
		if a == "-s" {
			e.loginStatus()
			return
		}
	}
	e.err("login: only -s is emulated", sevFailed, genUsage)
}
