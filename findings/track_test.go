package findings

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// memStore applies Decisions as a store would, for the decision's tests.
type memStore struct {
	rows   map[int64]Finding
	events map[int64][]Event
	next   int64
}

func newMem() *memStore { return &memStore{rows: map[int64]Finding{}, events: map[int64][]Event{}} }

func (m *memStore) all() []Finding {
	var out []Finding
	for _, f := range m.rows {
		out = append(out, f)
	}
	return out
}

func (m *memStore) tracked(run int64) map[int64]bool {
	out := map[int64]bool{}
	for id, evs := range m.events {
		for _, e := range evs {
			if e.RunID == run {
				out[id] = true
			}
		}
	}
	return out
}

func (m *memStore) track(t *testing.T, in Review) (Outcome, int) {
	t.Helper()
	d, err := Decide(m.all(), m.tracked(in.RunID), in)
	if err != nil {
		t.Fatalf("decide run %d: %v", in.RunID, err)
	}
	for i := range d.Writes {
		if d.Writes[i].Finding.ID == 0 {
			m.next++
			d.SetID(i, m.next)
		}
		w := d.Writes[i]
		for _, f := range m.rows {
			if f.ID != w.Finding.ID && f.Key == w.Finding.Key {
				t.Fatalf("run %d: finding %d would take the key of finding %d", in.RunID, w.Finding.ID, f.ID)
			}
		}
		m.rows[w.Finding.ID] = w.Finding
		m.events[w.Finding.ID] = append(m.events[w.Finding.ID], w.Events...)
	}
	return d.Outcome, len(d.Writes)
}

func (m *memStore) history(id int64) string {
	var k []string
	for _, e := range m.events[id] {
		k = append(k, string(e.Kind))
	}
	return strings.Join(k, ",")
}

type files map[string]string

func rev(run int64, src files, problems ...review.Problem) Review {
	ch := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: fmt.Sprint(run), Author: fmt.Sprint("dev", run)}
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range src {
			if !yield(p) {
				return
			}
		}
	}) {
		ch.Files = append(ch.Files, vcs.FileChange{Path: p, Action: vcs.ActionModify, NodeKind: vcs.NodeFile})
	}
	return Review{Repo: "main", VCS: vcs.KindSVN, RunID: run, Revision: fmt.Sprint(run), Author: fmt.Sprint("dev", run),
		At: time.Date(2026, 1, 1, 0, 0, int(run), 0, time.UTC), Change: ch, Problems: problems, Complete: true,
		Source: func(path string) ([]string, error) {
			c, ok := src[path]
			if !ok {
				return nil, errors.New("not fetched")
			}
			return strings.Split(c, "\n"), nil
		}}
}

func prob(file string, line int, cat, msg, fp string) review.Problem {
	return review.Problem{File: file, Line: line, Severity: review.SeverityMedium, Category: cat, Message: msg, Fingerprint: fp}
}

func seenClasses(o Outcome) string {
	var c []string
	for _, s := range o.Seen {
		x := string(s.Class)
		if s.Duplicate {
			x += "(dup)"
		}
		c = append(c, x)
	}
	return strings.Join(c, ",")
}

const v1 = "package a\n\nfunc f() {\n\tx := load()\n\tuse(x)\n}\n"

