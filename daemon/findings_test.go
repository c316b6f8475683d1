package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/file"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// scriptedFetch writes each revision's content of trunk/a.go into the run
// directory, as an adapter does.
type scriptedFetch map[string]string

func (f scriptedFetch) Fetch(_ context.Context, repo, rev string, dst vcs.Dest) (*vcs.Change, error) {
	p, err := dst.SrcPath("trunk/a.go")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p, []byte(f[rev]), 0o644); err != nil {
		return nil, err
	}
	author := map[string]string{"1": "alice", "2": "carol", "3": "bob"}[rev]
	return &vcs.Change{VCS: vcs.KindSVN, Repo: repo, Revision: rev, Author: author,
		Files: []vcs.FileChange{{Path: "trunk/a.go", Action: "M"}}}, nil
}

// scriptedReview answers each revision with its problems.
type scriptedReview map[string][]review.Problem

func (s scriptedReview) Review(_ context.Context, run *audit.Run, _ rundir.Layout) (review.Result, error) {
	ps := s[run.Revision]
	if ps == nil {
		ps = []review.Problem{}
	}
	return review.Result{Problems: ps}, nil
}

// findingsFixture is the real pipeline over a real SQLite store, with
// four file channels: repeat mention (publishing clean reports), omit and
// full (suppressing them), and one in digest mode; [web] base_url is set,
// so reports carry signed links.
type findingsFixture struct {
	cfg   *config.Config
	store *audit.Store
	parts *Components
	pipe  *Pipeline
	dir   string
}

