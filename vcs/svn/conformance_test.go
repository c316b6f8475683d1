package svn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// accessMode is one way of reaching the fixture repository.
type accessMode struct {
	name string
	cfg  func() Config
}

// modes are the three ways the conformance suite reads the same
// revisions: the svn client over file://, the svn client over svnserve on
// loopback with a password from a file, and svnlook on the repository
// directory.
func modes() []accessMode {
	return []accessMode{
		{"file", func() Config { return Config{URL: fx.trunk} }},
		{"svnserve", func() Config {
			return Config{URL: fx.svnserv.trunk, Username: fx.svnserv.user, PasswordFile: fx.svnserv.passFile}
		}},
		{"svnlook", func() Config { return Config{URL: fx.trunk, LocalPath: fx.repo} }},
	}
}

func newModeAdapter(t testing.TB, m accessMode, change func(*Config)) *Adapter {
	t.Helper()
	cfg := m.cfg()
	cfg.SetStateDir(filepath.Join(t.TempDir(), "state"))
	if change != nil {
		change(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("%s: New: %v", m.name, err)
	}
	want := AccessSVN
	if m.name == "svnlook" {
		want = AccessSvnlook
	}
	if a.Access() != want {
		t.Fatalf("%s: access = %q, want %q", m.name, a.Access(), want)
	}
	return a
}

// srcTree maps each fetched file under dir/src to its size and hash.
func srcTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	src := filepath.Join(dir, "src")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(src, p)
		out[filepath.ToSlash(rel)] = strconv.Itoa(len(b)) + ":" + hex.EncodeToString(sum[:8])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type scenario struct {
	name string
	rev  func() int64
}

var scenarios = []scenario{
	{"add (non-ASCII, @, spaces, empty, directory)", func() int64 { return fx.rAdd }},
	{"modify", func() int64 { return fx.rModify }},
	{"delete", func() int64 { return fx.rDelete }},
	{"binary", func() int64 { return fx.rBinary }},
	{"property only", func() int64 { return fx.rProp }},
	{"copy", func() int64 { return fx.rCopy }},
	{"filtered and large", func() int64 { return fx.rFilter }},
	{"branch outside the URL", func() int64 { return fx.rBranch }},
	{"rename to a name with spaces", func() int64 { return fx.rRename }},
	{"replace", func() int64 { return fx.rReplace }},
	{"file deleted later (peg revision)", func() int64 { return fx.rDoomed }},
	{"delete of that file", func() int64 { return fx.rDoomedGone }},
	{"1,000 files", func() int64 { return fx.rThousand }},
	// Subversion's own diff of this file takes minutes; the adapter does
	// not ask for it (--no-diff-added), so it runs in every mode.
	{"50 MB file", func() int64 { return fx.rHuge }},
}

// hugeLines is the number of lines of huge.txt: writeHugeDump writes
// 52-byte lines and ends the last, shorter one with a newline.
const hugeLines = (hugeBytes + 51) / 52

// TestConformance fetches every scenario through every access mode and
// requires the same Change and the same fetched content, and a diff.patch
// whose parse agrees with the Change's line maps. The shapes every adapter
// shares are in vcs/vcstest (TestAdapterConformance); these are the
// Subversion-only ones (peg revisions, replace, property-only, branches
// outside the URL, 1,000 files, 50 MB) compared across the access modes.
func TestConformance(t *testing.T) {
	ms := modes()
	adapters := make([]*Adapter, len(ms))
	for i, m := range ms {
		adapters[i] = newModeAdapter(t, m, func(c *Config) {
			c.MaxFileBytes = hugeBytes + 1
			c.Exclude = []string{"vendor/**"}
		})
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			rev := sc.rev()
			var ref *vcs.Change
			var refTree map[string]string
			for i, a := range adapters {
				a.ResetProcessCounts()
				c, dir := fetch(t, a, rev)
				tree := srcTree(t, dir)
				checkPatchAgrees(t, ms[i].name, c, dir)
				checkProcessBound(t, ms[i].name, a, c)
				if rev == fx.rHuge {
					f := file(t, c, "huge.txt")
					want := []vcs.LineRange{lr(1, hugeLines)}
					if f.Skipped != "" || !reflect.DeepEqual(f.Added, want) || !reflect.DeepEqual(f.Hunks, want) {
						t.Errorf("%s: huge.txt = %+v, want lines 1-%d added", ms[i].name, f, hugeLines)
					}
				}
				if i == 0 {
					ref, refTree = c, tree
					continue
				}
				if !reflect.DeepEqual(c, ref) {
					t.Errorf("%s differs from %s:\n got %s\nwant %s", ms[i].name, ms[0].name, jsonString(c), jsonString(ref))
				}
				if !reflect.DeepEqual(tree, refTree) {
					t.Errorf("%s fetched %v, %s fetched %v", ms[i].name, tree, ms[0].name, refTree)
				}
			}
		})
	}
}