func TestDecideMatching(t *testing.T) {
	for _, c := range []struct {
		name   string
		second Review
		want   string // classes of the second review
	}{
		{"same code two lines lower", rev(2, files{"a.go": "package a\n\n// doc\n// more\nfunc f() {\n\tx := load()\n\tuse(x)\n}\n"},
			prob("a.go", 6, "bug", "x may be nil", "")), "repeat"},
		{"whitespace-only edit", rev(2, files{"a.go": "package a\n\nfunc f() {\n    x  :=  load()\n\tuse(x)\n}\n"},
			prob("a.go", 4, "bug", "x may be nil", "")), "repeat"},
		{"context edited, the anchor unique", rev(2, files{"a.go": "package a\n\nfunc g() {\n\tx := load()\n\tuse(x)\n}\n"},
			prob("a.go", 4, "bug", "x may be nil", "")), "repeat"},
		{"anchored code rewritten, agent's fingerprint kept", rev(2, files{"a.go": "package a\n\nfunc f() {\n\tx := loadAll()\n\tuse(x)\n}\n"},
			prob("a.go", 4, "bug", "x may be nil", "nil-x")), "repeat"},
		{"anchored code rewritten, no fingerprint, the same words", rev(2, files{"a.go": "package a\n\nfunc f() {\n\tx := loadAll()\n\tuse(x)\n}\n"},
			prob("a.go", 4, "bug", "x  may be nil", "")), "repeat"},
		{"anchored code rewritten, no fingerprint, other words", rev(2, files{"a.go": "package a\n\nfunc f() {\n\tx := loadAll()\n\tuse(x)\n}\n"},
			prob("a.go", 4, "bug", "loadAll may return nil", "")), "new"},
		{"fingerprint in another category", rev(2, files{"a.go": "package a\n\nfunc f() {\n\tx := loadAll()\n\tuse(x)\n}\n"},
			prob("a.go", 4, "style", "x may be nil", "nil-x")), "new"},
		{"another file", rev(2, files{"b.go": v1}, prob("b.go", 4, "bug", "x may be nil", "nil-x")), "new"},
		{"two problems, one finding: the second is new", rev(2, files{"a.go": "package a\n\nfunc f() {\n\tx := loadAll()\n\tuse(x)\n}\n"},
			prob("a.go", 4, "bug", "x may be nil", "nil-x"), prob("a.go", 5, "bug", "x unused", "nil-x")), "repeat,new"},
		{"same key twice is one problem", rev(2, files{"a.go": v1},
			prob("a.go", 4, "bug", "x may be nil", ""), prob("a.go", 4, "bug", "and leaks", "")), "repeat,repeat(dup)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newMem()
			first, _ := m.track(t, rev(1, files{"a.go": v1}, prob("a.go", 4, "bug", "x may be nil", "nil-x")))
			id := first.Seen[0].Finding.ID
			out, _ := m.track(t, c.second)
			if got := seenClasses(out); got != c.want {
				t.Fatalf("classes = %s, want %s", got, c.want)
			}
			if out.Seen[0].Class == ClassRepeat {
				f := m.rows[id]
				if out.Seen[0].Finding.ID != id || f.Sightings != 2 || f.LastRevision != "2" || f.FirstRevision != "1" {
					t.Errorf("repeat finding = %+v", f)
				}
			}
			if strings.Contains(c.want, "dup") && out.Seen[1].Finding.ID != out.Seen[0].Finding.ID {
				t.Errorf("duplicate refers to finding %d, not %d", out.Seen[1].Finding.ID, out.Seen[0].Finding.ID)
			}
		})
	}
}

func TestDecideNewDuplicateGetsTheID(t *testing.T) {
	m := newMem()
	out, _ := m.track(t, rev(1, files{"a.go": v1}, prob("a.go", 4, "bug", "a", ""), prob("a.go", 4, "bug", "b", "")))
	if seenClasses(out) != "new,new(dup)" || out.Seen[0].Finding.ID == 0 || out.Seen[1].Finding.ID != out.Seen[0].Finding.ID || len(m.rows) != 1 {
		t.Errorf("outcome = %+v", out)
	}
}

