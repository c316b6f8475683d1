package audit

import (
	"context"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/triggers"
)

// Issue 22 A2/A2b, on both backends: a released claim is not an attempt,
// and parts recorded during an attempt survive it and a restart.
func TestReleaseClaimAndRecordParts(t *testing.T) {
	ctx := context.Background()
	path := tempDB(t)
	s := openStore(t, path)
	run := mustEnqueue(t, s, svnEvent("main", "9"), triggers.SourceTrigger).RunID
	d, err := s.PlanDispatch(ctx, run, "wc", delivery.PurposeReport, delivery.StatusPending, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	claim := func() *delivery.Claim {
		t.Helper()
		c, err := s.ClaimDispatch(ctx, d.ID, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// Nothing sent: no attempt, no record, due when the token is.
	notBefore := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	got, err := s.ReleaseClaim(ctx, claim(), notBefore, delivery.ReleaseUnsent)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != delivery.StatusPending || got.Attempts != 0 || !got.NextAttemptAt.Equal(notBefore) || !got.FirstAttemptAt.IsZero() {
		t.Fatalf("released unsent: %+v", got)
	}
	if a, _ := s.DispatchAttempts(ctx, d.ID); len(a) != 0 {
		t.Fatalf("attempt records after an unsent release: %+v", a)
	}
	if _, err := s.ClaimDispatch(ctx, d.ID, time.Minute); err == nil {
		t.Fatal("claimed before its not-before")
	}

	// Parts go out, recorded one by one; the rest waits for a token.
	if _, err := s.db.ExecContext(ctx, `UPDATE dispatches SET next_attempt_at = NULL WHERE id = ?`, d.ID); err != nil {
		t.Fatal(err)
	}
	c := claim()
	for i := 1; i <= 2; i++ {
		if err := s.RecordParts(ctx, c, i, "ts-1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordParts(ctx, c, 1, ""); err != nil { // never lowers
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, path) // as after a SIGKILL
	if got, err = s.GetDispatch(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if got.PartsDelivered != 2 || got.MessageID != "ts-1" {
		t.Fatalf("recorded parts after reopening: %+v", got)
	}
	if got, err = s.ReleaseClaim(ctx, c, time.Time{}, delivery.ReleasePartial); err != nil {
		t.Fatal(err)
	}
	a, _ := s.DispatchAttempts(ctx, d.ID)
	if got.Attempts != 0 || len(a) != 1 || a[0].Outcome != delivery.OutcomeRetry || a[0].FinishedAt.IsZero() {
		t.Fatalf("released partial: %+v, attempts %+v", got, a)
	}

	// Cut on the wire by our stop: the record stays open, so the next
	// claim knows the platform may have the message.
	if _, err := s.ReleaseClaim(ctx, claim(), time.Time{}, delivery.ReleaseMaybeSent); err != nil {
		t.Fatal(err)
	}
	if c := claim(); !c.Interrupted {
		t.Fatalf("claim after a cut send is not Interrupted: %+v", c)
	}
}
