package p4

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/aicr-dev/aicr/vcs"
)

// Skip reasons specific to Perforce, next to vcs.Skip*.
const (
	SkipOutOfScope = "outside depot_paths"
	SkipSymlink    = "symlink"
	SkipPurged     = "purged"
	SkipArchived   = "archived"
	SkipBadName    = "unreviewable name"
)

// Adapter reads submitted changelists from one Perforce server. It is
// safe for concurrent use.
type Adapter struct {
	cfg    Config
	bin    string
	scope  scope
	filter vcs.Filter

	mu      sync.Mutex
	unicode *bool             // cached answer of p4 -ztag info
	info    *infoCall         // the p4 info in flight, if any
	emails  map[string]string // cached p4 user -o Email
}

var (
	_ vcs.Adapter = (*Adapter)(nil)
	_ vcs.Lister  = (*Adapter)(nil)
)

// New validates cfg and finds the p4 client. It does not contact the
// server; the first command does.
func New(cfg Config) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("p4 config: %w", err)
	}
	cfg = cfg.withDefaults()
	bin, err := exec.LookPath(cfg.P4Path)
	if err != nil {
		return nil, fmt.Errorf("%w: p4 client %q not found: install Helix Core's p4 command-line client, or set p4_path: %v",
			vcs.ErrToolMissing, cfg.P4Path, err)
	}
	return &Adapter{
		cfg:    cfg,
		bin:    bin,
		scope:  newScope(cfg.DepotPaths),
		filter: cfg.Scope.Filter(),
		emails: map[string]string{},
	}, nil
}

// isUnicode asks the server once whether it runs in unicode mode; such
// servers refuse clients that do not name a charset, and send text in it.
func (a *Adapter) isUnicode(ctx context.Context) (bool, error) {
	switch a.cfg.Charset {
	case "utf8":
		return true, nil
	case "none":
		return false, nil
	}
	a.mu.Lock()
	if a.unicode != nil {
		uni := *a.unicode
		a.mu.Unlock()
		return uni, nil
	}
	call := a.info
	if call == nil {
		// One p4 info for every concurrent first fetch. It runs for no
		// caller in particular, so that one caller giving up does not
		// fail the others; command_timeout bounds it.
		call = &infoCall{done: make(chan struct{})}
		a.info = call
		go a.askInfo(context.WithoutCancel(ctx), call)
	}
	a.mu.Unlock()
	// No lock is held while p4 runs: a caller waits no longer than its
	// own context allows, however long the server takes.
	select {
	case <-call.done:
		return call.unicode, call.err
	case <-ctx.Done():
		return false, fmt.Errorf("p4 info: %w", ctx.Err())
	}
}

// infoCall is the one p4 info in flight.
type infoCall struct {
	done    chan struct{}
	unicode bool
	err     error
}

// askInfo runs p4 -ztag info, publishes the answer to the callers waiting
// on call and caches it; a failure is not cached, the next fetch asks again.
func (a *Adapter) askInfo(ctx context.Context, call *infoCall) {
	call.unicode, call.err = a.runInfo(ctx)
	a.mu.Lock()
	if call.err == nil {
		uni := call.unicode
		a.unicode = &uni
	}
	a.info = nil
	a.mu.Unlock()
	close(call.done)
}

func (a *Adapter) runInfo(ctx context.Context) (bool, error) {
	// info is the one command a unicode server answers without -C.
	cmd, err := a.command(ctx, []string{"-ztag"}, "info")
	if err != nil {
		return false, err
	}
	defer cmd.cancel()
	var stderr boundedBuffer
	stderr.max = maxStderr
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if err := cmd.ended(); err != nil {
			return false, err
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return false, a.startError(err)
		}
		return false, a.authError(&cmdError{cmd: "info", msgs: []serverError{{msg: strings.TrimSpace(stderr.String()), severity: 3}}, err: err})
	}
	recs, _ := ParseZtag(out)
	if len(recs) == 0 {
		return false, fmt.Errorf("p4 info: no tagged output")
	}
	return recs[0].Get("unicode") == "enabled", nil
}

// vcsPath maps an escaped depot path to the change's path: unescaped,
// without the leading "//".
func vcsPath(depotFile string) string {
	return strings.TrimPrefix(UnescapePath(depotFile), "//")
}

// depotFile is the inverse of vcsPath: the escaped name p4 accepts.
func depotFile(path string) string { return "//" + EscapePath(path) }

func parseChange(rev string) (int, error) {
	n, err := strconv.Atoi(rev)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %q is not a positive changelist number", vcs.ErrBadRevision, rev)
	}
	return n, nil
}

