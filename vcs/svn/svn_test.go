package svn

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

func newAdapter(t *testing.T, cfg Config) *Adapter {
	t.Helper()
	if cfg.URL == "" {
		cfg.URL = fx.trunk
	}
	cfg.ConfigDir = fx.configDir
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

func fetch(t *testing.T, a *Adapter, rev int64) (*vcs.Change, string) {
	t.Helper()
	dir := t.TempDir()
	run := rundir.New(dir)
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	c, err := a.Fetch(context.Background(), strconv.FormatInt(rev, 10), run)
	if err != nil {
		t.Fatalf("Fetch r%d: %v", rev, err)
	}
	return c, dir
}

func file(t *testing.T, c *vcs.Change, path string) vcs.FileChange {
	t.Helper()
	f, ok := c.File(path)
	if !ok {
		t.Fatalf("r%s has no file %q; files: %+v", c.Revision, path, c.Files)
	}
	return f
}

func paths(c *vcs.Change) []string {
	var ps []string
	for _, f := range c.Files {
		ps = append(ps, f.Path)
	}
	return ps
}

func readSrc(t *testing.T, dir, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "src", filepath.FromSlash(path)))
	if err != nil {
		t.Fatalf("read fetched %s: %v", path, err)
	}
	return string(b)
}

func assertNoSrc(t *testing.T, dir, path string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "src", filepath.FromSlash(path))); !os.IsNotExist(err) {
		t.Errorf("src/%s exists (err %v), want it not fetched", path, err)
	}
}

func lr(start, end int) vcs.LineRange { return vcs.LineRange{Start: start, End: end} }

