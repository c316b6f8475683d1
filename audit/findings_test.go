package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// repoFiles is a repo's files at one revision, for a review's Source.
type repoFiles map[string]string

func (r repoFiles) source(path string) ([]string, error) {
	c, ok := r[path]
	if !ok {
		return nil, fmt.Errorf("%s: not in the run's src/", path)
	}
	return strings.Split(c, "\n"), nil
}

const goodFile = "package a\n\nfunc f() {\n\tdb.Query(\"SELECT \" + name)\n}\n"

// review builds a complete review of rev modifying the files in src.
func trackReview(run int64, rev, author string, src repoFiles, problems ...review.Problem) findings.Review {
	ch := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: rev, Author: author}
	for p := range src {
		ch.Files = append(ch.Files, vcs.FileChange{Path: p, Action: vcs.ActionModify, NodeKind: vcs.NodeFile})
	}
	return findings.Review{Repo: "main", VCS: vcs.KindSVN, RunID: run, Revision: rev, Author: author, Agent: "claude", Model: "sonnet",
		Change: ch, Problems: problems, Source: src.source, Complete: true}
}

func sqlProblem(line int) review.Problem {
	return review.Problem{File: "a.go", Line: line, Severity: review.SeverityHigh, Category: "Security",
		Message: "SQL built from a string: injection", Fingerprint: "sqli-f"}
}

func mustTrack(t *testing.T, s *Store, in findings.Review) findings.Outcome {
	t.Helper()
	out, err := s.TrackFindings(context.Background(), in)
	if err != nil {
		t.Fatalf("track run %d: %v", in.RunID, err)
	}
	return out
}

func classes(out findings.Outcome) string {
	var b []string
	for _, s := range out.Seen {
		b = append(b, string(s.Class))
	}
	return strings.Join(b, ",")
}

func eventKinds(t *testing.T, s *Store, id int64) string {
	t.Helper()
	evs, err := s.FindingHistory(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b []string
	for _, e := range evs {
		b = append(b, string(e.Kind))
	}
	return strings.Join(b, ",")
}

func TestTrackFindingsAcrossCommits(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))

	r1 := mustTrack(t, s, trackReview(1, "1", "alice", repoFiles{"a.go": goodFile}, sqlProblem(4)))
	if classes(r1) != "new" || r1.Seen[0].Finding.ID == 0 || len(r1.Resolved) != 0 {
		t.Fatalf("r1 = %+v", r1)
	}
	id := r1.Seen[0].Finding.ID
	f, err := s.GetFinding(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if f.State != findings.StateOpen || f.FirstRevision != "1" || f.FirstAuthor != "alice" || f.AnnouncedRunID != 1 ||
		f.Anchor != findings.AnchorDigest(`db.Query("SELECT " + name)`) || strings.Contains(f.Anchor, "SELECT") || f.Agent != "claude" || f.Model != "sonnet" || f.Sightings != 1 {
		t.Errorf("stored finding = %+v", f)
	}

	// r2 edits the file above the code (two lines lower now) and
	// re-indents it: the same finding.
	moved := "package a\n\nimport \"x\"\n\nfunc f() {\n        db.Query(\"SELECT \"  +  name)\n}\n"
	r2 := mustTrack(t, s, trackReview(2, "2", "bob", repoFiles{"a.go": moved}, sqlProblem(6)))
	if classes(r2) != "repeat" || r2.Seen[0].Finding.ID != id || r2.Seen[0].Finding.Sightings != 2 || len(r2.Resolved) != 0 {
		t.Fatalf("r2 = %+v", r2)
	}
	// Tracked again (a resumed run): the same outcome, nothing written.
	again := mustTrack(t, s, trackReview(2, "2", "bob", repoFiles{"a.go": moved}, sqlProblem(6)))
	if classes(again) != "repeat" || again.Seen[0].Finding.Sightings != 2 {
		t.Errorf("r2 again = %+v", again)
	}

	// r3 rewrites the line and its review no longer reports it.
	fixed := "package a\n\nimport \"x\"\n\nfunc f() {\n\tdb.Query(\"SELECT ?\", name)\n}\n"
	r3 := mustTrack(t, s, trackReview(3, "3", "carol", repoFiles{"a.go": fixed}))
	if len(r3.Resolved) != 1 || r3.Resolved[0].ID != id || r3.Resolved[0].ResolvedRevision != "3" || r3.Resolved[0].ResolvedAuthor != "carol" {
		t.Fatalf("r3 = %+v", r3)
	}
	if got, err := s.ListFindings(ctx, findings.Filter{ResolvedSince: time.Now().Add(-time.Hour), RunID: 3}); err != nil || len(got) != 1 {
		t.Errorf("resolved since an hour ago, by run 3: %+v, %v", got, err)
	}
	r3again := mustTrack(t, s, trackReview(3, "3", "carol", repoFiles{"a.go": fixed}))
	if len(r3again.Resolved) != 1 || r3again.Resolved[0].ID != id {
		t.Errorf("r3 again = %+v", r3again)
	}
	// An older run retried late resolves nothing and re-opens nothing new.
	if got := eventKinds(t, s, id); got != "reported,seen,resolved" {
		t.Errorf("history = %s", got)
	}

	// r4 brings the code back: reopened, announced by r4.
	r4 := mustTrack(t, s, trackReview(4, "4", "dave", repoFiles{"a.go": goodFile}, sqlProblem(4)))
	if classes(r4) != "reopened" || r4.Seen[0].Finding.ID != id || r4.Seen[0].Finding.AnnouncedRunID != 4 || r4.Seen[0].Finding.ResolvedRunID != 0 {
		t.Fatalf("r4 = %+v", r4)
	}
	if got := eventKinds(t, s, id); got != "reported,seen,resolved,reopened" {
		t.Errorf("history = %s", got)
	}
}