// checkPatchAgrees requires diff.patch to parse, to agree with every
// listed file's line map, and to hold a section for every added file in
// scope (the diff itself leaves them out; the adapter writes them).
func checkPatchAgrees(t *testing.T, mode string, c *vcs.Change, dir string) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "diff.patch"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parsed, err := vcs.ParseDiffReader(f)
	if err != nil {
		t.Errorf("%s r%s: diff.patch does not parse: %v", mode, c.Revision, err)
		return
	}
	same := func(a, b []vcs.LineRange) bool { return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b) }
	for _, fc := range c.Files {
		if fc.Skipped == vcs.SkipExcluded || fc.NodeKind == vcs.NodeDir || fc.Action == vcs.ActionDelete {
			continue
		}
		d, ok := parsed[fc.Path]
		if !ok && fc.Action == vcs.ActionAdd {
			t.Errorf("%s r%s: diff.patch has no section for added %s", mode, c.Revision, fc.Path)
		}
		if !same(d.Added, fc.Added) || !same(d.Hunks, fc.Hunks) {
			t.Errorf("%s r%s: %s: diff.patch says added %v hunks %v, the change %v %v",
				mode, c.Revision, fc.Path, d.Added, d.Hunks, fc.Added, fc.Hunks)
		}
		if fc.Action == vcs.ActionAdd && d.Binary != fc.Binary {
			t.Errorf("%s r%s: %s: diff.patch binary %v, the change %v", mode, c.Revision, fc.Path, d.Binary, fc.Binary)
		}
	}
}

// An added file over max_file_bytes is sized by cutting its cat off, not
// read whole and not diffed: listed too large, no line map, a note in
// diff.patch, and no more processes than any other file.
func TestFetchHugeTooLarge(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			a := newModeAdapter(t, m, nil)
			a.ResetProcessCounts()
			c, dir := fetch(t, a, fx.rHuge)
			f := file(t, c, "huge.txt")
			if f.Skipped != vcs.SkipTooLarge || len(f.Added) != 0 || len(f.Hunks) != 0 {
				t.Errorf("huge.txt = %+v, want too large with no line map", f)
			}
			assertNoSrc(t, dir, "huge.txt")
			patch := mustRead(t, filepath.Join(dir, "diff.patch"))
			if !strings.Contains(string(patch), "Index: huge.txt\n") || !strings.Contains(string(patch), "too large") || len(patch) > 4096 {
				t.Errorf("diff.patch = %q", patch)
			}
			checkPatchAgrees(t, m.name, c, dir)
			checkProcessBound(t, m.name, a, c)
		})
	}
}

