package webhook_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/webhook"
	"github.com/aicr-dev/aicr/internal/imtest"
)

// The machine format carries what the findings say: each problem's
// finding id and links, the repeats, and a resolution's resolved records
// with the earlier report that announced each.
func TestPayloadFindingsGolden(t *testing.T) {
	now := time.Unix(1700000000, 0)
	for name, rep := range map[string]im.Report{"tracked": im.BuildReport(imtest.TrackedMessage()), "resolution": imtest.ResolutionReport()} {
		t.Run(name, func(t *testing.T) {
			p := webhook.NewPayload(rep, "ci", "aicr-8-ci-resolution", now)
			body, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			imtest.Golden(t, name+".golden.json", string(body)+"\n")
			switch name {
			case "tracked":
				if len(p.Entries) != len(p.Problems) || p.Entries[0].FindingID != 11 || len(p.Repeats) != 1 || p.ReportKind != "" {
					t.Fatalf("entries %+v repeats %+v", p.Entries, p.Repeats)
				}
			case "resolution":
				if p.ReportKind != "resolution" || len(p.Resolved) != 3 || p.Resolved[0].ReportRunID != 7 || p.Resolved[2].ReportRevision != "r41" {
					t.Fatalf("resolved %+v", p.Resolved)
				}
			}
		})
	}
}
