package vcstest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// Op is what one FileOp does to a path.
type Op string

const (
	OpAdd    Op = "add"
	OpEdit   Op = "edit"
	OpDelete Op = "delete"
	// OpMove moves From to Path (svn mv, p4 move), with Content as the
	// content at the new path: a harness writes it after the move, so a
	// move with a modification is one change, as people commit them.
	OpMove Op = "move"
)

// FileOp is one file of a change the harness commits. Paths are
// slash-separated and relative to the reviewed root.
type FileOp struct {
	Op      Op
	Path    string
	From    string
	Content []byte
	// Binary asks for a binary file (svn:mime-type, p4 type binary).
	Binary bool
	// Symlink asks for a symbolic link to Content (svn:special, p4 type
	// symlink); only with OpAdd.
	Symlink bool
}

// Harness gives the suite a repository of one adapter kind to change and
// read back.
type Harness interface {
	// Commit makes one change (revision, changelist) of ops and returns
	// its id as Fetch takes it.
	Commit(t *testing.T, desc string, ops ...FileOp) string
	// Adapter returns an adapter over the repository with scope as the
	// repo's include/exclude/max_* keys.
	Adapter(t *testing.T, scope vcs.Scope) vcs.Adapter
	// ChangePath is the Change's path for a path relative to the root
	// ("a.c" for svn, "depot/main/..../a.c" for p4).
	ChangePath(rel string) string
}

// suiteScope is what Run configures: an excluded tree and a small
// max_file_bytes so the "large file" shape costs nothing.
var suiteScope = vcs.Scope{Exclude: []string{"**/vendor/**"}, MaxFileBytes: 4096}

const (
	fileA      = "src/a.c"
	contentA   = "line1\nline2\nline3\nline4\nline5\n"
	contentA2  = "line1\nLINE2\nline3\nline4\nline5\nline6\n"
	contentA3  = contentA2 + "line7 after the move\n"
	spacesPath = "odd dir/we*ird?[1] name.txt"
	nonASCII   = "中文 目录/文件.txt"
	movedA     = "moved dir/a.c"
)

// Run runs the conformance suite: every adapter, given changes of the
// same shapes, must report the same Change (actions, skip reasons, line
// maps) and write the same run directory (new content under src/, a
// diff.patch whose parse agrees with the line maps).
//
// The shapes run in order on one repository (edit changes what add made,
// move moves it, delete deletes the moved file), so they are subtests of
// one suite value rather than independent tests.
func Run(t *testing.T, h Harness) {
	s := &suite{h: h, a: h.Adapter(t, suiteScope)}
	t.Run("add", s.add)
	t.Run("edit", s.edit)
	t.Run("move", s.move)
	t.Run("delete", s.delete)
	t.Run("binary", s.binary)
	t.Run("large file", s.largeFile)
	t.Run("excluded path", s.excludedPath)
	t.Run("spaces and glob characters", s.oddName)
	t.Run("non-ASCII", s.nonASCII)
	t.Run("max_review_bytes", s.maxReviewBytes)
	t.Run("tree at a revision", func(t *testing.T) { runTree(t, h, s.a) })
	t.Run("agent reads stay in scope", func(t *testing.T) { runScopedReads(t, h) })
}

// suite is one Run: the harness and the adapter under suiteScope.
type suite struct {
	h Harness
	a vcs.Adapter
}

// fetch reads rev into a fresh run directory and checks its diff.patch.
func (s *suite) fetch(t *testing.T, rev string) (*vcs.Change, rundir.Layout) {
	t.Helper()
	run := rundir.New(t.TempDir())
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	c, err := s.a.Fetch(context.Background(), rev, run)
	if err != nil {
		t.Fatalf("Fetch %s: %v", rev, err)
	}
	checkPatch(t, c, run)
	return c, run
}

// file is the change's file at rel (relative to the root).
func (s *suite) file(t *testing.T, c *vcs.Change, rel string) vcs.FileChange {
	t.Helper()
	f, ok := c.File(s.h.ChangePath(rel))
	if !ok {
		var paths []string
		for _, f := range c.Files {
			paths = append(paths, f.Path)
		}
		t.Fatalf("change has no %q; it has %q", s.h.ChangePath(rel), paths)
	}
	return f
}