func TestFetchAdd(t *testing.T) {
	c, dir := fetch(t, newAdapter(t, Config{}), fx.rAdd)

	if c.VCS != vcs.KindSVN || c.Revision != strconv.FormatInt(fx.rAdd, 10) || c.Repo != "" {
		t.Errorf("VCS/Revision/Repo = %q/%q/%q", c.VCS, c.Revision, c.Repo)
	}
	if c.Author != "alice" || c.Description != "add files\n\n多行 message" || c.Date.IsZero() {
		t.Errorf("Author/Description/Date = %q/%q/%v", c.Author, c.Description, c.Date)
	}
	wantPaths := []string{"a.c", "empty.txt", weirdPath, "中文 目录", nonASCIIPath}
	if got := paths(c); !reflect.DeepEqual(got, wantPaths) {
		t.Errorf("paths = %q, want %q", got, wantPaths)
	}

	a := file(t, c, "a.c")
	want := vcs.FileChange{Path: "a.c", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
		Added: []vcs.LineRange{lr(1, 5)}, Hunks: []vcs.LineRange{lr(1, 5)}}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("a.c = %+v, want %+v", a, want)
	}
	if got := readSrc(t, dir, "a.c"); got != aAdd {
		t.Errorf("src/a.c = %q", got)
	}

	if d := file(t, c, "中文 目录"); d.NodeKind != vcs.NodeDir || d.Skipped != vcs.SkipDirectory {
		t.Errorf("dir entry = %+v", d)
	}
	n := file(t, c, nonASCIIPath)
	if n.Skipped != "" || !reflect.DeepEqual(n.Added, []vcs.LineRange{lr(1, 2)}) {
		t.Errorf("%s = %+v", nonASCIIPath, n)
	}
	if got := readSrc(t, dir, nonASCIIPath); got != "hello\nworld\n" {
		t.Errorf("src/%s = %q", nonASCIIPath, got)
	}
	if got := readSrc(t, dir, weirdPath); got != "weird\n" {
		t.Errorf("src/%s = %q", weirdPath, got)
	}
	e := file(t, c, "empty.txt")
	if e.Skipped != "" || e.Binary || len(e.Added) != 0 {
		t.Errorf("empty.txt = %+v", e)
	}
	if got := readSrc(t, dir, "empty.txt"); got != "" {
		t.Errorf("src/empty.txt = %q", got)
	}

	patch, err := os.ReadFile(filepath.Join(dir, "diff.patch"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(patch, []byte("Index: "+nonASCIIPath+"\n")) || !bytes.Contains(patch, []byte("+line5\n")) {
		t.Errorf("diff.patch lacks expected sections:\n%s", patch)
	}
}

func TestFetchModify(t *testing.T) {
	c, dir := fetch(t, newAdapter(t, Config{}), fx.rModify)
	a := file(t, c, "a.c")
	if a.Action != vcs.ActionModify {
		t.Errorf("action = %q", a.Action)
	}
	if want := []vcs.LineRange{lr(2, 2), lr(6, 7)}; !reflect.DeepEqual(a.Added, want) {
		t.Errorf("Added = %v, want %v", a.Added, want)
	}
	if want := []vcs.LineRange{lr(1, 7)}; !reflect.DeepEqual(a.Hunks, want) {
		t.Errorf("Hunks = %v, want %v", a.Hunks, want)
	}
	if got := readSrc(t, dir, "a.c"); got != aModify {
		t.Errorf("src/a.c = %q", got)
	}
}

func TestFetchDelete(t *testing.T) {
	c, dir := fetch(t, newAdapter(t, Config{}), fx.rDelete)
	f := file(t, c, weirdPath)
	if f.Action != vcs.ActionDelete || f.Skipped != vcs.SkipDeleted || len(f.Added) != 0 {
		t.Errorf("deleted file = %+v", f)
	}
	assertNoSrc(t, dir, weirdPath)
}

func TestFetchBinary(t *testing.T) {
	c, dir := fetch(t, newAdapter(t, Config{}), fx.rBinary)
	for _, p := range []string{"nul.dat", "img.png"} {
		f := file(t, c, p)
		if !f.Binary || f.Skipped != vcs.SkipBinary {
			t.Errorf("%s = %+v, want binary", p, f)
		}
		assertNoSrc(t, dir, p)
	}
}

// A property-only change has no added lines; a binary file whose only
// change is a property is still recognised as binary from its mime type.
func TestFetchPropertyOnly(t *testing.T) {
	c, dir := fetch(t, newAdapter(t, Config{}), fx.rProp)
	a := file(t, c, "a.c")
	if a.Skipped != "" || a.Binary || len(a.Added) != 0 || len(a.Hunks) != 0 {
		t.Errorf("a.c = %+v, want fetched with no changed lines", a)
	}
	if got := readSrc(t, dir, "a.c"); got != aModify {
		t.Errorf("src/a.c = %q", got)
	}
	n := file(t, c, "nul.dat")
	if !n.Binary || n.Skipped != vcs.SkipBinary {
		t.Errorf("nul.dat = %+v, want binary", n)
	}
}

// An svn cp names its source and revision in every access mode (the
// client's log, svnlook's changed --copy-info), so findings follow it.
func TestFetchCopy(t *testing.T) {
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			c, dir := fetch(t, newModeAdapter(t, m, nil), fx.rCopy)
			b := file(t, c, "b.c")
			if b.Action != vcs.ActionAdd || b.CopyFromPath != "a.c" || b.CopyFromRev != strconv.FormatInt(fx.rCopy-1, 10) {
				t.Errorf("b.c = %+v, want copy of a.c@%d", b, fx.rCopy-1)
			}
			// svn diff shows a copy as an add of the whole file.
			if want := []vcs.LineRange{lr(1, 8)}; !reflect.DeepEqual(b.Added, want) {
				t.Errorf("Added = %v, want %v", b.Added, want)
			}
			if got := readSrc(t, dir, "b.c"); got != aModify+"line8\n" {
				t.Errorf("src/b.c = %q", got)
			}
		})
	}
}

func TestFetchTooLarge(t *testing.T) {
	c, dir := fetch(t, newAdapter(t, Config{Scope: vcs.Scope{MaxFileBytes: 1000}}), fx.rFilter)
	big := file(t, c, "big.txt")
	if big.Skipped != vcs.SkipTooLarge {
		t.Errorf("big.txt = %+v, want skipped too large", big)
	}
	// An added file's lines are counted from its content, which is not
	// fetched: no line map, and a note instead of a section.
	if len(big.Added) != 0 || len(big.Hunks) != 0 {
		t.Errorf("big.txt Added = %v Hunks = %v, want none", big.Added, big.Hunks)
	}
	if patch := readPatch(t, dir); !strings.Contains(patch, "Index: big.txt\n") || !strings.Contains(patch, "(aicr: content not shown: too large)") {
		t.Errorf("diff.patch lacks the note for big.txt:\n%s", patch)
	}
	assertNoSrc(t, dir, "big.txt")
	if got := readSrc(t, dir, "notes.txt"); got != "notes\n" {
		t.Errorf("src/notes.txt = %q", got)
	}

	c, dir = fetch(t, newAdapter(t, Config{}), fx.rFilter)
	if f := file(t, c, "big.txt"); f.Skipped != "" {
		t.Errorf("with the default limit big.txt = %+v", f)
	}
	if got := readSrc(t, dir, "big.txt"); len(got) != 2200 {
		t.Errorf("src/big.txt is %d bytes, want 2200", len(got))
	}
}

