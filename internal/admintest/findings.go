package admintest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// Findings are the findings AddFindings tracked in repo main, made by
// the store's own TrackFindings from two reviews: Open (high, security,
// src/a.go, first reported by alice in r3) is open; Resolved (medium,
// style, src/b.go) was resolved by bob in r4; Dismissed (low, security,
// src/c.go) was dismissed as a false positive by carol from the web
// page. The reviews ran at Reported and Fixed.
type Findings struct {
	Open, Resolved, Dismissed int64
	Reported, Fixed           time.Time
}

// AddFindings tracks the Findings in fx's database, reported two days
// ago and fixed one day ago.
func AddFindings(t *testing.T, fx Fixture) Findings {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	return AddFindingsAt(t, fx, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
}

// AddFindingsAt is AddFindings with the reviews at reported and fixed.
func AddFindingsAt(t *testing.T, fx Fixture, reported, fixed time.Time) Findings {
	t.Helper()
	store, err := audit.Open(context.Background(), fx.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	return TrackFindings(t, store, fx.Old, fx.Failed, reported, fixed)
}

// TrackFindings tracks the Findings in store (any backend): the first
// review as run first at reported, the fix as run second at fixed. It
// leaves the store's clock at fixed.
func TrackFindings(t *testing.T, store *audit.Store, first, second int64, reported, fixed time.Time) Findings {
	t.Helper()
	ctx := context.Background()
	out := Findings{Reported: reported, Fixed: fixed}
	clock := out.Reported
	store.SetClock(func() time.Time { return clock })
	src := map[string]string{
		"src/a.go": "package a\n\nfunc f() {\n\tdb.Query(\"SELECT \" + name)\n}\n",
		"src/b.go": "package b\n\nfunc G() {\n\tx:=1\n}\n",
		"src/c.go": "package c\n\nfunc h() {\n\tos.Exit(1)\n}\n",
	}
	r1, err := store.TrackFindings(ctx, fixtureReview(first, "3", "alice", out.Reported, src,
		review.Problem{File: "src/a.go", Line: 4, Severity: review.SeverityHigh, Category: "security", Message: "SQL built from a string: injection"},
		review.Problem{File: "src/b.go", Line: 4, Severity: review.SeverityMedium, Category: "style", Message: "not gofmt-ed"},
		review.Problem{File: "src/c.go", Line: 4, Severity: review.SeverityLow, Category: "security", Message: "exits without cleanup"}))
	if err != nil || len(r1.Seen) != 3 {
		t.Fatalf("track r3: %+v %v", r1, err)
	}
	out.Open, out.Resolved, out.Dismissed = r1.Seen[0].Finding.ID, r1.Seen[1].Finding.ID, r1.Seen[2].Finding.ID
	clock = out.Fixed
	fixedSrc := map[string]string{"src/b.go": "package b\n\nfunc G() {\n\tx := 1\n}\n"}
	r2, err := store.TrackFindings(ctx, fixtureReview(second, "4", "bob", out.Fixed, fixedSrc))
	if err != nil || len(r2.Resolved) != 1 || r2.Resolved[0].ID != out.Resolved {
		t.Fatalf("track r4: %+v %v", r2, err)
	}
	if _, err := store.ActOnFinding(ctx, out.Dismissed, findings.Act{Action: findings.ActionFalsePositive, Actor: "carol", Via: findings.ViaWeb,
		Note: "cleanup is deferred", At: out.Fixed}); err != nil {
		t.Fatal(err)
	}
	return out
}

func fixtureReview(run int64, rev, author string, at time.Time, src map[string]string, problems ...review.Problem) findings.Review {
	ch := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: rev, Author: author}
	for p := range src {
		ch.Files = append(ch.Files, vcs.FileChange{Path: p, Action: vcs.ActionModify, NodeKind: vcs.NodeFile})
	}
	return findings.Review{Repo: "main", VCS: vcs.KindSVN, RunID: run, Revision: rev, Author: author, Agent: "llm", Model: "gpt-test", At: at,
		Change: ch, Problems: problems, Complete: true,
		Source: func(path string) ([]string, error) {
			c, ok := src[path]
			if !ok {
				return nil, fmt.Errorf("%s: not in the run's src/", path)
			}
			return strings.Split(c, "\n"), nil
		}}
}