// reviewed checks rel is reviewed with action and content under src/.
func (s *suite) reviewed(t *testing.T, c *vcs.Change, run rundir.Layout, rel string, action vcs.Action, content string) vcs.FileChange {
	t.Helper()
	f := s.file(t, c, rel)
	if f.Action != action || f.Skipped != "" || f.Binary {
		t.Errorf("%s: action %q skipped %q binary %v, want %q, reviewed", rel, f.Action, f.Skipped, f.Binary, action)
	}
	p, err := run.SrcPath(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != content {
		t.Errorf("%s: src content %q (%v), want %q", rel, got, err, content)
	}
	return f
}

// skipped checks rel is listed skipped for reason, with nothing under src/.
func (s *suite) skipped(t *testing.T, c *vcs.Change, run rundir.Layout, rel, reason string) vcs.FileChange {
	t.Helper()
	f := s.file(t, c, rel)
	if f.Skipped != reason {
		t.Errorf("%s: skipped %q, want %q", rel, f.Skipped, reason)
	}
	if p, err := run.SrcPath(f.Path); err == nil {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s (%s) has content under src/", rel, reason)
		}
	}
	return f
}

// wholeFile checks that every one of f's lines is added.
func wholeFile(t *testing.T, f vcs.FileChange, lines int) {
	t.Helper()
	want := []vcs.LineRange{{Start: 1, End: lines}}
	if !reflect.DeepEqual(f.Added, want) {
		t.Errorf("%s: added %v, want %v", f.Path, f.Added, want)
	}
}

func (s *suite) add(t *testing.T) {
	rev := s.h.Commit(t, "add", FileOp{Op: OpAdd, Path: fileA, Content: []byte(contentA)})
	c, run := s.fetch(t, rev)
	if c.Revision != rev || c.Description == "" || c.Author == "" {
		t.Errorf("metadata: revision %q author %q description %q", c.Revision, c.Author, c.Description)
	}
	wholeFile(t, s.reviewed(t, c, run, fileA, vcs.ActionAdd, contentA), 5)
}

func (s *suite) edit(t *testing.T) {
	rev := s.h.Commit(t, "edit", FileOp{Op: OpEdit, Path: fileA, Content: []byte(contentA2)})
	c, run := s.fetch(t, rev)
	f := s.reviewed(t, c, run, fileA, vcs.ActionModify, contentA2)
	for line, added := range map[int]bool{1: false, 2: true, 3: false, 6: true} {
		if f.IsAdded(line) != added {
			t.Errorf("edit: line %d added = %v, want %v (added %v)", line, !added, added, f.Added)
		}
	}
}

// move moves fileA and modifies it in the same change: the moved file
// names its source (CopyFromPath, in the Change's path form), which is
// how a finding follows a rename; the source is deleted.
func (s *suite) move(t *testing.T) {
	rev := s.h.Commit(t, "move", FileOp{Op: OpMove, From: fileA, Path: movedA, Content: []byte(contentA3)})
	c, run := s.fetch(t, rev)
	f := s.reviewed(t, c, run, movedA, vcs.ActionAdd, contentA3)
	if f.CopyFromPath != s.h.ChangePath(fileA) {
		t.Errorf("moved file: copied from %q, want %q (the move's source)", f.CopyFromPath, s.h.ChangePath(fileA))
	}
	if !f.IsAdded(7) {
		t.Errorf("moved file: the line the move added is not an added line (added %v)", f.Added)
	}
	if f := s.skipped(t, c, run, fileA, vcs.SkipDeleted); f.Action != vcs.ActionDelete || f.CopyFromPath != "" {
		t.Errorf("move source: action %q copied from %q, want a plain delete", f.Action, f.CopyFromPath)
	}
}

func (s *suite) delete(t *testing.T) {
	rev := s.h.Commit(t, "delete", FileOp{Op: OpDelete, Path: movedA})
	c, run := s.fetch(t, rev)
	if f := s.skipped(t, c, run, movedA, vcs.SkipDeleted); f.Action != vcs.ActionDelete {
		t.Errorf("delete: action %q", f.Action)
	}
}

func (s *suite) binary(t *testing.T) {
	rev := s.h.Commit(t, "binary", FileOp{Op: OpAdd, Path: "img/logo.png", Content: []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), Binary: true})
	c, run := s.fetch(t, rev)
	if f := s.skipped(t, c, run, "img/logo.png", vcs.SkipBinary); !f.Binary {
		t.Errorf("binary file not marked Binary")
	}
}

func (s *suite) largeFile(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef\n"), 1000)
	rev := s.h.Commit(t, "large", FileOp{Op: OpAdd, Path: "data/big.txt", Content: big},
		FileOp{Op: OpAdd, Path: "data/small.txt", Content: []byte("small\n")})
	c, run := s.fetch(t, rev)
	s.skipped(t, c, run, "data/big.txt", vcs.SkipTooLarge)
	s.reviewed(t, c, run, "data/small.txt", vcs.ActionAdd, "small\n")
}