func TestTrackFindingsOldRevisionResolvesNothing(t *testing.T) {
	s := openStore(t, tempDB(t))
	mustTrack(t, s, trackReview(10, "10", "alice", repoFiles{"a.go": goodFile}, sqlProblem(4)))
	// A run of r9, retried after r10's, sees a file without the code.
	old := mustTrack(t, s, trackReview(9, "9", "bob", repoFiles{"a.go": "package a\n"}))
	if len(old.Resolved) != 0 {
		t.Errorf("an older revision resolved %+v", old.Resolved)
	}
	// An incomplete review resolves nothing either.
	in := trackReview(11, "11", "bob", repoFiles{"a.go": "package a\n"})
	in.Complete = false
	if out := mustTrack(t, s, in); len(out.Resolved) != 0 {
		t.Errorf("an incomplete review resolved %+v", out.Resolved)
	}
	// Skipped (too large) resolves nothing; a deletion does.
	in = trackReview(12, "12", "bob", repoFiles{"a.go": "package a\n"})
	in.Change.Files[0].Skipped = "too large"
	if out := mustTrack(t, s, in); len(out.Resolved) != 0 {
		t.Errorf("a skipped file resolved %+v", out.Resolved)
	}
	in = trackReview(13, "13", "bob", repoFiles{})
	in.Change.Files = []vcs.FileChange{{Path: "a.go", Action: vcs.ActionDelete, NodeKind: vcs.NodeFile, Skipped: "deleted"}}
	if out := mustTrack(t, s, in); len(out.Resolved) != 1 {
		t.Errorf("a deletion resolved %+v", out.Resolved)
	}
}

