package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// fakeFetch stands in for a repo's adapter.
type fakeFetch struct{ err error }

func (f fakeFetch) Fetch(_ context.Context, repo, rev string, _ vcs.Dest) (*vcs.Change, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &vcs.Change{VCS: vcs.KindSVN, Repo: repo, Revision: rev, Author: "alice",
		Files: []vcs.FileChange{{Path: "trunk/a.go", Action: "M"}}}, nil
}

// fakeReview stands in for the agent's pass.
type fakeReview struct{ result review.Result }

func (f fakeReview) Review(context.Context, *audit.Run, rundir.Layout) (review.Result, error) {
	return f.result, nil
}

// pipelineFixture is a real store and config (one file channel whose
// policy suppresses clean reports) with the pipeline's stages swapped.
type pipelineFixture struct {
	cfg   *config.Config
	store *audit.Store
	parts *Components
	now   time.Time
}

func newPipelineFixture(t *testing.T) *pipelineFixture {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(`
[daemon]
listen = "127.0.0.1:0"
data_dir = "data"
secret_env = "AICR_TEST_DAEMON_SECRET"
aicr_binary = "/bin/true"

[[repo]]
name = "main"
kind = "svn"
url = "file:///nowhere"
channels = ["reports"]
reconcile_every = "off"

[[channel]]
name = "reports"
kind = "file"
path = "reports.jsonl"
no_problems = "suppress"
`), 0o600); err != nil {
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
	f := &pipelineFixture{cfg: cfg, store: store, now: time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)}
	f.parts, err = Build(cfg, f.deps(), BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *pipelineFixture) deps() Deps {
	return Deps{Store: f.store, Now: func() time.Time { return f.now }}
}