func (s *suite) excludedPath(t *testing.T) {
	rev := s.h.Commit(t, "vendor", FileOp{Op: OpAdd, Path: "lib/vendor/x.c", Content: []byte("int x;\n")},
		FileOp{Op: OpAdd, Path: "lib/y.c", Content: []byte("int y;\n")})
	c, run := s.fetch(t, rev)
	s.skipped(t, c, run, "lib/vendor/x.c", vcs.SkipExcluded)
	s.reviewed(t, c, run, "lib/y.c", vcs.ActionAdd, "int y;\n")
}

func (s *suite) oddName(t *testing.T) {
	rev := s.h.Commit(t, "odd name", FileOp{Op: OpAdd, Path: spacesPath, Content: []byte("odd\nname\n")})
	c, run := s.fetch(t, rev)
	wholeFile(t, s.reviewed(t, c, run, spacesPath, vcs.ActionAdd, "odd\nname\n"), 2)
}

func (s *suite) nonASCII(t *testing.T) {
	// Mostly ASCII content: svn add calls a file of mostly high bytes
	// binary, and the name is what this shape is about.
	const text = "hello 你好\nworld 世界\n"
	rev := s.h.Commit(t, "non-ASCII", FileOp{Op: OpAdd, Path: nonASCII, Content: []byte(text)})
	c, run := s.fetch(t, rev)
	wholeFile(t, s.reviewed(t, c, run, nonASCII, vcs.ActionAdd, text), 2)
}

// maxReviewBytes uses an adapter of its own with a 10-byte cap: the
// first file passes, the second is past the cap.
func (s *suite) maxReviewBytes(t *testing.T) {
	b := s.h.Adapter(t, vcs.Scope{MaxReviewBytes: 10})
	rev := s.h.Commit(t, "caps", FileOp{Op: OpAdd, Path: "cap/1.txt", Content: []byte("12345678\n")},
		FileOp{Op: OpAdd, Path: "cap/2.txt", Content: []byte("12345678\n")})
	run := rundir.New(t.TempDir())
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	c, err := b.Fetch(context.Background(), rev, run)
	if err != nil {
		t.Fatal(err)
	}
	s.reviewed(t, c, run, "cap/1.txt", vcs.ActionAdd, "12345678\n")
	s.skipped(t, c, run, "cap/2.txt", vcs.SkipReviewBytesCap)
}

// runScopedReads checks that what an agent may ask for after the review
// started (fetch_more_context is Cat, try_blame is Blame) is bounded by
// the repo's include/exclude like the review itself: a file outside
// include or inside exclude is vcs.ErrPathOutOfScope, and none of its
// bytes are written.
func runScopedReads(t *testing.T, h Harness) {
	ctx := context.Background()
	const secret = "AWS_SECRET=do-not-leak\n"
	rev := h.Commit(t, "scoped reads",
		FileOp{Op: OpAdd, Path: "scoped/src/ok.c", Content: []byte("int ok;\n")},
		FileOp{Op: OpAdd, Path: "scoped/src/private/key.c", Content: []byte(secret)},
		FileOp{Op: OpAdd, Path: "scoped/secrets/prod.env", Content: []byte(secret)})
	// The methods agent.Replayer calls; every adapter has them.
	type replayer interface {
		Cat(ctx context.Context, path, rev string, w io.Writer) error
		Blame(ctx context.Context, path, rev string, start, end int) (vcs.BlameResult, error)
	}
	ad := h.Adapter(t, vcs.Scope{
		Include: []string{h.ChangePath("scoped/src") + "/**"},
		Exclude: []string{h.ChangePath("scoped/src/private") + "/**"},
	})
	a, ok := ad.(replayer)
	if !ok {
		t.Fatalf("%T has no Cat and Blame", ad)
	}
	// The Change carries the scope, so the review tools refuse such a
	// request when the agent makes it.
	run := rundir.New(t.TempDir())
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	c, err := ad.Fetch(ctx, rev, run)
	if err != nil {
		t.Fatal(err)
	}
	if c.Scope == nil || !c.Scope.Match(h.ChangePath("scoped/src/ok.c")) || c.Scope.Match(h.ChangePath("scoped/secrets/prod.env")) ||
		c.Scope.Match(h.ChangePath("scoped/src/private/key.c")) {
		t.Errorf("Change.Scope = %+v, want the repo's include/exclude", c.Scope)
	}
	var b bytes.Buffer
	if err := a.Cat(ctx, h.ChangePath("scoped/src/ok.c"), rev, &b); err != nil || b.String() != "int ok;\n" {
		t.Errorf("Cat of an included file = %q, %v", b.String(), err)
	}
	if _, err := a.Blame(ctx, h.ChangePath("scoped/src/ok.c"), rev, 1, 1); err != nil {
		t.Errorf("Blame of an included file: %v", err)
	}
	for _, rel := range []string{"scoped/secrets/prod.env", "scoped/src/private/key.c"} {
		p := h.ChangePath(rel)
		b.Reset()
		if err := a.Cat(ctx, p, rev, &b); !errors.Is(err, vcs.ErrPathOutOfScope) {
			t.Errorf("Cat(%s) = %v, want vcs.ErrPathOutOfScope", p, err)
		}
		if b.Len() > 0 {
			t.Errorf("Cat(%s) wrote %q of an out-of-scope file", p, b.String())
		}
		if res, err := a.Blame(ctx, p, rev, 1, 1); !errors.Is(err, vcs.ErrPathOutOfScope) {
			t.Errorf("Blame(%s) = %+v, %v; want vcs.ErrPathOutOfScope", p, res, err)
		}
	}
}