// checkProcessBound requires a constant number of processes per
// revision: metadata, one dump, one diff, and one batched svn cat (svn
// access). Only the files a dump carries no text for, copies and
// property-only changes, may take a cat each; and mime lookups one per
// file whose diff shows no content, where the dump did not list its
// properties.
func checkProcessBound(t *testing.T, mode string, a *Adapter, c *vcs.Change) {
	t.Helper()
	perFile := 0
	for _, f := range c.Files {
		if f.Skipped == "" && (f.CopyFromPath != "" || f.Action == vcs.ActionModify) {
			perFile++
		}
	}
	meta, cats, mimes := 0, 0, 0
	for name, n := range a.ProcessCounts() {
		switch name {
		case "svn cat", "svnlook cat":
			cats += n
		case "svn proplist", "svnlook propget":
			mimes += n
		default:
			meta += n
		}
	}
	if meta > 4 || cats > 1+perFile || mimes > 1+perFile {
		t.Errorf("%s r%s: %d metadata/dump/diff processes, %d cats and %d mime lookups for %d copied or modified files: %v", mode, c.Revision, meta, cats, mimes, perFile, a.ProcessCounts())
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonString(v any) string {
	b, _ := json.MarshalIndent(v, "", " ")
	if len(b) > 4000 {
		b = append(b[:4000], "..."...)
	}
	return string(b)
}

func TestFetchRenameReplaceAndPeg(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			a := newModeAdapter(t, m, nil)
			c, dir := fetch(t, a, fx.rRename)
			nf := file(t, c, "renamed b.c")
			if nf.Action != vcs.ActionAdd || nf.CopyFromPath != "b.c" || nf.CopyFromRev == "" || nf.Skipped != "" {
				t.Errorf("renamed b.c = %+v, want an add copied from b.c", nf)
			}
			if got := readSrc(t, dir, "renamed b.c"); got != aModify+"line8\n" {
				t.Errorf("src/renamed b.c = %q", got)
			}
			if old := file(t, c, "b.c"); old.Action != vcs.ActionDelete || old.Skipped != vcs.SkipDeleted {
				t.Errorf("b.c = %+v, want deleted", old)
			}

			c, dir = fetch(t, a, fx.rReplace)
			r := file(t, c, "a.c")
			if r.Action != vcs.ActionReplace || !reflect.DeepEqual(r.Added, []vcs.LineRange{lr(1, 1)}) {
				t.Errorf("a.c = %+v, want replaced with line 1 added", r)
			}
			if got := readSrc(t, dir, "a.c"); got != "replaced\n" {
				t.Errorf("src/a.c = %q", got)
			}

			// doomed.txt no longer exists at HEAD; only a peg revision
			// finds it.
			c, dir = fetch(t, a, fx.rDoomed)
			if f := file(t, c, "doomed.txt"); f.Skipped != "" {
				t.Errorf("doomed.txt = %+v", f)
			}
			if got := readSrc(t, dir, "doomed.txt"); got != "soon gone\n" {
				t.Errorf("src/doomed.txt = %q", got)
			}
		})
	}
}

func TestFetchThousandFiles(t *testing.T) {
	a := newModeAdapter(t, modes()[2], nil)
	c, dir := fetch(t, a, fx.rThousand)
	if n := len(c.Files); n != 1001 { // the directory and its files
		t.Fatalf("%d files, want 1001", n)
	}
	if got := readSrc(t, dir, "many1000/f0999.txt"); got != "file 999 of 1000\nsecond line\n" {
		t.Errorf("f0999 = %q", got)
	}
	// One svnadmin dump carries the thousand texts: the processes are
	// svnlook proplist, changed and diff, and the dump, whatever the
	// number of files.
	procs := a.ProcessCounts()
	total := 0
	for _, n := range procs {
		total += n
	}
	if procs["svnlook cat"] != 0 || procs["svnadmin dump"] != 1 || total > 4 {
		t.Errorf("processes %v: want one svnadmin dump, no svnlook cat, at most 4 in all", procs)
	}
}

// Over max_files and max_review_bytes, the first files in path order are
// reviewed and the rest are listed with the cap as the reason.
func TestFetchCaps(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			a := newModeAdapter(t, m, func(c *Config) { c.MaxFiles = 3 })
			c, dir := fetch(t, a, fx.rHundred)
			var kept, capped []string
			for _, f := range c.Files {
				switch f.Skipped {
				case "":
					kept = append(kept, f.Path)
				case vcs.SkipFileCap:
					capped = append(capped, f.Path)
				}
			}
			want := []string{"many100/f0000.txt", "many100/f0001.txt", "many100/f0002.txt"}
			if !reflect.DeepEqual(kept, want) || len(capped) != 97 {
				t.Errorf("kept %v, %d capped; want %v and 97", kept, len(capped), want)
			}
			if tree := srcTree(t, dir); len(tree) != 3 {
				t.Errorf("fetched %v", tree)
			}
			// An added file's lines are counted from its content, which a
			// capped file does not have: no line map, and a note in
			// diff.patch.
			if f := file(t, c, "many100/f0099.txt"); len(f.Added) != 0 || len(f.Hunks) != 0 {
				t.Errorf("capped file has a line map: %+v", f)
			}
			checkPatchAgrees(t, m.name, c, dir)

			// Each file is 28 or 29 bytes: 100 bytes take the first four.
			a = newModeAdapter(t, m, func(c *Config) { c.MaxReviewBytes = 100; c.FetchParallelism = 2 })
			c, dir = fetch(t, a, fx.rHundred)
			kept, capped = nil, nil
			for _, f := range c.Files {
				switch f.Skipped {
				case "":
					kept = append(kept, f.Path)
				case vcs.SkipReviewBytesCap:
					capped = append(capped, f.Path)
				}
			}
			if len(kept) != 3 || kept[2] != "many100/f0002.txt" || len(capped) != 97 {
				t.Errorf("kept %v, %d capped over max_review_bytes", kept, len(capped))
			}
			if tree := srcTree(t, dir); len(tree) != 3 {
				t.Errorf("fetched %v", tree)
			}
			checkPatchAgrees(t, m.name, c, dir)
		})
	}
}