func (f *pipelineFixture) claim(t *testing.T, rev string) *audit.Run {
	t.Helper()
	run, err := f.store.EnqueueClaimedWith(context.Background(), triggers.Event{V: triggers.ProtocolVersion, VCS: "svn", Repo: "main", Revision: rev, Source: triggers.SourceManual}, time.Now(), audit.ClaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// When every selected channel's policy suppresses the report, the run is
// recorded with reason no_problems_suppressed, so the audit trail says
// why nobody heard of it; the review itself succeeded, as a clean review
// does. (Since deliveries moved out of the worker, the pipeline looked for
// this in dispatch notes that were not filled yet.)
func TestPipelineAllChannelsSuppressedSkipsTheRun(t *testing.T) {
	f := newPipelineFixture(t)
	pipe := NewPipeline(f.cfg, f.deps(), Stages{Fetch: fakeFetch{}, Review: fakeReview{review.Result{Problems: []review.Problem{}}},
		Publish: f.parts.Pipeline.stages.Publish})
	run := f.claim(t, "7")
	rep, err := pipe.Process(context.Background(), run, ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.store.GetRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != audit.RunSucceeded || got.SkipReason != im.ReasonNoProblemsSuppressed {
		t.Errorf("run recorded as %s %q, want succeeded %q", got.Status, got.SkipReason, im.ReasonNoProblemsSuppressed)
	}
	if len(rep.Dispatches) != 1 || rep.Dispatches[0].Status != delivery.StatusSuppressed {
		t.Errorf("dispatches = %+v, want one suppressed", rep.Dispatches)
	}
}

// A transient fetch failure puts the run back in the queue at the
// pipeline's clock plus the first backoff, not the wall clock's.
func TestPipelineRetriesByItsInjectedClock(t *testing.T) {
	f := newPipelineFixture(t)
	pipe := NewPipeline(f.cfg, f.deps(), Stages{Fetch: fakeFetch{err: fmt.Errorf("svn: %w", vcs.ErrUnavailable)}, Review: fakeReview{},
		Publish: f.parts.Pipeline.stages.Publish})
	run := f.claim(t, "8")
	rep, err := pipe.Process(context.Background(), run, ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != audit.RunQueued {
		t.Fatalf("status %s (%s), want queued for a retry", rep.Status, rep.Error)
	}
	got, err := f.store.GetRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := f.now.Add(firstRetryDelay); !got.NotBefore.Equal(want) {
		t.Errorf("not_before = %s, want %s (the injected clock + %s)", got.NotBefore, want, firstRetryDelay)
	}
}

// A pipeline built without channels dry-runs and refuses to publish.
func TestPipelineWithoutChannelsOnlyDryRuns(t *testing.T) {
	f := newPipelineFixture(t)
	parts, err := Build(f.cfg, f.deps(), BuildOptions{NoChannels: true})
	if err != nil {
		t.Fatal(err)
	}
	if parts.Channels != nil || parts.Dispatcher != nil {
		t.Fatalf("NoChannels built channels %v / a dispatcher", parts.Channels)
	}
	pipe := NewPipeline(f.cfg, f.deps(), Stages{Fetch: fakeFetch{}, Review: fakeReview{review.Result{Problems: []review.Problem{}}}})
	if _, err := pipe.Process(context.Background(), f.claim(t, "9"), ProcessOptions{}); !errors.Is(err, ErrNoPublisher) {
		t.Errorf("publishing without a publisher: err = %v, want ErrNoPublisher", err)
	}
	rep, err := pipe.Process(context.Background(), f.claim(t, "10"), ProcessOptions{DryRun: true})
	if err != nil || rep.Status != audit.RunSucceeded || len(rep.Dispatches) != 0 {
		t.Errorf("dry run: %+v, %v; want succeeded with no dispatches", rep, err)
	}
}

// A Subversion hook sends no user, so the run's author is what the fetch
// read: audit list, show and export print it (issue 15 item 6). Before
// runs recorded it, every svn run's author was empty.
func TestPipelineRecordsTheFetchedAuthor(t *testing.T) {
	f := newPipelineFixture(t)
	pipe := NewPipeline(f.cfg, f.deps(), Stages{Fetch: fakeFetch{}, Review: fakeReview{review.Result{Problems: []review.Problem{}}},
		Publish: f.parts.Pipeline.stages.Publish})
	run := f.claim(t, "8")
	if _, err := pipe.Process(context.Background(), run, ProcessOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.GetRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.User != "alice" {
		t.Errorf("GetRun user = %q, want the fetched author alice", got.User)
	}
	runs, err := f.store.ListRuns(context.Background(), audit.ListOptions{Revision: "8"})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].User != "alice" {
		t.Errorf("ListRuns = %+v, want one run by alice", runs)
	}
}

// A clean review is one outcome whatever the agent said it with: a
// summary, or skip "lgtm". Both are succeeded with no problems (lgtm kept
// as the reason, for machine formats); only a change that was not
// reviewed is skipped.
func TestPipelineCleanReviewHasOneStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result review.Result
		status audit.RunStatus
		reason string
	}{
		{"summary", review.Result{Problems: []review.Problem{}, Summaries: []review.Summary{{Title: "All good", Markdown: "Nothing to report."}}}, audit.RunSucceeded, ""},
		{"lgtm", review.Result{Problems: []review.Problem{}, Skip: &review.Skip{Reason: review.SkipReasonLGTM}}, audit.RunSucceeded, review.SkipReasonLGTM},
		{"not reviewed", review.Result{Problems: []review.Problem{}, Skip: &review.Skip{Reason: review.SkipReasonNoReviewableCode}}, audit.RunSkipped, review.SkipReasonNoReviewableCode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPipelineFixture(t)
			pipe := NewPipeline(f.cfg, f.deps(), Stages{Fetch: fakeFetch{}, Review: fakeReview{tc.result}})
			run := f.claim(t, "7")
			if _, err := pipe.Process(context.Background(), run, ProcessOptions{DryRun: true}); err != nil {
				t.Fatal(err)
			}
			got, err := f.store.GetRun(context.Background(), run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.status || got.SkipReason != tc.reason || got.ProblemCount != 0 {
				t.Errorf("recorded as %s %q (%d problems), want %s %q", got.Status, got.SkipReason, got.ProblemCount, tc.status, tc.reason)
			}
			if r := got.Result(); (tc.reason == "") != (r.Skip == nil) {
				t.Errorf("the stored result's skip: %+v", r.Skip)
			}
		})
	}
}
