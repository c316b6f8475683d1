package audit

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/review"
)

// A session's rounds: one at a time, a finished round is not reopened,
// a lease that runs out marks the owner gone, and a second process (a
// second Store on the file) sees all of it.
func TestSessionRounds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "aicr.db")
	s := openStore(t, path)
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	id, err := s.CreateSession(ctx, ReviewSession{Target: "svn-rev:4", Repo: "main", ConfigPath: "/etc/aicr/aicr.toml"}, "notes", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartRound(ctx, id, "reply", time.Minute); !errors.Is(err, ErrRoundRunning) {
		t.Fatalf("a second round while round 1 runs: %v", err)
	}
	if ok, err := s.ClaimRound(ctx, id, 1, 30*time.Second); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if ok, _ := s.ClaimRound(ctx, id, 1, 30*time.Second); ok {
		t.Fatal("a claimed round was claimed again")
	}
	r, err := s.SessionRound(ctx, id, 1)
	if err != nil || r.Status != RoundRunning || r.Input != "notes" || s.RoundOwnerGone(r) {
		t.Fatalf("round 1: %+v %v (gone %v)", r, err, s.RoundOwnerGone(r))
	}
	now = now.Add(31 * time.Second)
	if !s.RoundOwnerGone(r) {
		t.Error("an expired lease does not count as gone")
	}
	res := &review.Result{Problems: []review.Problem{{File: "a.go", Line: 3, Severity: review.SeverityHigh, Category: "x", Message: "m"}}}
	if ok, err := s.FinishRound(ctx, id, 1, RoundOutcome{Status: RoundCompleted, Result: res, Agent: "llm", Passes: 2}); !ok || err != nil {
		t.Fatalf("finish: %v %v", ok, err)
	}
	if ok, _ := s.FinishRound(ctx, id, 1, RoundOutcome{Status: RoundFailed, FailureReason: "late"}); ok {
		t.Error("a finished round was finished again")
	}
	other := openStore(t, path)
	r, err = other.SessionRound(ctx, id, 1)
	if err != nil || r.Status != RoundCompleted || r.Result == nil || len(r.Result.Problems) != 1 || r.Passes != 2 || r.FailureReason != "" {
		t.Fatalf("round 1 from another store: %+v %v", r, err)
	}
	n, err := s.StartRound(ctx, id, "fixed", time.Minute)
	if err != nil || n != 2 {
		t.Fatalf("round 2: %d %v", n, err)
	}
	sess, err := other.Session(ctx, id)
	if err != nil || sess.Rounds != 2 || sess.Status != SessionActive || sess.Target != "svn-rev:4" {
		t.Fatalf("session: %+v %v", sess, err)
	}
	if ok, err := s.EndSession(ctx, id, true, "approved"); !ok || err != nil {
		t.Fatalf("end: %v %v", ok, err)
	}
	if _, err := s.StartRound(ctx, id, "more", time.Minute); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("a round after the end: %v", err)
	}
	if _, err := s.Session(ctx, id+1); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown session: %v", err)
	}
}