func TestBlame(t *testing.T) {
	ctx := context.Background()
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			a := newModeAdapter(t, m, nil)
			rev := strconv.FormatInt(fx.rModify, 10)
			res, err := a.Blame(ctx, "a.c", rev, 1, 3)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != vcs.BlameOK || len(res.Lines) != 3 {
				t.Fatalf("blame = %+v", res)
			}
			l1, l2 := res.Lines[0], res.Lines[1]
			if l1.Line != 1 || l1.Revision != strconv.FormatInt(fx.rAdd, 10) || l1.Author != "alice" || l1.Date.IsZero() {
				t.Errorf("line 1 = %+v", l1)
			}
			if l2.Revision != rev {
				t.Errorf("line 2 = %+v, want r%s", l2, rev)
			}
			if b, _ := json.Marshal(res); strings.Contains(string(b), "LINE2") {
				t.Errorf("blame carries source text: %s", b)
			}

			res, err = a.Blame(ctx, "a.c", rev, 6, 50)
			if err != nil || res.Status != vcs.BlamePartial || len(res.Lines) != 2 || !strings.Contains(res.Reason, "7 lines") {
				t.Errorf("clipped blame = %+v, %v", res, err)
			}
			res, err = a.Blame(ctx, "nul.dat", strconv.FormatInt(fx.rBinary, 10), 1, 1)
			if err != nil || res.Status != vcs.BlamePartial || !strings.Contains(res.Reason, "binary") {
				t.Errorf("binary blame = %+v, %v", res, err)
			}
			res, err = a.Blame(ctx, "nope.c", rev, 1, 1)
			if err != nil || res.Status != vcs.BlameNotFound {
				t.Errorf("missing file blame = %+v, %v", res, err)
			}
			res, err = a.Blame(ctx, "doomed.txt", strconv.FormatInt(fx.rDoomed, 10), 1, 1)
			if err != nil || res.Status != vcs.BlameOK || len(res.Lines) != 1 {
				t.Errorf("blame of a file deleted later = %+v, %v", res, err)
			}
			res, err = a.Blame(ctx, nonASCIIPath, strconv.FormatInt(fx.rAdd, 10), 1, 2)
			if err != nil || res.Status != vcs.BlameOK || len(res.Lines) != 2 {
				t.Errorf("blame of %s = %+v, %v", nonASCIIPath, res, err)
			}
			for _, p := range []string{"../branches/b1/a.c", "/etc/passwd", "a/./b"} {
				if _, err := a.Blame(ctx, p, rev, 1, 1); !errors.Is(err, vcs.ErrPathOutOfScope) {
					t.Errorf("Blame(%q) = %v, want ErrPathOutOfScope", p, err)
				}
				if err := a.Cat(ctx, p, rev, io.Discard); !errors.Is(err, vcs.ErrPathOutOfScope) {
					t.Errorf("Cat(%q) = %v, want ErrPathOutOfScope", p, err)
				}
			}
			if _, err := a.Blame(ctx, "a.c", rev, 3, 2); !errors.Is(err, ErrBadRange) {
				t.Errorf("Blame 3-2 = %v, want ErrBadRange", err)
			}
		})
	}
}

func TestLister(t *testing.T) {
	ctx := context.Background()
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			a := newModeAdapter(t, m, nil)
			head, err := a.Head(ctx)
			if err != nil || head != strconv.FormatInt(fx.youngest, 10) {
				t.Fatalf("Head = %q, %v; want %d", head, err, fx.youngest)
			}
			// rBranch touched only branches/, so it is not listed.
			got, err := a.ChangesAfter(ctx, strconv.FormatInt(fx.rFilter, 10), 3)
			want := []string{strconv.FormatInt(fx.rRename, 10), strconv.FormatInt(fx.rReplace, 10), strconv.FormatInt(fx.rDoomed, 10)}
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("ChangesAfter(rFilter, 3) = %v, %v; want %v", got, err, want)
			}
			got, err = a.ChangesAfter(ctx, "0", 2)
			if err != nil || !reflect.DeepEqual(got, []string{"1", strconv.FormatInt(fx.rAdd, 10)}) {
				t.Errorf("ChangesAfter(0, 2) = %v, %v", got, err)
			}
			if got, err := a.ChangesAfter(ctx, head, 10); err != nil || len(got) != 0 {
				t.Errorf("ChangesAfter(head) = %v, %v", got, err)
			}
			if _, err := a.ChangesAfter(ctx, "x", 10); !errors.Is(err, vcs.ErrBadRevision) {
				t.Errorf("ChangesAfter(x) = %v", err)
			}
		})
	}
}