// describedFile is one file of describe -s with what Fetch decided.
type describedFile struct {
	depot  string // escaped depot path
	action string
	typ    string
	rev    string
	size   int64
	fc     *vcs.FileChange
}

// Fetch reads submitted changelist rev into dir (see vcs.Adapter) with a
// fixed number of p4 processes whatever the file count: describe -s
// (metadata), describe -du (diffs of edits, only when there are edits),
// and print (content of every reviewable file, in batch_size batches).
func (a *Adapter) Fetch(ctx context.Context, rev string, dst vcs.Dest) (*vcs.Change, error) {
	n, err := parseChange(rev)
	if err != nil {
		return nil, err
	}
	recs, _, err := a.runG(ctx, nil, "describe", "-s", strconv.Itoa(n))
	if p4Says(err, "unknown.") || (err == nil && len(recs) == 0) {
		return nil, fmt.Errorf("%w: change %d", vcs.ErrNoSuchRevision, n)
	}
	if err != nil {
		return nil, err
	}
	d := recs[0]
	if st := d.Get("status"); st != "submitted" {
		return nil, fmt.Errorf("%w: change %d is %s, not submitted", vcs.ErrNoSuchRevision, n, st)
	}
	change := &vcs.Change{VCS: vcs.KindP4, Revision: strconv.Itoa(n), Author: d.Get("user"), Description: d.Get("desc")}
	if t, err := strconv.ParseInt(d.Get("time"), 10, 64); err == nil {
		change.Date = time.Unix(t, 0).UTC()
	}
	files := a.classify(d)
	var hunks map[string][]byte
	for _, f := range files {
		if f.fc.Skipped == "" && f.fc.Action == vcs.ActionModify {
			out, err := a.runText(ctx, nil, "describe", "-du", strconv.Itoa(n))
			if err != nil {
				return nil, err
			}
			if hunks, err = parseDescribeDiff(out); err != nil {
				return nil, fmt.Errorf("p4 describe -du %d: %w", n, err)
			}
			break
		}
	}
	contents, err := a.printFiles(ctx, n, files)
	if err != nil {
		return nil, err
	}
	var patch bytes.Buffer
	for _, f := range files {
		if f.fc.Skipped != "" {
			continue
		}
		body, ok := contents[f.depot]
		if !ok {
			f.fc.Skipped = vcs.SkipDeleted
			continue
		}
		text, isText := decodeContent(f.typ, body)
		if !isText {
			f.fc.Binary, f.fc.Skipped = true, vcs.SkipBinary
			continue
		}
		path, err := srcPath(dst, f.fc.Path)
		if err != nil {
			f.fc.Skipped = SkipBadName
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("create dir: %w", err)
		}
		if err := os.WriteFile(path, text, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.fc.Path, err)
		}
		writeSection(&patch, f, text, hunks[f.depot])
	}
	if err := os.WriteFile(dst.DiffPath(), patch.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("write diff: %w", err)
	}
	diffs, err := vcs.ParseDiff(patch.Bytes())
	if err != nil {
		return nil, fmt.Errorf("parse diff: %w", err)
	}
	for _, f := range files {
		if d, ok := diffs[f.fc.Path]; ok && f.fc.Skipped == "" {
			f.fc.Added, f.fc.Hunks = d.Added, d.Hunks
		}
		change.Files = append(change.Files, *f.fc)
	}
	return change, nil
}

// classify turns describe's numbered fields into files and decides,
// before anything is fetched, which are reviewed and why others are not.
func (a *Adapter) classify(d Record) []*describedFile {
	var files []*describedFile
	for i := 0; ; i++ {
		is := strconv.Itoa(i)
		if !d.Has("depotFile" + is) {
			break
		}
		f := &describedFile{
			depot:  d.Get("depotFile" + is),
			action: d.Get("action" + is),
			typ:    d.Get("type" + is),
			rev:    d.Get("rev" + is),
		}
		f.size, _ = strconv.ParseInt(d.Get("fileSize"+is), 10, 64)
		fc := &vcs.FileChange{Path: vcsPath(f.depot), NodeKind: vcs.NodeFile, Action: mapAction(f.action)}
		f.fc = fc
		base := baseType(f.typ)
		switch {
		case !a.scope.contains(f.depot):
			fc.Skipped = SkipOutOfScope
		case !a.filter.Match(fc.Path):
			fc.Skipped = vcs.SkipExcluded
		case checkFileName(fc.Path) != nil:
			fc.Skipped = SkipBadName
		case f.action == "purge":
			fc.Skipped = SkipPurged
		case f.action == "archive":
			fc.Skipped = SkipArchived
		case fc.Action == vcs.ActionDelete:
			fc.Skipped = vcs.SkipDeleted
		case base == "symlink":
			fc.Skipped = SkipSymlink
		case !isTextType(base):
			fc.Binary, fc.Skipped = true, vcs.SkipBinary
		}
		files = append(files, f)
	}
	// describe gives every size, so the whole scope applies before any
	// content is printed.
	fcs := make([]*vcs.FileChange, len(files))
	sizes := make(map[*vcs.FileChange]int64, len(files))
	for i, f := range files {
		fcs[i], sizes[f.fc] = f.fc, f.size
	}
	a.cfg.Scope.Apply(fcs, func(fc *vcs.FileChange) int64 { return sizes[fc] })
	return files
}