// runTree checks vcs.TreeReader: the listing of a directory at a
// revision (what the ladder reads .agents/skills with) and symlink
// detection (instruction files that are symlinks are refused).
func runTree(t *testing.T, h Harness, a vcs.Adapter) {
	tr, ok := a.(vcs.TreeReader)
	if !ok {
		t.Fatalf("%T does not implement vcs.TreeReader", a)
	}
	ctx := context.Background()
	before := h.Commit(t, "before the skills", FileOp{Op: OpAdd, Path: "tree/before.txt", Content: []byte("x\n")})
	rev := h.Commit(t, "skills",
		FileOp{Op: OpAdd, Path: "tree/.agents/skills/foo/SKILL.md", Content: []byte("# foo\n")},
		FileOp{Op: OpAdd, Path: "tree/.agents/skills/bar/SKILL.md", Content: []byte("# bar\n")},
		FileOp{Op: OpAdd, Path: "tree/.agents/skills/README.md", Content: []byte("readme\n")},
		FileOp{Op: OpAdd, Path: "tree/.agents/skills/evil", Content: []byte("../../../etc"), Symlink: true})
	skills := h.ChangePath("tree/.agents/skills")
	got, err := tr.List(ctx, skills, rev)
	if want := []string{"README.md", "bar/", "evil", "foo/"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("List(%s, %s) = %q, %v; want %q", skills, rev, got, err, want)
	}
	if _, err := tr.List(ctx, skills, before); !errors.Is(err, vcs.ErrNoSuchPath) {
		t.Errorf("List before the skills were added: %v, want vcs.ErrNoSuchPath", err)
	}
	if _, err := tr.List(ctx, h.ChangePath("tree/before.txt"), rev); !errors.Is(err, vcs.ErrNoSuchPath) {
		t.Errorf("List of a file: %v, want vcs.ErrNoSuchPath", err)
	}
	if _, err := tr.List(ctx, "../outside", rev); !errors.Is(err, vcs.ErrPathOutOfScope) {
		t.Errorf("List(../outside): %v, want vcs.ErrPathOutOfScope", err)
	}
	for p, want := range map[string]bool{"tree/.agents/skills/evil": true, "tree/.agents/skills/foo/SKILL.md": false} {
		if got, err := tr.IsSymlink(ctx, h.ChangePath(p), rev); err != nil || got != want {
			t.Errorf("IsSymlink(%s) = %v, %v; want %v", p, got, err, want)
		}
	}
}

// checkPatch requires diff.patch to parse and to agree with the line maps
// of every reviewed file.
func checkPatch(t *testing.T, c *vcs.Change, run rundir.Layout) {
	t.Helper()
	b, err := os.ReadFile(run.DiffPath())
	if err != nil {
		t.Fatalf("diff.patch: %v", err)
	}
	diffs, err := vcs.ParseDiff(b)
	if err != nil {
		t.Fatalf("parse diff.patch: %v", err)
	}
	for _, f := range c.Files {
		if f.Skipped != "" {
			continue
		}
		d := diffs[f.Path]
		if !reflect.DeepEqual(d.Added, f.Added) {
			t.Errorf("%s: diff.patch adds %v, the Change says %v\n%s", f.Path, d.Added, f.Added, excerpt(b, f.Path))
		}
	}
}

func excerpt(patch []byte, path string) string {
	s := string(patch)
	i := strings.Index(s, path)
	if i < 0 {
		return "(no section)"
	}
	return s[i:min(len(s), i+400)]
}
