package file

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/imtest"
)

// The file channel archives a resolution as a record of its own, with
// `resolved` records, next to the report it follows up.
func TestResolutionRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reports.jsonl")
	ch := New("archive", path, func() time.Time { return fixedNow })
	report := im.BuildReport(imtest.TrackedMessage())
	res := imtest.ResolutionReport()
	for _, m := range []im.Message{{Report: &report, DedupeKey: "aicr-7-archive"}, {Report: &res, DedupeKey: "aicr-8-archive-resolution"}} {
		if _, err := ch.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	var first, second Record
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if len(first.Entries) != 2 || first.Entries[0].FindingID != 11 || len(first.Repeats) != 1 {
		t.Fatalf("report record entries %+v repeats %+v", first.Entries, first.Repeats)
	}
	if second.ReportKind != "resolution" || len(second.Resolved) != 3 || second.Resolved[0].FindingID != 11 ||
		second.Resolved[0].Author != "bob" || second.Resolved[0].ReportRunID != 7 {
		t.Fatalf("resolution record %+v", second)
	}
}