// mapAction is the review behaviour of each p4 action (docs/perforce.md).
func mapAction(action string) vcs.Action {
	switch action {
	case "add", "branch", "move/add", "import":
		return vcs.ActionAdd
	case "delete", "move/delete", "purge", "archive":
		return vcs.ActionDelete
	}
	return vcs.ActionModify // edit, integrate and anything newer
}

// baseType is the file type without modifiers, mapping the old
// single-word aliases (ktext, xbinary...) to their base.
func baseType(t string) string {
	b, _, _ := strings.Cut(t, "+")
	switch b {
	case "ktext", "xtext", "kxtext", "ltext", "ctext":
		return "text"
	case "xbinary", "ubinary", "cxbinary", "tempobj", "ctempobj", "xtempobj", "uxbinary":
		return "binary"
	case "xunicode":
		return "unicode"
	case "xutf16":
		return "utf16"
	case "xutf8":
		return "utf8"
	}
	return b
}

func isTextType(base string) bool {
	switch base {
	case "text", "unicode", "utf8", "utf16":
		return true
	}
	return false
}

// printFiles fetches the reviewable files with `p4 -G -x args print`, one
// process per batch_size files, and returns content per escaped path.
func (a *Adapter) printFiles(ctx context.Context, change int, files []*describedFile) (map[string][]byte, error) {
	var specs []string
	for _, f := range files {
		if f.fc.Skipped == "" {
			specs = append(specs, f.depot+"@="+strconv.Itoa(change))
		}
	}
	out := map[string][]byte{}
	if len(specs) == 0 {
		return out, nil
	}
	tmp, err := os.MkdirTemp("", "aicr-p4-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for start := 0; start < len(specs); start += a.cfg.BatchSize {
		batch := specs[start:min(start+a.cfg.BatchSize, len(specs))]
		argFile := filepath.Join(tmp, "args")
		// -x reads one argument per line, so names need no quoting and the
		// command line stays short for thousands of files.
		if err := os.WriteFile(argFile, []byte(strings.Join(batch, "\n")+"\n"), 0o600); err != nil {
			return nil, err
		}
		recs, _, err := a.runG(ctx, []string{"-x", argFile}, "print")
		if err != nil {
			return nil, err
		}
		collectPrint(recs, out)
	}
	return out, nil
}

// collectPrint joins each file's text/binary records after its stat
// record. A stat record with no data (a deleted revision) yields nothing.
func collectPrint(recs []Record, out map[string][]byte) {
	cur := ""
	for _, r := range recs {
		switch r.Code() {
		case "stat":
			cur = r.Get("depotFile")
			if !isDeletedAction(r.Get("action")) {
				if _, ok := out[cur]; !ok {
					out[cur] = []byte{}
				}
			}
		case "text", "binary":
			if cur != "" {
				out[cur] = append(out[cur], r.Values["data"]...)
			}
		}
	}
}

func isDeletedAction(a string) bool {
	return mapAction(a) == vcs.ActionDelete
}

// decodeContent turns printed bytes into the UTF-8 text reviewed: BOMs
// stripped, UTF-16 decoded. isText is false for content that is not text
// after all (NUL bytes in a "text" file).
func decodeContent(typ string, b []byte) ([]byte, bool) {
	switch {
	case bytes.HasPrefix(b, []byte{0xef, 0xbb, 0xbf}):
		b = b[3:]
	case bytes.HasPrefix(b, []byte{0xff, 0xfe}), bytes.HasPrefix(b, []byte{0xfe, 0xff}):
		b = decodeUTF16(b)
	case baseType(typ) == "utf16" && len(b)%2 == 0 && !utf8.Valid(b):
		b = decodeUTF16(append([]byte{0xff, 0xfe}, b...))
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, false
	}
	return b, true
}