func TestDecideResolution(t *testing.T) {
	fixed := "package a\n\nfunc f() {\n\tx := mustLoad()\n\tuse(x)\n}\n"
	for _, c := range []struct {
		name    string
		edit    func(*Review)
		resolve bool
	}{
		{"the anchored line rewritten", func(r *Review) {}, true},
		{"only whitespace changed", func(r *Review) { r.Source = srcOf("package a\nfunc f() {\n  x := load()\n}\n") }, false},
		{"still reported", func(r *Review) { r.Problems = []review.Problem{prob("a.go", 4, "bug", "x may be nil", "nil-x")} }, false},
		{"the file skipped (too large)", func(r *Review) { r.Change.Files[0].Skipped = "too large" }, false},
		{"the file unreadable", func(r *Review) {
			r.Source = func(string) ([]string, error) { return nil, errors.New("gone") }
		}, false},
		{"the file deleted", func(r *Review) {
			r.Change.Files[0] = vcs.FileChange{Path: "a.go", Action: vcs.ActionDelete, NodeKind: vcs.NodeFile, Skipped: "deleted"}
		}, true},
		{"the file not in the change", func(r *Review) { r.Change.Files[0].Path = "b.go" }, false},
		{"an older revision", func(r *Review) { r.Revision = "0" }, false},
		{"an incomplete review", func(r *Review) { r.Complete = false }, false},
		{"another repo's change", func(r *Review) { r.Repo = "lib" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newMem()
			id := must(m.track(t, rev(1, files{"a.go": v1}, prob("a.go", 4, "bug", "x may be nil", "nil-x")))).Seen[0].Finding.ID
			in := rev(2, files{"a.go": fixed})
			c.edit(&in)
			out, _ := m.track(t, in)
			resolved := len(out.Resolved) == 1 && out.Resolved[0].ID == id
			if resolved != c.resolve || (!c.resolve && len(out.Resolved) != 0) {
				t.Fatalf("resolved = %+v, want resolved %v", out.Resolved, c.resolve)
			}
			f := m.rows[id]
			if c.resolve && (f.State != StateResolved || f.ResolvedRunID != 2 || f.ResolvedRevision != in.Revision || f.ResolvedAuthor != "dev2" || f.ResolvedAt.IsZero()) {
				t.Errorf("resolved finding = %+v", f)
			}
			if !c.resolve && f.State == StateResolved {
				t.Errorf("finding resolved: %+v", f)
			}
		})
	}
}

func must(o Outcome, _ int) Outcome { return o }

func srcOf(content string) func(string) ([]string, error) {
	return func(string) ([]string, error) { return strings.Split(content, "\n"), nil }
}

func TestDecideIdempotentPerRun(t *testing.T) {
	m := newMem()
	in1 := rev(1, files{"a.go": v1, "b.go": "package b\nvar y = 2\n"}, prob("a.go", 4, "bug", "x may be nil", ""), prob("b.go", 2, "style", "global", ""))
	first, _ := m.track(t, in1)
	again, writes := m.track(t, in1)
	if writes != 0 || seenClasses(again) != "new,new" || again.Seen[0].Finding.ID != first.Seen[0].Finding.ID {
		t.Errorf("run 1 again: %d writes, %+v", writes, again)
	}
	in2 := rev(2, files{"a.go": v1, "b.go": "package b\n"}, prob("a.go", 4, "bug", "x may be nil", ""))
	second, _ := m.track(t, in2)
	if seenClasses(second) != "repeat" || len(second.Resolved) != 1 {
		t.Fatalf("run 2 = %+v", second)
	}
	again2, writes := m.track(t, in2)
	if writes != 0 || seenClasses(again2) != "repeat" || len(again2.Resolved) != 1 || again2.Resolved[0].ID != second.Resolved[0].ID {
		t.Errorf("run 2 again: %d writes, %+v", writes, again2)
	}
	if f := m.rows[first.Seen[0].Finding.ID]; f.Sightings != 2 {
		t.Errorf("sightings = %d, want 2 (the repeat counted once)", f.Sightings)
	}
	in3 := rev(3, files{"b.go": "package b\nvar y = 2\n"}, prob("b.go", 2, "style", "global", ""))
	third, _ := m.track(t, in3)
	if seenClasses(third) != "reopened" || third.Seen[0].Finding.AnnouncedRunID != 3 {
		t.Errorf("run 3 = %+v", third)
	}
	if again3, writes := m.track(t, in3); writes != 0 || seenClasses(again3) != "reopened" {
		t.Errorf("run 3 again: %d writes, %+v", writes, again3)
	}
	if h := m.history(second.Resolved[0].ID); h != "reported,resolved,reopened" {
		t.Errorf("history = %s", h)
	}
}

