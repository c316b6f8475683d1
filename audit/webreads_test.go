package audit

import (
	"context"
	"errors"
	"testing"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/triggers"
)

func TestListRunsBeforeID(t *testing.T) {
	s := openStore(t, tempDB(t))
	var ids []int64
	for _, rev := range []string{"1", "2", "3", "4", "5"} {
		ids = append(ids, mustEnqueue(t, s, svnEvent("main", rev), triggers.SourceTrigger).RunID)
	}
	page, err := s.ListRuns(context.Background(), ListOptions{Limit: 2, BeforeID: ids[3]})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].ID != ids[2] || page[1].ID != ids[1] {
		t.Fatalf("runs before %d: %+v", ids[3], page)
	}
}

func TestDispatchReport(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	e := mustEnqueue(t, s, svnEvent("main", "7"), triggers.SourceTrigger)
	rep := &im.Report{RunID: e.RunID, Title: "aicr review: main r7", Verdict: "Problems: 1 high", Entries: []im.Entry{{FindingID: 3}}}
	sent, err := s.PlanDispatch(ctx, e.RunID, "slack", delivery.PurposeReport, delivery.StatusPending, "", rep)
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := s.PlanDispatch(ctx, e.RunID, "file", delivery.PurposeReport, delivery.StatusSuppressed, "no_problems", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.DispatchReport(ctx, sent.ID)
	if err != nil || got == nil || got.Verdict != rep.Verdict || len(got.Entries) != 1 || got.Entries[0].FindingID != 3 {
		t.Fatalf("report of %d: %+v, %v", sent.ID, got, err)
	}
	if got, err := s.DispatchReport(ctx, quiet.ID); err != nil || got != nil {
		t.Errorf("suppressed dispatch: %+v, %v", got, err)
	}
	if _, err := s.DispatchReport(ctx, 9999); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown dispatch: %v", err)
	}
}
