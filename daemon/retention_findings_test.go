package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// [retention] findings: resolved findings older than it go with their
// history, old "seen" lines go from every history, dismissed and open
// findings stay; audit_rows takes settled digests (rows of no run) too.
func TestRetentionPrunesFindingHistory(t *testing.T) {
	f := newRetentionFixture(t)
	src := map[string]string{"a.go": "package a\nvar x = 1\n", "b.go": "package b\nvar y = 2\n", "c.go": "package c\nvar z = 3\n"}
	track := func(run int64, files map[string]string, problems ...review.Problem) findings.Outcome {
		t.Helper()
		ch := &vcs.Change{Repo: "main", Revision: strings.Repeat("1", int(run))}
		for p := range files {
			ch.Files = append(ch.Files, vcs.FileChange{Path: p, Action: vcs.ActionModify, NodeKind: vcs.NodeFile})
		}
		out, err := f.store.TrackFindings(f.ctx, findings.Review{Repo: "main", RunID: run, Revision: ch.Revision, Author: "alice",
			Change: ch, Problems: problems, Complete: true, Source: func(p string) ([]string, error) { return strings.Split(files[p], "\n"), nil }})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	p := func(file string) review.Problem {
		return review.Problem{File: file, Line: 2, Severity: review.SeverityLow, Category: "style", Message: "global in " + file}
	}
	first := track(1, src, p("a.go"), p("b.go"), p("c.go"))
	resolvedID, dismissedID, openID := first.Seen[0].Finding.ID, first.Seen[1].Finding.ID, first.Seen[2].Finding.ID
	if _, err := f.store.ActOnFinding(f.ctx, dismissedID, findings.Act{Action: findings.ActionWontFix, Actor: "bob", Via: findings.ViaCLI}); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(24 * time.Hour)
	track(2, map[string]string{"b.go": src["b.go"], "c.go": src["c.go"]}, p("b.go"), p("c.go")) // seen again
	if out := track(3, map[string]string{"a.go": "package a\n"}); len(out.Resolved) != 1 {
		t.Fatalf("a.go's finding not resolved: %+v", out)
	}
	if _, _, err := f.store.PlanNotice(f.ctx, 0, "console", delivery.PurposeDigest, "digest:team:2026-01-01", &im.Report{Kind: im.KindDigest}); err != nil {
		t.Fatal(err)
	}
	if c, err := f.store.ClaimDue(f.ctx, "console", time.Minute); err != nil || c == nil {
		t.Fatalf("claim digest: %v, %v", c, err)
	} else if _, err := f.store.FinishAttempt(f.ctx, c, delivery.AttemptResult{Status: delivery.StatusSent}); err != nil {
		t.Fatal(err)
	}

	f.now = f.now.Add(400 * 24 * time.Hour)
	job := f.job(config.Retention{Findings: 365 * 24 * time.Hour, AuditRows: 365 * 24 * time.Hour})
	job.batch = 1
	job.run(f.ctx)

	if _, err := f.store.GetFinding(f.ctx, resolvedID); err == nil {
		t.Errorf("the old resolved finding is still there")
	}
	for _, id := range []int64{dismissedID, openID} {
		evs, err := f.store.FindingHistory(f.ctx, id)
		if err != nil {
			t.Fatalf("finding %d: %v", id, err)
		}
		for _, e := range evs {
			if e.Kind == findings.EventSeen {
				t.Errorf("finding %d kept an old seen event: %+v", id, e)
			}
		}
		if len(evs) == 0 || evs[0].Kind != findings.EventReported {
			t.Errorf("finding %d lost its first report: %+v", id, evs)
		}
	}
	if list, err := f.store.ListDispatches(f.ctx, audit.DispatchFilter{}); err != nil || len(list) != 0 {
		t.Errorf("the old digest row is still there: %+v, %v", list, err)
	}

	// findings = 0 keeps everything.
	track(4, map[string]string{"c.go": "package c\n"})
	f.now = f.now.Add(10 * 365 * 24 * time.Hour)
	f.job(config.Retention{}).run(f.ctx)
	if got, err := f.store.GetFinding(f.ctx, openID); err != nil || got.State != findings.StateResolved {
		t.Errorf("findings = 0 deleted a resolved finding: %+v, %v", got, err)
	}
}
