package audit

import (
	"context"
	"errors"
	"testing"

	"github.com/aicr-dev/aicr/triggers"
)

// A paused repo's events are still recorded and queued, no claim takes
// its runs while other repos' runs flow, and resuming releases them in
// queue order.
func TestPausedRepoIsHeldAndResumeReleasesIt(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	if _, changed, err := s.PauseRepo(ctx, "main", "alice", "svn migration"); err != nil || !changed {
		t.Fatalf("pause: changed %v, %v", changed, err)
	}
	if p, changed, err := s.PauseRepo(ctx, "main", "bob", "again"); err != nil || changed || p.PausedBy != "alice" || p.Reason != "svn migration" {
		t.Fatalf("second pause must keep the first: %+v changed %v %v", p, changed, err)
	}
	held1 := mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	held2 := mustEnqueue(t, s, svnEvent("main", "2"), triggers.SourceReconcile)
	other := mustEnqueue(t, s, svnEvent("docs", "5"), triggers.SourceTrigger)

	if run := mustClaim(t, s); run.ID != other.RunID {
		t.Fatalf("claimed run %d of %s, want the other repo's run %d", run.ID, run.Repo, other.RunID)
	}
	if _, err := s.ClaimNext(ctx); !errors.Is(err, ErrNoWork) {
		t.Fatalf("claim with only paused work: %v, want ErrNoWork", err)
	}
	q, err := s.Queue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if q.Queued != 2 || q.Held != 2 || q.Running != 1 || len(q.PausedRepos) != 1 || q.PausedRepos[0].Repo != "main" {
		t.Fatalf("queue %+v", q)
	}
	runs, err := s.ListRuns(ctx, ListOptions{Repo: "main"})
	if err != nil || len(runs) != 2 || !runs[0].RepoPaused || runs[0].Status != RunQueued {
		t.Fatalf("list of a paused repo: %+v %v", runs, err)
	}

	if changed, err := s.ResumeRepo(ctx, "main"); err != nil || !changed {
		t.Fatalf("resume: %v %v", changed, err)
	}
	if changed, _ := s.ResumeRepo(ctx, "main"); changed {
		t.Fatal("resuming a repo that is not paused reported a change")
	}
	if run := mustClaim(t, s); run.ID != held1.RunID {
		t.Fatalf("after resume claimed %d, want %d", run.ID, held1.RunID)
	}
	if run := mustClaim(t, s); run.ID != held2.RunID {
		t.Fatalf("after resume claimed %d, want %d", run.ID, held2.RunID)
	}
}

func TestCancelRunOnlyQueued(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	running := mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	queued := mustEnqueue(t, s, svnEvent("main", "2"), triggers.SourceTrigger)
	mustClaim(t, s)

	if err := s.CancelRun(ctx, running.RunID, "x"); !errors.Is(err, ErrNotQueued) {
		t.Fatalf("cancel a running run: %v, want ErrNotQueued", err)
	}
	if err := s.CancelRun(ctx, 999, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel a missing run: %v, want ErrNotFound", err)
	}
	if err := s.CancelRun(ctx, queued.RunID, "cancelled by alice: duplicate"); err != nil {
		t.Fatal(err)
	}
	d, err := s.GetRun(ctx, queued.RunID)
	if err != nil || d.Status != RunSkipped || d.SkipReason != SkipCancelled || d.Error != "cancelled by alice: duplicate" || d.FinishedAt.IsZero() {
		t.Fatalf("cancelled run %+v %v", d.RunSummary, err)
	}
	if _, err := s.ClaimNext(ctx); !errors.Is(err, ErrNoWork) {
		t.Fatalf("a cancelled run was claimed: %v", err)
	}
}