// The password reaches svn on stdin only: never on argv, never in svn's
// config dir, and a wrong one fails cleanly.
func TestSvnserveCredentials(t *testing.T) {
	m := modes()[1]
	state := filepath.Join(t.TempDir(), "state")
	cfg := m.cfg()
	cfg.SetStateDir(state)
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Youngest(context.Background()); err != nil {
		t.Fatalf("Youngest over svnserve: %v", err)
	}
	password := strings.TrimSpace(string(mustRead(t, fx.svnserv.passFile)))
	filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(string(mustRead(t, p)), password) {
			t.Errorf("%s holds the password", p)
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(state, "svn-config", "servers")); err != nil {
		t.Errorf("isolated config dir not used: %v", err)
	}

	bad := filepath.Join(t.TempDir(), "bad")
	os.WriteFile(bad, []byte("wrong\n"), 0o600)
	cfg.PasswordFile = bad
	a, _ = New(cfg)
	_, err = a.Youngest(context.Background())
	if err == nil || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong password: %v", err)
	}
	cfg.PasswordFile = filepath.Join(t.TempDir(), "missing")
	a, _ = New(cfg)
	if _, err := a.Youngest(context.Background()); !errors.Is(err, ErrNoPassword) {
		t.Errorf("missing password file: %v", err)
	}
	cfg.PasswordFile, cfg.PasswordEnv = "", "AICR_TEST_SVN_PASSWORD"
	t.Setenv("AICR_TEST_SVN_PASSWORD", password)
	a, _ = New(cfg)
	if _, err := a.Youngest(context.Background()); err != nil {
		t.Errorf("password_env: %v", err)
	}
}

// helperMain runs one Fetch in a child process so the test can read that
// process's peak RSS; it returns false when this is not such a child. It
// prints the adapter's process counts as JSON on stdout.
func helperMain() bool {
	spec := os.Getenv("AICR_SVN_FETCH_HELPER")
	if spec == "" {
		return false
	}
	var req struct {
		Cfg     Config
		Rev     string
		Dir     string
		CatOnly bool
	}
	if err := json.Unmarshal([]byte(spec), &req); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	a, err := New(req.Cfg)
	switch {
	case err == nil && req.CatOnly:
		var out *os.File
		if out, err = os.Create(filepath.Join(req.Dir, "huge.txt")); err == nil {
			err = errors.Join(a.Cat(context.Background(), "huge.txt", req.Rev, out), out.Close())
		}
	case err == nil:
		run := rundir.New(req.Dir)
		if err = run.Create(); err == nil {
			_, err = a.Fetch(context.Background(), req.Rev, run)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(childReport{Procs: a.ProcessCounts(), RSS: peakRSS()})
	os.Exit(0)
	return true
}

type childReport struct {
	Procs map[string]int
	RSS   int64
}

// peakRSS is the largest resident set of this process and of the svn
// processes it ran. The parent's view (wait4's ru_maxrss) will not do:
// Go starts children with vfork, and Linux carries the parent's high-water
// mark across exec, so a child of a test process that once held 100 MB
// reports 100 MB. VmHWM belongs to the process's own address space, and
// the svn children inherit only this small process's mark.
func peakRSS() int64 {
	var own int64
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, ln := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(ln, "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				own = kb * 1024
			}
		}
	}
	var ru syscall.Rusage
	if own == 0 && syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		own = ru.Maxrss * 1024
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		own = max(own, ru.Maxrss*1024)
	}
	return own
}

// childResult is what a fetch in a child process cost.
type childResult struct {
	rss   int64          // peak resident set, bytes
	procs map[string]int // child processes by "tool subcommand"
}

// fetchInChild fetches rev (or only cats huge.txt) in a child process.
func fetchInChild(t testing.TB, cfg Config, rev int64, dir string, catOnly bool) childResult {
	t.Helper()
	spec, _ := json.Marshal(struct {
		Cfg     Config
		Rev     string
		Dir     string
		CatOnly bool
	}{cfg, strconv.FormatInt(rev, 10), dir, catOnly})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AICR_SVN_FETCH_HELPER="+string(spec))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fetch helper: %v\n%s", err, stderr.String())
	}
	var rep childReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("fetch helper output %q: %v", out, err)
	}
	return childResult{rss: rep.RSS, procs: rep.Procs}
}