func TestFetchFilter(t *testing.T) {
	a := newAdapter(t, Config{Scope: vcs.Scope{Include: []string{"**/*.go", "docs/**"}, Exclude: []string{"vendor/**"}}})
	c, dir := fetch(t, a, fx.rFilter)
	for _, p := range []string{"src/main.go", "docs/readme.md"} {
		if f := file(t, c, p); f.Skipped != "" || len(f.Added) != 1 {
			t.Errorf("%s = %+v, want fetched", p, f)
		}
		readSrc(t, dir, p)
	}
	for _, p := range []string{"vendor/lib/x.go", "notes.txt", "big.txt", "vendor"} {
		if f := file(t, c, p); f.Skipped != vcs.SkipExcluded || len(f.Added) != 0 {
			t.Errorf("%s = %+v, want excluded", p, f)
		}
		assertNoSrc(t, dir, p)
	}
	patch, err := os.ReadFile(filepath.Join(dir, "diff.patch"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := vcs.ParseDiff(patch)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := files["src/main.go"]; !ok || len(files) != 2 {
		t.Errorf("diff.patch should hold only src/main.go and docs/readme.md:\n%s", patch)
	}
}

// With the URL at the repository root, paths carry their trunk/ prefix;
// a branch copy lists the branch directory only, and the copied files'
// sections are dropped from diff.patch.
func TestFetchRootURL(t *testing.T) {
	a := newAdapter(t, Config{URL: fx.root})
	c, _ := fetch(t, a, fx.rModify)
	if f := file(t, c, "trunk/a.c"); !reflect.DeepEqual(f.Added, []vcs.LineRange{lr(2, 2), lr(6, 7)}) {
		t.Errorf("trunk/a.c = %+v", f)
	}

	c, dir := fetch(t, a, fx.rBranch)
	b := file(t, c, "branches/b1")
	if len(c.Files) != 1 || b.NodeKind != vcs.NodeDir || b.CopyFromPath != "trunk" || b.Skipped != vcs.SkipDirectory {
		t.Errorf("files = %+v", c.Files)
	}
	if patch, err := os.ReadFile(filepath.Join(dir, "diff.patch")); err != nil || len(patch) != 0 {
		t.Errorf("diff.patch = %q (err %v), want empty", patch, err)
	}
}

// A revision that touched nothing under the URL has metadata but no files.
func TestFetchOutsideURL(t *testing.T) {
	c, dir := fetch(t, newAdapter(t, Config{}), fx.rBranch)
	if len(c.Files) != 0 || c.Author != "alice" || c.Description != "branch" || c.Date.IsZero() {
		t.Errorf("change = %+v", c)
	}
	if _, err := os.Stat(filepath.Join(dir, "diff.patch")); err != nil {
		t.Errorf("diff.patch: %v", err)
	}
}

func TestFetchBadRevision(t *testing.T) {
	a := newAdapter(t, Config{})
	for _, rev := range []string{"abc", "0", "-1", "", "12x"} {
		_, err := a.Fetch(context.Background(), rev, rundir.New(t.TempDir()))
		if !errors.Is(err, vcs.ErrBadRevision) || !strings.Contains(err.Error(), "positive svn revision number") {
			t.Errorf("Fetch(%q) = %v, want ErrBadRevision", rev, err)
		}
	}
}

func TestFetchNoSuchRevision(t *testing.T) {
	_, err := newAdapter(t, Config{}).Fetch(context.Background(), "999", rundir.New(t.TempDir()))
	if !errors.Is(err, vcs.ErrNoSuchRevision) {
		t.Fatalf("Fetch(999) = %v, want ErrNoSuchRevision", err)
	}
	if want := "youngest is r" + strconv.FormatInt(fx.youngest, 10); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the youngest revision (%s)", err, want)
	}
}

func TestNewSvnMissing(t *testing.T) {
	_, err := New(Config{URL: fx.trunk, SvnPath: filepath.Join(t.TempDir(), "no-svn")})
	if !errors.Is(err, vcs.ErrToolMissing) || !strings.Contains(err.Error(), "apt-get install subversion") {
		t.Fatalf("New = %v, want ErrToolMissing with an install hint", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok", Config{URL: "https://svn.example.com/repos/x/trunk"}, ""},
		{"ok svn+ssh", Config{URL: "svn+ssh://host/repos/x"}, ""},
		{"no url", Config{}, "url (or local_path) is required"},
		{"bad scheme", Config{URL: "ftp://host/x"}, "scheme must be"},
		{"credentials", Config{URL: "https://bob:pw@host/x"}, "must not contain credentials"},
		{"no host", Config{URL: "https:///x"}, "no host"},
		{"negative max", Config{URL: "file:///r", Scope: vcs.Scope{MaxFileBytes: -1}}, "max_file_bytes -1"},
		{"bad glob", Config{URL: "file:///r", Scope: vcs.Scope{Include: []string{"[a-"}}}, `include pattern "[a-"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want %q", err, tt.wantErr)
			}
			if _, err := New(tt.cfg); err == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
}

func TestYoungest(t *testing.T) {
	got, err := newAdapter(t, Config{}).Youngest(context.Background())
	if err != nil || got != fx.youngest {
		t.Fatalf("Youngest = %d, %v; want %d", got, err, fx.youngest)
	}
}

func TestCat(t *testing.T) {
	ctx := context.Background()
	a := newAdapter(t, Config{Scope: vcs.Scope{MaxFileBytes: 1000}})
	var buf bytes.Buffer
	if err := a.Cat(ctx, "a.c", strconv.FormatInt(fx.rAdd, 10), &buf); err != nil || buf.String() != aAdd {
		t.Errorf("Cat a.c@rAdd = %q, %v", buf.String(), err)
	}
	buf.Reset()
	if err := a.Cat(ctx, nonASCIIPath, strconv.FormatInt(fx.rAdd, 10), &buf); err != nil || buf.String() != "hello\nworld\n" {
		t.Errorf("Cat %s = %q, %v", nonASCIIPath, buf.String(), err)
	}

	rev := strconv.FormatInt(fx.rFilter, 10)
	for _, tt := range []struct {
		path, rev string
		want      error
		msg       string
	}{
		{"nope.c", rev, vcs.ErrNoSuchPath, ""},
		{"中文 目录", rev, vcs.ErrNoSuchPath, "is a directory"},
		{"big.txt", rev, vcs.ErrTooLarge, ""},
		{"a.c", "abc", vcs.ErrBadRevision, ""},
		{"../etc/passwd", rev, nil, "must not contain"},
		{"/a.c", rev, nil, "relative"},
	} {
		err := a.Cat(ctx, tt.path, tt.rev, &bytes.Buffer{})
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Cat(%q, %q) = %v, want %v %q", tt.path, tt.rev, err, tt.want, tt.msg)
		}
	}
}

func TestFileURL(t *testing.T) {
	got := fileURL("file:///r/trunk", "a b/中#%?@2x.txt", 7)
	want := "file:///r/trunk/a%20b/%E4%B8%AD%23%25%3F@2x.txt@7"
	if got != want {
		t.Errorf("fileURL = %q, want %q", got, want)
	}
}

func TestMimeTypeIsBinary(t *testing.T) {
	for mime, want := range map[string]bool{
		"application/octet-stream": true,
		"image/png":                true,
		"text/plain":               false,
		"text/x-c; charset=utf-8":  false,
		"image/x-xbitmap":          false,
		"image/x-xpixmap; foo=bar": false,
		"application/json":         true,
	} {
		if got := MimeTypeIsBinary(mime); got != want {
			t.Errorf("MimeTypeIsBinary(%q) = %v, want %v", mime, got, want)
		}
	}
}

func TestFetchURLIsFile(t *testing.T) {
	_, err := newAdapter(t, Config{URL: fx.trunk + "/a.c"}).Fetch(context.Background(), "2", rundir.New(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "point url at a directory") {
		t.Fatalf("Fetch with a file URL = %v", err)
	}
}

func readPatch(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "diff.patch"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