func TestDecideRenames(t *testing.T) {
	m := newMem()
	id := must(m.track(t, rev(1, files{"old/a.go": v1}, prob("old/a.go", 4, "bug", "x may be nil", "")))).Seen[0].Finding.ID
	renamed := func(run int64, to, content string, problems ...review.Problem) Review {
		in := rev(run, files{to: content}, problems...)
		from := m.rows[id].Path
		in.Change.Files = []vcs.FileChange{{Path: to, Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, CopyFromPath: from, CopyFromRev: "1"},
			{Path: from, Action: vcs.ActionDelete, NodeKind: vcs.NodeFile, Skipped: "deleted"}}
		return in
	}
	// Reported in the new file: the same finding, moved.
	out, _ := m.track(t, renamed(2, "new/a.go", v1, prob("new/a.go", 4, "bug", "x may be nil", "")))
	if seenClasses(out) != "repeat" || out.Seen[0].Finding.ID != id || m.rows[id].Path != "new/a.go" || len(out.Resolved) != 0 {
		t.Fatalf("renamed and reported: %+v", out)
	}
	// Renamed again, the agent quiet: it follows the file.
	out, _ = m.track(t, renamed(3, "b.go", "package a\n\nfunc f() {\n\tx := load()\n\tuse(x)\n}\n"))
	if len(out.Resolved) != 0 || m.rows[id].Path != "b.go" || m.rows[id].State != StateOpen {
		t.Fatalf("quiet rename: %+v, finding %+v", out, m.rows[id])
	}
	// Later reported in b.go as it is now: matched by its moved key.
	out, _ = m.track(t, rev(4, files{"b.go": v1}, prob("b.go", 4, "bug", "x may be nil", "")))
	if seenClasses(out) != "repeat" || out.Seen[0].Finding.ID != id {
		t.Fatalf("after the rename: %+v", out)
	}
	// Renamed with the code rewritten: resolved.
	out, _ = m.track(t, renamed(5, "c.go", "package a\n"))
	if len(out.Resolved) != 1 || m.rows[id].State != StateResolved {
		t.Fatalf("rename that fixed it: %+v", out)
	}
	if h := m.history(id); h != "reported,moved,seen,moved,seen,resolved" {
		t.Errorf("history = %s", h)
	}
}

func TestDecideDismissed(t *testing.T) {
	m := newMem()
	id := must(m.track(t, rev(1, files{"a.go": v1}, prob("a.go", 4, "bug", "x may be nil", "")))).Seen[0].Finding.ID
	f := m.rows[id]
	f.State, f.Dismissal = StateDismissed, ActionFalsePositive
	m.rows[id] = f
	out, _ := m.track(t, rev(2, files{"a.go": v1}, prob("a.go", 4, "bug", "x may be nil", "")))
	if seenClasses(out) != "dismissed" || m.rows[id].State != StateDismissed || m.rows[id].Sightings != 2 {
		t.Errorf("dismissed seen again: %+v", out)
	}
	// A dismissed finding is not resolved either: it keeps suppressing.
	out, _ = m.track(t, rev(3, files{"a.go": "package a\n"}))
	if len(out.Resolved) != 0 {
		t.Errorf("dismissed finding resolved: %+v", out.Resolved)
	}
}

func TestPrepareRefuses(t *testing.T) {
	shelf := rev(1, files{"a.go": v1})
	shelf.Revision = "shelf-42-1700000000000"
	if _, err := Prepare(shelf); !errors.Is(err, ErrShelved) {
		t.Errorf("shelf: %v", err)
	}
	for _, edit := range []func(*Review){
		func(r *Review) { r.Repo = "" },
		func(r *Review) { r.RunID = 0 },
		func(r *Review) { r.Revision = "" },
		func(r *Review) { r.Problems = []review.Problem{{File: "", Line: 1, Severity: review.SeverityLow}} },
		func(r *Review) { r.Problems = []review.Problem{{File: "a.go", Line: 1, Severity: "urgent"}} },
	} {
		in := rev(1, files{"a.go": v1})
		edit(&in)
		if _, err := Prepare(in); !errors.Is(err, ErrInvalidReview) {
			t.Errorf("%+v: err = %v, want ErrInvalidReview", in, err)
		}
	}
}