func TestTrackFindingsFollowsRenames(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	id := mustTrack(t, s, trackReview(1, "1", "alice", repoFiles{"a.go": goodFile}, sqlProblem(4))).Seen[0].Finding.ID

	// svn mv a.go b.go, reported again in b.go: the same finding, moved.
	in := trackReview(2, "2", "bob", repoFiles{"b.go": goodFile}, review.Problem{File: "b.go", Line: 4, Severity: review.SeverityHigh,
		Category: "security", Message: "SQL injection"})
	in.Change.Files = []vcs.FileChange{{Path: "b.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, CopyFromPath: "a.go", CopyFromRev: "1"},
		{Path: "a.go", Action: vcs.ActionDelete, NodeKind: vcs.NodeFile, Skipped: "deleted"}}
	out := mustTrack(t, s, in)
	if classes(out) != "repeat" || out.Seen[0].Finding.ID != id || out.Seen[0].Finding.Path != "b.go" || len(out.Resolved) != 0 {
		t.Fatalf("renamed = %+v", out)
	}
	if got := eventKinds(t, s, id); got != "reported,moved,seen" {
		t.Errorf("history = %s", got)
	}

	// svn mv b.go c.go, not reported (the agent was quiet): it follows the
	// file, open, since c.go still holds the code.
	in = trackReview(3, "3", "bob", repoFiles{"c.go": goodFile})
	in.Change.Files = []vcs.FileChange{{Path: "c.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, CopyFromPath: "b.go"},
		{Path: "b.go", Action: vcs.ActionDelete, NodeKind: vcs.NodeFile, Skipped: "deleted"}}
	if out := mustTrack(t, s, in); len(out.Resolved) != 0 {
		t.Errorf("a rename resolved %+v", out.Resolved)
	}
	f, err := s.GetFinding(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != "c.go" || f.State != findings.StateOpen {
		t.Errorf("after a quiet rename: %+v", f)
	}
}

func TestActOnFinding(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	id := mustTrack(t, s, trackReview(1, "1", "alice", repoFiles{"a.go": goodFile}, sqlProblem(4))).Seen[0].Finding.ID

	act := func(a findings.Action, actor string, via findings.Via) (findings.Finding, error) {
		return s.ActOnFinding(ctx, id, findings.Act{Action: a, Actor: actor, Via: via, Note: "not <b>reachable</b>"})
	}
	if _, err := act(findings.ActionReopen, "eve", findings.ViaWeb); !errors.Is(err, findings.ErrConflict) {
		t.Errorf("reopen an open finding: err = %v, want ErrConflict", err)
	}
	for range 2 {
		if f, err := act(findings.ActionUseful, "eve", findings.ViaSlack); err != nil || f.Useful != 1 {
			t.Errorf("useful by eve: %+v, %v", f, err)
		}
	}
	f, err := act(findings.ActionFalsePositive, "U123", findings.ViaSlack)
	if err != nil {
		t.Fatal(err)
	}
	if f.State != findings.StateDismissed || f.Dismissal != findings.ActionFalsePositive || f.ActedBy != "U123" || f.ActedVia != findings.ViaSlack ||
		f.Note != "not <b>reachable</b>" || f.ActedAt.IsZero() {
		t.Errorf("dismissed = %+v", f)
	}
	if _, err := act(findings.ActionWontFix, "U123", findings.ViaSlack); !errors.Is(err, findings.ErrConflict) {
		t.Errorf("dismiss twice: err = %v, want ErrConflict", err)
	}
	// Dismissed: never reported again, its sighting recorded.
	out := mustTrack(t, s, trackReview(2, "2", "bob", repoFiles{"a.go": goodFile}, sqlProblem(4)))
	if classes(out) != "dismissed" || out.Seen[0].Finding.Sightings != 2 {
		t.Errorf("dismissed seen again = %+v", out)
	}
	dis, err := s.DismissedIn(ctx, "main", []string{"a.go"}, 10)
	if err != nil || len(dis) != 1 || dis[0].ID != id {
		t.Errorf("DismissedIn = %+v, %v", dis, err)
	}
	if dis, err := s.DismissedIn(ctx, "main", []string{"b.go", "lib/"}, 10); err != nil || len(dis) != 0 {
		t.Errorf("DismissedIn other paths = %+v, %v", dis, err)
	}
	if f, err := act(findings.ActionReopen, "frank", findings.ViaCLI); err != nil || f.State != findings.StateReopened || f.Dismissal != "" {
		t.Errorf("reopened = %+v, %v", f, err)
	}
	if got := eventKinds(t, s, id); got != "reported,useful,dismissed,seen,reopened" {
		t.Errorf("history = %s", got)
	}
	for _, bad := range []findings.Act{
		{Action: "delete", Actor: "x", Via: findings.ViaCLI},
		{Action: findings.ActionUseful, Actor: " ", Via: findings.ViaCLI},
		{Action: findings.ActionUseful, Actor: "x", Via: findings.ViaReview},
		{Action: findings.ActionUseful, Actor: "x", Via: findings.ViaCLI, Note: strings.Repeat("n", MaxFindingNote+1)},
	} {
		if _, err := s.ActOnFinding(ctx, id, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("act %+v: err = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := s.ActOnFinding(ctx, 999, findings.Act{Action: findings.ActionUseful, Actor: "x", Via: findings.ViaCLI}); !errors.Is(err, findings.ErrNotFound) {
		t.Errorf("act on no finding: err = %v", err)
	}
	if _, err := s.GetFinding(ctx, 999); !errors.Is(err, findings.ErrNotFound) {
		t.Errorf("get no finding: err = %v", err)
	}
	if _, err := s.FindingHistory(ctx, 999); !errors.Is(err, findings.ErrNotFound) {
		t.Errorf("history of no finding: err = %v", err)
	}
}

func TestListFindingsAndStats(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	src := repoFiles{"src/net/a.go": goodFile, "src/netx/b.go": "x := 1\ny := 2\n", "doc.md": "hello\n"}
	in := trackReview(1, "1", "alice", src,
		review.Problem{File: "src/net/a.go", Line: 4, Severity: review.SeverityHigh, Category: "security", Message: "sqli"},
		review.Problem{File: "src/netx/b.go", Line: 1, Severity: review.SeverityLow, Category: "style", Message: "naming"},
		review.Problem{File: "doc.md", Line: 1, Severity: review.SeverityInfo, Category: "Style", Message: "typo"})
	out := mustTrack(t, s, in)
	in2 := trackReview(2, "2", "bob", repoFiles{"src/netx/b.go": "x := 1\ny := 2\n"},
		review.Problem{File: "src/netx/b.go", Line: 2, Severity: review.SeverityMedium, Category: "bug", Message: "unused"})
	in2.Agent, in2.Model = "codex", "gpt"
	mustTrack(t, s, in2)
	if _, err := s.ActOnFinding(ctx, out.Seen[1].Finding.ID, findings.Act{Action: findings.ActionFalsePositive, Actor: "eve", Via: findings.ViaWeb}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ActOnFinding(ctx, out.Seen[0].Finding.ID, findings.Act{Action: findings.ActionUseful, Actor: "eve", Via: findings.ViaWeb}); err != nil {
		t.Fatal(err)
	}
	count := func(f findings.Filter) int {
		t.Helper()
		got, err := s.ListFindings(ctx, f)
		if err != nil {
			t.Fatalf("list %+v: %v", f, err)
		}
		return len(got)
	}
	for _, c := range []struct {
		f    findings.Filter
		want int
	}{
		{findings.Filter{}, 4},
		{findings.Filter{Repo: "other"}, 0},
		{findings.Filter{Path: "src/net"}, 1},
		{findings.Filter{Path: "src/net/"}, 1},
		{findings.Filter{Path: "src/"}, 3},
		{findings.Filter{Path: "src/netx/b.go"}, 2},
		{findings.Filter{States: []findings.State{findings.StateDismissed}}, 1},
		{findings.Filter{States: []findings.State{findings.StateOpen, findings.StateReopened}}, 3},
		{findings.Filter{Severity: review.SeverityMedium}, 2},
		{findings.Filter{Author: "bob"}, 1},
		{findings.Filter{Category: "STYLE"}, 2},
		{findings.Filter{RunID: 2}, 1},
		{findings.Filter{Limit: 2}, 2},
		{findings.Filter{Offset: 3}, 1},
		{findings.Filter{FirstSeenSince: time.Now().Add(-time.Hour)}, 4},
		{findings.Filter{FirstSeenSince: time.Now().Add(time.Hour)}, 0},
		{findings.Filter{ResolvedSince: time.Now().Add(-time.Hour)}, 0},
	} {
		if got := count(c.f); got != c.want {
			t.Errorf("list %+v: %d findings, want %d", c.f, got, c.want)
		}
	}
	if _, err := s.ListFindings(ctx, findings.Filter{States: []findings.State{"closed"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad state: %v", err)
	}
	stats, err := s.FindingStats(ctx, findings.StatsFilter{Repo: "main"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]findings.Stat{}
	for _, st := range stats {
		got[st.Group+"="+st.Value] = st
	}
	if st := got["category=style"]; st.Reported != 2 || st.Dismissed != 1 || st.FalsePositive != 1 || st.Open != 1 {
		t.Errorf("style stat = %+v (all %+v)", st, stats)
	}
	if st := got["category=security"]; st.Reported != 1 || st.Useful != 1 || st.Open != 1 {
		t.Errorf("security stat = %+v", st)
	}
	if st := got["agent=claude"]; st.Reported != 3 || st.Dismissed != 1 {
		t.Errorf("claude stat = %+v", st)
	}
	if st := got["model=gpt"]; st.Reported != 1 || st.Open != 1 {
		t.Errorf("gpt stat = %+v", st)
	}
	if st, err := s.FindingStats(ctx, findings.StatsFilter{Since: time.Now().Add(time.Hour)}); err != nil || len(st) != 0 {
		t.Errorf("stats since the future = %+v, %v", st, err)
	}
}

// Two daemons (two Stores on one database) tracking the same run at once
// resolve and insert each finding once.
func TestTrackFindingsConcurrentSameRun(t *testing.T) {
	path := tempDB(t)
	a, b := openStore(t, path), openStore(t, path)
	mustTrack(t, a, trackReview(1, "1", "alice", repoFiles{"a.go": goodFile}, sqlProblem(4)))
	fixed := repoFiles{"a.go": "package a\n\nfunc f() {}\n", "n.go": "package a\nvar x = 1\n"}
	in := trackReview(2, "2", "bob", fixed, review.Problem{File: "n.go", Line: 2, Severity: review.SeverityLow, Category: "style", Message: "global"})
	var wg sync.WaitGroup
	outs := make([]findings.Outcome, 8)
	errs := make([]error, 8)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = []*Store{a, b}[i%2].TrackFindings(context.Background(), in)
		}()
	}
	wg.Wait()
	for i := range outs {
		if errs[i] != nil {
			t.Fatalf("track %d: %v", i, errs[i])
		}
		if len(outs[i].Resolved) != 1 || classes(outs[i]) != "new" || outs[i].Seen[0].Finding.ID != outs[0].Seen[0].Finding.ID {
			t.Errorf("track %d = %+v", i, outs[i])
		}
	}
	if got := eventKinds(t, a, outs[0].Resolved[0].ID); got != "reported,resolved" {
		t.Errorf("resolved finding's history = %s", got)
	}
	all, err := a.ListFindings(context.Background(), findings.Filter{})
	if err != nil || len(all) != 2 {
		t.Errorf("findings = %d, %v", len(all), err)
	}
}

func TestTrackFindingsRefusesShelves(t *testing.T) {
	s := openStore(t, tempDB(t))
	in := trackReview(1, "shelf-42-1700000000000", "alice", repoFiles{"a.go": goodFile}, sqlProblem(4))
	if _, err := s.TrackFindings(context.Background(), in); !errors.Is(err, findings.ErrShelved) {
		t.Errorf("shelf: err = %v, want ErrShelved", err)
	}
}

func TestPruneFindings(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	first := mustTrack(t, s, trackReview(1, "1", "alice", repoFiles{"a.go": goodFile, "b.go": goodFile},
		sqlProblem(4), review.Problem{File: "b.go", Line: 4, Severity: review.SeverityLow, Category: "style", Message: "m"}))
	gone, kept := first.Seen[0].Finding.ID, first.Seen[1].Finding.ID
	now = now.Add(time.Hour)
	mustTrack(t, s, trackReview(2, "2", "bob", repoFiles{"b.go": goodFile}, review.Problem{File: "b.go", Line: 4, Severity: review.SeverityLow, Category: "style", Message: "m"}))
	if out := mustTrack(t, s, trackReview(3, "3", "bob", repoFiles{"a.go": "package a\n"})); len(out.Resolved) != 1 {
		t.Fatalf("not resolved: %+v", out)
	}
	// Nothing is older than the cutoff yet.
	got, err := s.PruneFindings(ctx, now.Add(-time.Minute), 1)
	if err != nil || got != (FindingsPruned{}) {
		t.Fatalf("prune before anything is old: %+v, %v", got, err)
	}
	got, err = s.PruneFindings(ctx, now.Add(time.Minute), 1)
	if err != nil || got.Resolved != 1 || got.SeenEvents != 1 {
		t.Fatalf("prune = %+v, %v", got, err)
	}
	if _, err := s.GetFinding(ctx, gone); !errors.Is(err, findings.ErrNotFound) {
		t.Errorf("resolved finding kept: %v", err)
	}
	if h := eventKinds(t, s, kept); h != "reported" {
		t.Errorf("kept finding's history = %s", h)
	}
}

// A deleted directory's findings are candidates (Subversion lists the
// directory, not its files) and are resolved.
func TestTrackFindingsDeletedDirectory(t *testing.T) {
	s := openStore(t, tempDB(t))
	mustTrack(t, s, trackReview(1, "1", "alice", repoFiles{"lib/x/a.go": goodFile}, review.Problem{File: "lib/x/a.go", Line: 4,
		Severity: review.SeverityHigh, Category: "security", Message: "sqli"}))
	in := trackReview(2, "2", "bob", repoFiles{})
	in.Change.Files = []vcs.FileChange{{Path: "lib", Action: vcs.ActionDelete, NodeKind: vcs.NodeDir, Skipped: "deleted"}}
	if out := mustTrack(t, s, in); len(out.Resolved) != 1 || out.Resolved[0].Path != "lib/x/a.go" {
		t.Errorf("resolved = %+v", out.Resolved)
	}
}