func decodeUTF16(b []byte) []byte {
	order := binary.ByteOrder(binary.LittleEndian)
	if b[0] == 0xfe {
		order = binary.BigEndian
	}
	b = b[2:]
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		u = append(u, order.Uint16(b[i:]))
	}
	return []byte(string(utf16.Decode(u)))
}

// writeSection appends one file's section to diff.patch: the hunks of
// describe -du for edits, or the whole content as added lines for files
// without a previous revision of their own (add, branch, move/add,
// import) or without a diff section.
func writeSection(w *bytes.Buffer, f *describedFile, text, hunks []byte) {
	fmt.Fprintf(w, "Index: %s\n", f.fc.Path)
	w.WriteString("===================================================================\n")
	if f.fc.Action == vcs.ActionModify {
		fmt.Fprintf(w, "--- %s\t(%s#%d)\n+++ %s\t(%s#%s)\n", f.fc.Path, f.depot, prevRev(f.rev), f.fc.Path, f.depot, f.rev)
		w.Write(hunks)
		return
	}
	lines := splitLines(text)
	fmt.Fprintf(w, "--- /dev/null\n+++ %s\t(%s#%s)\n", f.fc.Path, f.depot, f.rev)
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "@@ -0,0 +1,%d @@\n", len(lines))
	for _, l := range lines {
		w.WriteByte('+')
		w.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			w.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

func prevRev(rev string) int {
	n, _ := strconv.Atoi(rev)
	return n - 1
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := strings.SplitAfter(string(b), "\n")
	if s[len(s)-1] == "" {
		s = s[:len(s)-1]
	}
	return s
}

// parseDescribeDiff reads the "Differences ..." part of `p4 describe -du`
// and returns each file's hunks keyed by escaped depot path. The layout
// (from published output): "==== //path#rev (type) ====", a blank line,
// "@@ -a,b +c,d @@" hunks with no ---/+++ headers. Hunks are consumed by
// their line counts so content that looks like a header is never taken
// for one.
func parseDescribeDiff(out []byte) (map[string][]byte, error) {
	res := map[string][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	i := 0
	for i < len(lines) && lines[i] != "Differences ..." {
		i++
	}
	cur := ""
	for i++; i < len(lines); i++ {
		l := lines[i]
		switch {
		case l == "":
		case strings.HasPrefix(l, "==== ") && strings.HasSuffix(l, " ===="):
			name := strings.TrimSuffix(strings.TrimPrefix(l, "==== "), " ====")
			if k := strings.LastIndex(name, " ("); k >= 0 {
				name = name[:k]
			}
			if k := strings.LastIndex(name, "#"); k >= 0 {
				name = name[:k]
			}
			cur = name
			res[cur] = []byte{}
		case strings.HasPrefix(l, "@@ "):
			if cur == "" {
				return nil, fmt.Errorf("hunk before any file header at line %d", i+1)
			}
			oldN, newN, err := hunkCounts(l)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			buf := append(res[cur], l+"\n"...)
			for oldN > 0 || newN > 0 {
				i++
				if i >= len(lines) {
					return nil, fmt.Errorf("hunk of %s is truncated", cur)
				}
				b := lines[i]
				switch {
				case strings.HasPrefix(b, "+"):
					newN--
				case strings.HasPrefix(b, "-"):
					oldN--
				case strings.HasPrefix(b, "\\"):
				default:
					// Context; p4 may print an empty context line as "".
					oldN--
					newN--
				}
				buf = append(buf, b+"\n"...)
			}
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\\") {
				i++
				buf = append(buf, lines[i]+"\n"...)
			}
			res[cur] = buf
		default:
			// Messages such as binary-file notes: nothing to anchor on.
		}
	}
	return res, nil
}

func hunkCounts(h string) (oldN, newN int, err error) {
	f := strings.Fields(h)
	if len(f) < 4 || f[0] != "@@" || f[3] != "@@" {
		return 0, 0, fmt.Errorf("bad hunk header %q", h)
	}
	count := func(s string) (int, error) {
		_, c, ok := strings.Cut(s[1:], ",")
		if !ok {
			return 1, nil
		}
		return strconv.Atoi(c)
	}
	if oldN, err = count(f[1]); err != nil {
		return 0, 0, fmt.Errorf("bad hunk header %q", h)
	}
	if newN, err = count(f[2]); err != nil {
		return 0, 0, fmt.Errorf("bad hunk header %q", h)
	}
	return oldN, newN, nil
}

// srcPath is where rel's content goes, after the depot-name checks; the
// run directory's own escape check follows in SrcPath.
func srcPath(dst vcs.Dest, rel string) (string, error) {
	if err := checkFileName(rel); err != nil {
		return "", err
	}
	return dst.SrcPath(rel)
}
