package p4

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/aicr-dev/aicr/vcs"
)

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
	err := a.runBatched(ctx, specs, func(recs []Record) { collectPrint(recs, out) }, "print")
	return out, err
}

// runBatched runs `p4 -G -x args CMD` over specs, one process per
// batch_size of them, handing each process's records to collect. -x reads
// one argument per line, so names need no quoting and the command line
// stays short for thousands of files.
func (a *Adapter) runBatched(ctx context.Context, specs []string, collect func([]Record), cmd ...string) error {
	tmp, err := os.MkdirTemp("", "aicr-p4-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	argFile := filepath.Join(tmp, "args")
	for start := 0; start < len(specs); start += a.cfg.BatchSize {
		batch := specs[start:min(start+a.cfg.BatchSize, len(specs))]
		if err := os.WriteFile(argFile, []byte(strings.Join(batch, "\n")+"\n"), 0o600); err != nil {
			return err
		}
		recs, _, err := a.runG(ctx, []string{"-x", argFile}, cmd...)
		if err != nil {
			return err
		}
		collect(recs)
	}
	return nil
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
