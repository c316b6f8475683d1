package delivery_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
)

// A run's report, its resolution follow-up and a digest (no run) to one
// channel are three messages: each goes out once, under its own dedupe
// key, so a receiver that dedupes drops none of them.
func TestNoticesCarryTheirOwnDedupeKeys(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	d := f.plan(1)
	res := im.Report{Kind: im.KindResolution}
	if _, _, err := f.store.PlanNotice(ctx, d.RunID, "hook", delivery.PurposeResolution, "resolution", &res); err != nil {
		t.Fatal(err)
	}
	dig := im.Report{Kind: im.KindDigest}
	if _, _, err := f.store.PlanNotice(ctx, 0, "hook", delivery.PurposeDigest, "digest:team:2025-01-01", &dig); err != nil {
		t.Fatal(err)
	}
	disp := f.dispatcher(3)
	for range 3 {
		if _, err := disp.DriveDue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	for k, n := range f.srv.accepted {
		keys = append(keys, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(keys)
	want := []string{
		delivery.DedupeKey(d.RunID, "hook") + "=1",
		fmt.Sprintf("aicr-%d-hook-resolution=1", d.RunID),
		"aicr-digest-hook-digest:team:2025-01-01=1",
	}
	sort.Strings(want)
	if fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Errorf("accepted %v, want %v", keys, want)
	}
}