// The 50 MB file's revision is fetched whole in both access modes, diff
// and all, streamed: the fetching process's peak RSS stays well under the
// file's size.
func TestFetchHugeFileStreams(t *testing.T) {
	for _, m := range []accessMode{modes()[0], modes()[2]} {
		t.Run(m.name, func(t *testing.T) {
			cfg := m.cfg()
			cfg.MaxFileBytes = hugeBytes + 1
			cfg.ConfigDir = fx.configDir
			dir := t.TempDir()
			res := fetchInChild(t, cfg, fx.rHuge, dir, false)
			st, err := os.Stat(filepath.Join(dir, "src", "huge.txt"))
			if err != nil || st.Size() != hugeBytes {
				t.Fatalf("src/huge.txt: %v, %v", st, err)
			}
			if st, err := os.Stat(filepath.Join(dir, "diff.patch")); err != nil || st.Size() < hugeBytes {
				t.Errorf("diff.patch: %v, %v: want the whole file's section", st, err)
			}
			t.Logf("%s: peak RSS %.1f MiB for a %d MiB file, processes %v", m.name, float64(res.rss)/(1<<20), hugeBytes>>20, res.procs)
			// Streamed means well under the file's size; the race
			// detector's shadow memory adds a fixed overhead on top.
			limit := int64(hugeBytes / 2)
			if raceEnabled {
				limit = hugeBytes
			}
			if res.rss > limit {
				t.Errorf("%s: peak RSS %d bytes for a %d-byte file: not streamed", m.name, res.rss, hugeBytes)
			}
		})
	}
}

// A 10-line edit of the 50 MB file, with default caps: the dump sizes
// huge.txt too large before any diff, so it never reaches Subversion's
// diff (which spends 18-23 s on it), and the other files of the
// revision are diffed by name, their sections labelled with their full
// paths (two share the base name f0001.txt). All access modes agree.
func TestFetchHugeEditSkipsDiff(t *testing.T) {
	var ref *vcs.Change
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			a := newModeAdapter(t, m, nil)
			a.ResetProcessCounts()
			c, dir := fetch(t, a, fx.rHugeEdit)
			if f := file(t, c, "huge.txt"); f.Skipped != vcs.SkipTooLarge || f.Action != vcs.ActionModify || len(f.Added) != 0 {
				t.Errorf("huge.txt = %+v, want a modification skipped as too large", f)
			}
			for _, p := range []string{"many10/f0001.txt", "many100/f0001.txt"} {
				f := file(t, c, p)
				if f.Skipped != "" || !reflect.DeepEqual(f.Added, []vcs.LineRange{lr(2, 2)}) || !reflect.DeepEqual(f.Hunks, []vcs.LineRange{lr(1, 2)}) {
					t.Errorf("%s = %+v, want line 2 added", p, f)
				}
			}
			if f := file(t, c, "many10/f0002.txt"); f.Skipped != vcs.SkipDeleted {
				t.Errorf("many10/f0002.txt = %+v, want deleted", f)
			}
			patch := string(mustRead(t, filepath.Join(dir, "diff.patch")))
			for _, want := range []string{
				"Index: many10/f0001.txt\n", "--- many10/f0001.txt\t(revision", "+SECOND line\n",
				"Index: many100/f0001.txt\n", "+++ many100/f0001.txt\t(revision", "+second LINE\n",
				"Property changes on: a.c\n", "Index: many10/f0002.txt\n",
			} {
				if !strings.Contains(patch, want) {
					t.Errorf("diff.patch lacks %q:\n%s", want, patch)
				}
			}
			if strings.Contains(patch, "THE QUICK") || strings.Contains(patch, "huge.txt") {
				t.Errorf("diff.patch holds huge.txt's diff: %.2000s", patch)
			}
			if n := a.ProcessCounts()["svnlook diff"]; n != 0 {
				t.Errorf("svnlook diff ran %d times; it cannot leave huge.txt out", n)
			}
			checkPatchAgrees(t, m.name, c, dir)
			checkProcessBound(t, m.name, a, c)
			if ref == nil {
				ref = c
			} else if !reflect.DeepEqual(c, ref) {
				t.Errorf("%s differs:\n got %s\nwant %s", m.name, jsonString(c), jsonString(ref))
			}
		})
	}
}
