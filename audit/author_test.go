package audit

import (
	"context"
	"testing"

	"github.com/aicr-dev/aicr/triggers"
)

// A run's author is the one its fetch recorded; before that, and when the
// fetch found none, the event's user (what a p4 trigger sends).
func TestRunAuthorFromFetchElseEvent(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	ev := svnEvent("main", "1")
	ev.User = "" // a svn hook sends no user
	mustEnqueue(t, s, ev, triggers.SourceTrigger)
	p4 := svnEvent("main", "2") // user alice, as a trigger's --user
	mustEnqueue(t, s, p4, triggers.SourceTrigger)
	first := mustClaim(t, s)
	if err := s.SetRunAuthor(ctx, first.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	runs, err := s.ListRuns(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range runs {
		got[r.Revision] = r.User
	}
	if got["1"] != "bob" || got["2"] != "alice" {
		t.Errorf("authors by revision = %v, want 1:bob (fetched) 2:alice (the event's)", got)
	}
	d, err := s.GetRun(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.User != "bob" {
		t.Errorf("GetRun user = %q, want bob", d.User)
	}
}
