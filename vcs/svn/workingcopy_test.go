package svn

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/vcs/vcstest"
)

// wcFixture is a checkout of a small repository of its own with one
// change of each kind a working copy holds, not committed.
type wcFixture struct {
	url, wc string
}

func newWorkingCopy(t *testing.T) wcFixture {
	t.Helper()
	tmp := t.TempDir()
	repo, seed, wc := filepath.Join(tmp, "repo"), filepath.Join(tmp, "seed"), filepath.Join(tmp, "wc")
	run := func(dir, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
	}
	write := func(root, rel, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svn := func(args ...string) {
		t.Helper()
		run(wc, "svn", append([]string{"--non-interactive", "--config-dir", fx.configDir}, args...)...)
	}
	run(tmp, "svnadmin", "create", repo)
	u := (&url.URL{Scheme: "file", Path: repo}).String()
	write(seed, "a.c", "one\ntwo\nthree\n")
	write(seed, "gone.txt", "bye\n")
	write(seed, "vendor/lib.c", "lib\n")
	run(tmp, "svn", "--non-interactive", "--config-dir", fx.configDir, "import", "-q", "-m", "initial import", seed, u)
	run(tmp, "svn", "--non-interactive", "--config-dir", fx.configDir, "checkout", "-q", u, wc)

	write(wc, "a.c", "one\nTWO\nthree\nfour\n")
	write(wc, "added.go", "package x\n")
	svn("add", "-q", "added.go")
	write(wc, "newdir/loose.txt", "not added\nyet\n")
	svn("rm", "-q", "gone.txt")
	write(wc, "vendor/lib.c", "lib\nchanged\n")
	return wcFixture{url: u, wc: wc}
}

func fetchWC(t *testing.T, a *Adapter, wc string) (*vcs.Change, rundir.Layout) {
	t.Helper()
	layout := rundir.New(t.TempDir())
	if err := layout.Create(); err != nil {
		t.Fatal(err)
	}
	c, err := a.FetchWorkingCopy(context.Background(), wc, layout)
	if err != nil {
		t.Fatalf("FetchWorkingCopy: %v", err)
	}
	return c, layout
}

// Modified, added, unversioned and deleted files of a real working copy:
// each listed with its action and changed lines, the reviewed ones copied
// to src/, the repo's exclude honoured, and svn run through svn_path.
func TestFetchWorkingCopy(t *testing.T) {
	f := newWorkingCopy(t)
	real, err := exec.LookPath("svn")
	if err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(t.TempDir(), "calls")
	wrapper := vcstest.FakeTool(t, t.TempDir(), "svn",
		"echo \"$1\" >> "+vcstest.Quote(calls)+"\nexec "+vcstest.Quote(real)+` "$@"`+"\n")
	a := newAdapter(t, Config{URL: f.url, SvnPath: wrapper, Scope: vcs.Scope{Exclude: []string{"vendor/**"}}})

	c, layout := fetchWC(t, a, f.wc)
	if c.VCS != vcs.KindSVN || c.Revision != "1+local" || !strings.Contains(c.Description, f.wc) {
		t.Errorf("change: vcs %q revision %q description %q", c.VCS, c.Revision, c.Description)
	}
	got := map[string]vcs.FileChange{}
	for _, fc := range c.Files {
		got[fc.Path] = fc
	}
	for _, want := range []struct {
		path    string
		action  vcs.Action
		skipped string
		added   []int
	}{
		{"a.c", vcs.ActionModify, "", []int{2, 4}},
		{"added.go", vcs.ActionAdd, "", []int{1}},
		{"newdir/loose.txt", vcs.ActionAdd, "", []int{1, 2}},
		{"gone.txt", vcs.ActionDelete, vcs.SkipDeleted, nil},
		{"vendor/lib.c", vcs.ActionModify, vcs.SkipExcluded, nil},
	} {
		fc, ok := got[want.path]
		if !ok {
			t.Errorf("%s not listed; files %+v", want.path, c.Files)
			continue
		}
		if fc.Action != want.action || fc.Skipped != want.skipped {
			t.Errorf("%s: action %q skipped %q, want %q %q", want.path, fc.Action, fc.Skipped, want.action, want.skipped)
		}
		for _, n := range want.added {
			if !fc.IsAdded(n) {
				t.Errorf("%s: line %d not added (%+v)", want.path, n, fc.Added)
			}
		}
	}
	if src := readSrc(t, layout.Dir(), "a.c"); src != "one\nTWO\nthree\nfour\n" {
		t.Errorf("src/a.c = %q", src)
	}
	if src := readSrc(t, layout.Dir(), "newdir/loose.txt"); src != "not added\nyet\n" {
		t.Errorf("src/newdir/loose.txt = %q", src)
	}
	assertNoSrc(t, layout.Dir(), "vendor/lib.c")
	assertNoSrc(t, layout.Dir(), "gone.txt")
	patch, err := os.ReadFile(layout.DiffPath())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(patch, []byte("Index: newdir/loose.txt")) || !bytes.Contains(patch, []byte("+TWO")) {
		t.Errorf("diff.patch lacks the unversioned file or the modification:\n%s", patch)
	}
	if c.Scope == nil || len(c.Scope.Exclude) != 1 {
		t.Errorf("change scope %+v, want the repo's exclude recorded", c.Scope)
	}
	log, err := os.ReadFile(calls)
	if err != nil {
		t.Fatalf("svn_path was not used: %v", err)
	}
	for _, sub := range []string{"status", "diff", "info"} {
		if !strings.Contains(string(log), sub+"\n") {
			t.Errorf("svn_path ran %q, want %s among them", log, sub)
		}
	}

	u, err := a.WorkingCopyURL(context.Background(), f.wc)
	if err != nil || u != f.url {
		t.Errorf("WorkingCopyURL = %q, %v, want %q", u, err, f.url)
	}
}

// Context requests read the working copy on disk, never outside it nor
// outside the repo's scope; blame is refused.
func TestWorkingCopyFiles(t *testing.T) {
	f := newWorkingCopy(t)
	a := newAdapter(t, Config{URL: f.url, Scope: vcs.Scope{Exclude: []string{"vendor/**"}}})
	files := a.WorkingCopyFiles(f.wc)
	var out bytes.Buffer
	if err := files.Cat(context.Background(), "a.c", "", &out); err != nil || out.String() != "one\nTWO\nthree\nfour\n" {
		t.Errorf("Cat a.c = %q, %v", out.String(), err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(f.wc, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../x", "/etc/passwd", "vendor/lib.c", "escape"} {
		if err := files.Cat(context.Background(), p, "", &out); !errors.Is(err, vcs.ErrPathOutOfScope) {
			t.Errorf("Cat %s = %v, want ErrPathOutOfScope", p, err)
		}
	}
	if err := files.Cat(context.Background(), "missing.c", "", &out); !errors.Is(err, vcs.ErrNoSuchPath) {
		t.Errorf("Cat missing.c = %v, want ErrNoSuchPath", err)
	}
	if _, err := files.Blame(context.Background(), "a.c", "", 1, 1); err == nil {
		t.Error("Blame of a working copy succeeded")
	}
}

// With no [[repo]], a working copy is read with svn from PATH and the
// default scope: every change is reviewed.
func TestWorkingCopyReader(t *testing.T) {
	f := newWorkingCopy(t)
	a, err := NewWorkingCopyReader("")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := fetchWC(t, a, f.wc)
	lib, ok := c.File("vendor/lib.c")
	if !ok || lib.Skipped != "" || c.Scope != nil {
		t.Errorf("vendor/lib.c %+v (listed %v), scope %+v: want reviewed under the default scope", lib, ok, c.Scope)
	}
	if _, err := NewWorkingCopyReader(filepath.Join(t.TempDir(), "no-svn")); !errors.Is(err, vcs.ErrToolMissing) {
		t.Errorf("a missing svn_path: %v, want ErrToolMissing", err)
	}
	if _, err := a.FetchWorkingCopy(context.Background(), t.TempDir(), rundir.New(t.TempDir())); err == nil {
		t.Error("a directory that is no working copy was read")
	}
}