func TestMessageKeyWhenSourceUnavailable(t *testing.T) {
	m := newMem()
	in := rev(1, files{})
	in.Problems = []review.Problem{prob("gone.go", 3, "bug", "leak", "")}
	out, _ := m.track(t, in)
	if out.Seen[0].Finding.Key != MessageKey("main", "gone.go", "bug", "leak") || out.Seen[0].Finding.Anchor != "" {
		t.Fatalf("fallback key: %+v", out.Seen[0].Finding)
	}
	in2 := rev(2, files{})
	in2.Problems = in.Problems
	if out, _ := m.track(t, in2); seenClasses(out) != "repeat" {
		t.Errorf("the same message again: %s", seenClasses(out))
	}
}

func TestDecideDirectories(t *testing.T) {
	m := newMem()
	out, _ := m.track(t, rev(1, files{"lib/a.go": v1, "lib/sub/b.go": v1},
		prob("lib/a.go", 4, "bug", "x may be nil", ""), prob("lib/sub/b.go", 4, "bug", "x may be nil", "")))
	a, b := out.Seen[0].Finding.ID, out.Seen[1].Finding.ID

	// svn mv lib pkg: only the directories are listed; the files move
	// with them, unread, and stay open.
	in := rev(2, files{})
	in.Change.Files = []vcs.FileChange{{Path: "pkg", Action: vcs.ActionAdd, NodeKind: vcs.NodeDir, CopyFromPath: "lib", Skipped: "directory"},
		{Path: "lib", Action: vcs.ActionDelete, NodeKind: vcs.NodeDir, Skipped: "deleted"}}
	if !slices.Equal(must(m.track(t, in)).Resolved, nil) {
		t.Fatalf("a directory move resolved findings")
	}
	if m.rows[a].Path != "pkg/a.go" || m.rows[b].Path != "pkg/sub/b.go" || m.rows[a].State != StateOpen {
		t.Fatalf("after the move: %+v, %+v", m.rows[a], m.rows[b])
	}
	// Reported there later: the same finding (its anchor), re-keyed.
	out, _ = m.track(t, rev(3, files{"pkg/a.go": v1}, prob("pkg/a.go", 4, "bug", "x may be nil", "")))
	if seenClasses(out) != "repeat" || out.Seen[0].Finding.ID != a || m.rows[a].Key != Key("main", "pkg/a.go", "bug", strings.Split(v1, "\n"), 4, 0) {
		t.Fatalf("reported after the move: %+v", out)
	}
	// svn rm pkg/sub: its findings are resolved with it.
	in = rev(4, files{})
	in.Change.Files = []vcs.FileChange{{Path: "pkg/sub", Action: vcs.ActionDelete, NodeKind: vcs.NodeDir, Skipped: "deleted"}}
	out, _ = m.track(t, in)
	if len(out.Resolved) != 1 || out.Resolved[0].ID != b {
		t.Fatalf("directory deletion resolved %+v", out.Resolved)
	}
}

func TestDecideUnreadableKeepsTheCodeKey(t *testing.T) {
	m := newMem()
	out, _ := m.track(t, rev(1, files{"a.go": v1}, prob("a.go", 4, "bug", "x may be nil", "nil-x")))
	id, key := out.Seen[0].Finding.ID, out.Seen[0].Finding.Key
	in := rev(2, files{}, prob("a.go", 4, "bug", "x may be nil", "nil-x"))
	in.Change.Files = []vcs.FileChange{{Path: "a.go", Action: vcs.ActionModify, NodeKind: vcs.NodeFile}}
	out, _ = m.track(t, in)
	if seenClasses(out) != "repeat" || m.rows[id].Key != key || m.rows[id].Anchor == "" || len(out.Resolved) != 0 {
		t.Errorf("unreadable repeat: %+v, finding %+v", out, m.rows[id])
	}
}