func newFindingsFixture(t *testing.T) *findingsFixture {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "aicr.toml")
	channel := func(name, extra string) string {
		return "\n[[channel]]\nname = \"" + name + "\"\nkind = \"file\"\npath = \"" + name + ".jsonl\"\n" + extra + "\n"
	}
	if err := os.WriteFile(path, []byte(`
[daemon]
listen = "127.0.0.1:0"
data_dir = "data"
secret_env = "AICR_TEST_DAEMON_SECRET"
aicr_binary = "/bin/true"

[web]
base_url = "https://aicr.example.com/"

[[repo]]
name = "main"
kind = "svn"
url = "file:///nowhere"
channels = ["mention", "omit", "full", "digest"]
reconcile_every = "off"
`+channel("mention", `no_problems = "publish"`)+channel("omit", "repeat = \"omit\"\nno_problems = \"suppress\"")+
		channel("full", "repeat = \"full\"\nno_problems = \"suppress\"")+channel("digest", `mode = "digest"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	store, err := audit.Open(context.Background(), filepath.Join(dir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := os.MkdirAll(cfg.Daemon.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := &findingsFixture{cfg: cfg, store: store, dir: dir}
	deps := Deps{Store: store}
	if f.parts, err = Build(cfg, deps, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	bad := []review.Problem{{File: "trunk/a.go", Line: 2, Severity: review.SeverityHigh, Category: "bug", Message: "bad() leaks the handle"}}
	moved := []review.Problem{{File: "trunk/a.go", Line: 3, Severity: review.SeverityHigh, Category: "bug", Message: "bad() leaks the handle"}}
	f.pipe = NewPipeline(cfg, deps, Stages{
		Fetch:  scriptedFetch{"1": "func a() {\n\tbad()\n}\n", "2": "// a does a\nfunc a() {\n\tbad()\n}\n", "3": "// a does a\nfunc a() {\n\tgood()\n}\n"},
		Review: scriptedReview{"1": bad, "2": moved}, Publish: f.parts.Pipeline.stages.Publish})
	return f
}

// process reviews revision rev through the pipeline and sends what it
// planned.
func (f *findingsFixture) process(t *testing.T, rev string) *audit.Run {
	t.Helper()
	run, rep := f.processed(t, rev)
	if rep.Error != "" {
		t.Fatalf("r%s: %s", rev, rep.Error)
	}
	return run
}

// claimAndProcess is process for a run whose error is the test's to check.
func (f *findingsFixture) claimAndProcess(t *testing.T, rev string) *audit.Run {
	t.Helper()
	run, _ := f.processed(t, rev)
	return run
}

func (f *findingsFixture) processed(t *testing.T, rev string) (*audit.Run, *Report) {
	t.Helper()
	ctx := context.Background()
	run, err := f.store.EnqueueClaimedWith(ctx, triggers.Event{V: triggers.ProtocolVersion, VCS: "svn", Repo: "main", Revision: rev,
		Source: triggers.SourceManual}, time.Now(), audit.ClaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := f.pipe.Process(ctx, run, ProcessOptions{})
	if err != nil {
		t.Fatalf("r%s: %v", rev, err)
	}
	if _, err := f.parts.Dispatcher.DriveDue(ctx); err != nil {
		t.Fatal(err)
	}
	return run, rep
}

// records reads a file channel's lines.
func (f *findingsFixture) records(t *testing.T, channel string) []file.Record {
	t.Helper()
	fh, err := os.Open(filepath.Join(f.dir, channel+".jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []file.Record
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r file.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func (f *findingsFixture) dispatches(t *testing.T, runID int64) map[string][]delivery.Dispatch {
	t.Helper()
	rows, err := f.store.RunDispatches(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]delivery.Dispatch{}
	for _, d := range rows {
		out[d.Channel] = append(out[d.Channel], d)
	}
	return out
}

// r1 reports a finding in full everywhere; r2 edits the file without
// fixing it: a compact line where repeat = "mention", nothing where
// "omit" (whose no_problems = suppress then suppresses the report: there
// is nothing new), in full where "full"; r3 fixes it: each channel told
// of it gets one resolution naming r1's report. The digest channel gets
// no per-change report and no follow-up.
func TestFindingsAcrossCommitsPerChannel(t *testing.T) {
	f := newFindingsFixture(t)
	r1 := f.process(t, "1")
	for _, ch := range []string{"mention", "omit", "full"} {
		recs := f.records(t, ch)
		if len(recs) != 1 || len(recs[0].Problems) != 1 || len(recs[0].Entries) != 1 || recs[0].Entries[0].FindingID == 0 {
			t.Fatalf("%s after r1: %+v", ch, recs)
		}
		e := recs[0].Entries[0]
		if !strings.HasPrefix(e.Page, "https://aicr.example.com/") || len(e.Actions) != 3 || !strings.Contains(e.Actions[1].URL, "false_positive") {
			t.Fatalf("%s: entry without signed links: %+v", ch, e)
		}
	}
	if d := f.dispatches(t, r1.ID); len(d["digest"]) != 0 || len(d) != 3 {
		t.Fatalf("r1 dispatches %v: want one per reporting channel, none for the digest channel", d)
	}
	id := f.records(t, "mention")[0].Entries[0].FindingID

	r2 := f.process(t, "2")
	mention := f.records(t, "mention")
	if len(mention) != 2 || len(mention[1].Problems) != 0 || len(mention[1].Repeats) != 1 || mention[1].Repeats[0].FindingID != id ||
		!strings.Contains(mention[1].Repeats[0].Text, "still open since r1, 2 commits") {
		t.Fatalf("mention after r2: %+v", mention[1:])
	}
	if !strings.Contains(mention[1].Text, "No new problems found; 1 reported earlier is still open.") {
		t.Fatalf("mention's verdict:\n%s", mention[1].Text)
	}
	if got := f.records(t, "omit"); len(got) != 1 {
		t.Fatalf("omit got %d records after r2, want r2 suppressed (only a repeat)", len(got))
	}
	if d := f.dispatches(t, r2.ID); d["omit"][0].Status != delivery.StatusSuppressed || d["full"][0].Status != delivery.StatusSent {
		t.Fatalf("r2 dispatches: omit %+v full %+v", d["omit"], d["full"])
	}
	if full := f.records(t, "full"); len(full) != 2 || len(full[1].Problems) != 1 || full[1].Entries[0].FindingID != id {
		t.Fatalf("full after r2: %+v", full)
	}

	r3 := f.process(t, "3")
	for _, ch := range []string{"mention", "omit", "full"} {
		recs := f.records(t, ch)
		last := recs[len(recs)-1]
		if last.ReportKind != string(im.KindResolution) || len(last.Resolved) != 1 || last.Resolved[0].FindingID != id ||
			last.Resolved[0].Author != "bob" || last.Resolved[0].Revision != "r3" || last.Resolved[0].ReportRunID != r1.ID {
			t.Fatalf("%s: last record %+v, want r3's resolution of finding %d from run %d", ch, last, id, r1.ID)
		}
		var n int
		for _, d := range f.dispatches(t, r3.ID)[ch] {
			if d.Purpose == delivery.PurposeResolution {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s: %d resolution dispatches, want 1", ch, n)
		}
	}
	if f.records(t, "digest") != nil {
		t.Fatal("the digest channel got a per-change message")
	}
}

// A run planned twice (a daemon killed between planning and recording
// the run redoes it) plans its resolutions once per channel and delivers
// each once.
func TestResolutionPlannedOnceWhenARunIsRedone(t *testing.T) {
	f := newFindingsFixture(t)
	r1 := f.process(t, "1")
	ctx := context.Background()
	run, err := f.store.EnqueueClaimedWith(ctx, triggers.Event{V: triggers.ProtocolVersion, VCS: "svn", Repo: "main", Revision: "3",
		Source: triggers.SourceManual}, time.Now(), audit.ClaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The first attempt plans, then dies before FinishRun.
	layout := rundir.ForRun(f.cfg.Daemon.DataDir, run.ID)
	if err := layout.Create(); err != nil {
		t.Fatal(err)
	}
	if err := f.store.SetRunDir(ctx, run.ID, layout.Dir()); err != nil {
		t.Fatal(err)
	}
	change, err := f.pipe.stages.Fetch.Fetch(ctx, "main", "3", layout)
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.WriteChange(change); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pipe.stages.Publish.Plan(ctx, run, change, review.Result{Problems: []review.Problem{}}); err != nil {
		t.Fatal(err)
	}
	// The redo.
	if rep, err := f.pipe.Process(ctx, run, ProcessOptions{}); err != nil || rep.Error != "" {
		t.Fatalf("redo: %v %s", err, rep.Error)
	}
	if _, err := f.parts.Dispatcher.DriveDue(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []string{"mention", "omit", "full"} {
		var resolutions int
		for _, r := range f.records(t, ch) {
			if r.ReportKind == string(im.KindResolution) {
				resolutions++
				if r.Resolved[0].ReportRunID != r1.ID {
					t.Errorf("%s: resolution names run %d, want %d", ch, r.Resolved[0].ReportRunID, r1.ID)
				}
			}
		}
		if resolutions != 1 {
			t.Fatalf("%s: %d resolutions delivered, want 1", ch, resolutions)
		}
	}
}

// failingFindings is the real store whose tracking fails, as a database
// error would make it.
type failingFindings struct{ *audit.Store }

func (failingFindings) TrackFindings(context.Context, findings.Review) (findings.Outcome, error) {
	return findings.Outcome{}, errors.New("database is locked")
}

// Tracking failing does not lose the report: every problem is reported
// in full, as before findings, and the run records why.
func TestTrackingFailureStillReports(t *testing.T) {
	f := newFindingsFixture(t)
	f.pipe.stages.Publish.(*publisher).findings = failingFindings{f.store}
	run := f.claimAndProcess(t, "1")
	for _, ch := range []string{"mention", "omit", "full"} {
		recs := f.records(t, ch)
		if len(recs) != 1 || len(recs[0].Problems) != 1 || len(recs[0].Entries) != 0 {
			t.Fatalf("%s: %+v, want the report in full without findings", ch, recs)
		}
	}
	got, err := f.store.GetRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != audit.RunSucceeded || !strings.Contains(got.Error, "track findings: database is locked") {
		t.Fatalf("run %s, error %q: want succeeded with the tracking error recorded", got.Status, got.Error)
	}
}

// A shelved change is not the repo's history: its review is reported as
// it always was, and tracks nothing.
func TestShelvedChangeIsNotTracked(t *testing.T) {
	f := newFindingsFixture(t)
	rev := "shelf-12-1700000000000"
	f.pipe.stages.Fetch = scriptedFetch{rev: "func a() {\n\tbad()\n}\n"}
	f.pipe.stages.Review = scriptedReview{rev: {{File: "trunk/a.go", Line: 2, Severity: review.SeverityHigh, Category: "bug", Message: "bad()"}}}
	f.claimAndProcess(t, rev)
	if recs := f.records(t, "mention"); len(recs) != 1 || len(recs[0].Problems) != 1 || len(recs[0].Entries) != 0 {
		t.Fatalf("shelf report: %+v", recs)
	}
	list, err := f.store.ListFindings(context.Background(), findings.Filter{Repo: "main"})
	if err != nil || len(list) != 0 {
		t.Fatalf("findings after a shelf: %+v, %v", list, err)
	}
}

// A hard-coded credential's finding anchors the line holding it: the
// store never gets the value (it keeps the anchored lines to tell a fix
// by), and the finding still follows the file.
func TestCredentialNeverReachesTheFindings(t *testing.T) {
	f := newFindingsFixture(t)
	const cred = "AKIAQYLPMN5HHHFPZAM2"
	f.pipe.stages.Fetch = scriptedFetch{"1": "package soak\n\nconst awsAccessKeyID = \"" + cred + "\"\n",
		"2": "package soak\n\n// rotated\nconst awsAccessKeyID = \"" + cred + "\"\n"}
	problem := func(line int) []review.Problem {
		return []review.Problem{{File: "trunk/a.go", Line: line, Severity: review.SeverityCritical, Category: "hard-coded-credential",
			Message: "AWS access key committed (aws-access-token)"}}
	}
	f.pipe.stages.Review = scriptedReview{"1": problem(3), "2": problem(4)}
	f.process(t, "1")
	f.process(t, "2")
	if recs := f.records(t, "mention"); len(recs) != 2 || len(recs[1].Repeats) != 1 {
		t.Fatalf("r2 should repeat r1's finding: %+v", recs)
	}
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aicr.db", "aicr.db-wal"} {
		b, err := os.ReadFile(filepath.Join(f.dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if strings.Contains(string(b), cred) {
			t.Fatalf("the credential is in %s", name)
		}
	}
}
