package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im/file"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// describedFetch is fakeFetch with a description, which only change.json
// keeps.
type describedFetch struct{}

func (describedFetch) Fetch(_ context.Context, repo, rev string, _ vcs.Dest) (*vcs.Change, error) {
	return &vcs.Change{VCS: vcs.KindSVN, Repo: repo, Revision: rev, Author: "alice", Description: "Fix the parser",
		Files: []vcs.FileChange{{Path: "trunk/a.go", Action: "M"}}}, nil
}

var highProblem = review.Problem{File: "trunk/a.go", Line: 3, Severity: review.SeverityHigh, Category: "bug", Message: "nil map write"}

// records reads the file channel's lines.
func records(t *testing.T, parts *Components) []file.Record {
	t.Helper()
	fh, err := os.Open(parts.Channels["reports"].(*file.Channel).Path())
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

// withPolicy is f's config with the reports channel's min_severity set,
// read from a file beside f's so relative paths mean the same.
func withPolicy(t *testing.T, f *pipelineFixture, minSeverity string) *config.Config {
	t.Helper()
	dir := filepath.Dir(f.parts.Channels["reports"].(*file.Channel).Path())
	raw, err := os.ReadFile(filepath.Join(dir, "aicr.toml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "changed.toml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), `no_problems = "suppress"`,
		`no_problems = "suppress"`+"\nmin_severity = \""+minSeverity+"\"", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Issue 23 item 5: a dispatch sends the report planned with it. Its
// change.json removed and the channel's policy changed before the send,
// the body still has the description and the finding the plan had
// (the dispatcher used to rebuild it from today's files and config).
func TestDispatchSendsThePlannedReport(t *testing.T) {
	f := newPipelineFixture(t)
	pipe := NewPipeline(f.cfg, f.deps(), Stages{Fetch: describedFetch{},
		Review: fakeReview{review.Result{Problems: []review.Problem{highProblem}}}, Publish: f.parts.Pipeline.stages.Publish})
	rep, err := pipe.Process(context.Background(), f.claim(t, "7"), ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Dispatches) != 1 || rep.Dispatches[0].Status != delivery.StatusPending {
		t.Fatalf("dispatches: %+v", rep.Dispatches)
	}
	if err := os.RemoveAll(rep.RunDir); err != nil {
		t.Fatal(err)
	}
	later, err := Build(withPolicy(t, f, "critical"), f.deps(), BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := later.Dispatcher.DriveDue(context.Background()); err != nil || n != 1 {
		t.Fatalf("drive: %d %v", n, err)
	}
	got := records(t, later)
	if len(got) != 1 || len(got[0].Problems) != 1 || !strings.Contains(got[0].Text, "Fix the parser") {
		t.Fatalf("sent %+v, want the planned report (its finding and description)", got)
	}
}

// A dispatch an older aicr planned has no report: the daemon's start
// builds it from the run (as that aicr did when sending) before any
// sender runs, and it is sent. One whose channel left the config stays
// without and fails at its attempt, saying why.
func TestOlderDispatchGetsItsReportAtStart(t *testing.T) {
	f := newPipelineFixture(t)
	ctx := context.Background()
	run := f.claim(t, "9")
	layout := rundir.New(filepath.Join(t.TempDir(), "run"))
	if err := layout.Create(); err != nil {
		t.Fatal(err)
	}
	change, _ := describedFetch{}.Fetch(ctx, "main", "9", layout)
	if err := layout.WriteChange(change); err != nil {
		t.Fatal(err)
	}
	if err := f.store.SetRunDir(ctx, run.ID, layout.Dir()); err != nil {
		t.Fatal(err)
	}
	if err := f.store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunSucceeded, Problems: []review.Problem{highProblem}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.PlanDispatch(ctx, run.ID, "reports", delivery.PurposeReport, delivery.StatusPending, "", nil); err != nil {
		t.Fatal(err)
	}
	gone, err := f.store.PlanDispatch(ctx, run.ID, "retired", delivery.PurposeReport, delivery.StatusPending, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := FillDispatchReports(ctx, f.cfg, f.store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || n != 1 {
		t.Fatalf("filled %d: %v", n, err)
	}
	if _, err := f.parts.Dispatcher.DriveDue(ctx); err != nil {
		t.Fatal(err)
	}
	got := records(t, f.parts)
	if len(got) != 1 || len(got[0].Problems) != 1 || !strings.Contains(got[0].Text, "Fix the parser") {
		t.Fatalf("sent %+v, want the run's report", got)
	}
	after, err := f.store.GetDispatch(ctx, gone.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != delivery.StatusFailed || !strings.Contains(after.LastError, "no longer in the config") {
		t.Fatalf("dispatch to a retired channel: %+v", after)
	}
}

// The run's id is in the footer, not the title; with [web] base_url it
// links to the run's page (issue 27).
func TestReportFooterLinksTheRun(t *testing.T) {
	c := &config.Config{}
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "42", Author: "alice"}
	run := &audit.RunDetail{}
	run.ID = 9
	if msg := reportMessage(c, run, change, "reports"); msg.RunURL != "" {
		t.Errorf("run URL %q without [web] base_url", msg.RunURL)
	}
	c.Web.BaseURL = "https://aicr.example.com/"
	msg := reportMessage(c, run, change, "reports")
	if msg.RunURL != "https://aicr.example.com/runs/9" {
		t.Errorf("run URL %q", msg.RunURL)
	}
}
