package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
)

// auditFixture is a config and a real database with runs queued on three
// days: 12 runs on day 1 (every 4th failed with a long error whose useful
// part is at the end), 2 on day 2, 1 on day 3.
func auditFixture(t *testing.T) (configPath string, day func(int) time.Time) {
	t.Helper()
	ctx := context.Background()
	configPath, dataDir, _ := writeFileChannelConfig(t)
	store, err := audit.Open(ctx, filepath.Join(dataDir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	day = func(n int) time.Time { return time.Date(2026, 3, n, 10, 0, 0, 0, time.UTC) }
	now := day(1)
	store.SetClock(func() time.Time { return now })
	seedRuns(t, store, 1, 12)
	if _, err := store.RecordRejectedEvent(ctx, audit.RejectedEvent{Reason: "bad signature", Remote: "10.0.0.9:4000", Payload: []byte(`{"repo":"main"}`)}); err != nil {
		t.Fatal(err)
	}
	now = day(2)
	seedRuns(t, store, 13, 2)
	if _, err := store.RecordRejectedEvent(ctx, audit.RejectedEvent{Reason: "spool /var/lib/aicr/spool: unknown repo \"other\"", Payload: []byte{0xff, 0xfe, 0x00}}); err != nil {
		t.Fatal(err)
	}
	now = day(3)
	seedRuns(t, store, 15, 1)
	return configPath, day
}

// audit list: --rev selects a revision's runs, the author is a column,
// and a failure's reason is printed whole (its useful end included), in
// text and in JSON; audit show prints it whole too.
func TestAuditListRevAuthorAndFullReasons(t *testing.T) {
	ctx := context.Background()
	configPath, _ := auditFixture(t)
	f, out, _ := testFactory(t, configPath)
	if err := auditListRun(ctx, &AuditListOptions{Factory: f, Limit: 100, Revision: "4", Format: formatText}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "AUTHOR") {
		t.Fatalf("audit list --rev 4:\n%s", out)
	}
	if !strings.Contains(lines[1], "user1") || !strings.HasSuffix(lines[1], "the end: wrong password") {
		t.Errorf("run line does not show the author and the whole reason:\n%s", lines[1])
	}

	f, out, _ = testFactory(t, configPath)
	if err := auditListRun(ctx, &AuditListOptions{Factory: f, Limit: 100, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var runs []audit.RunSummary
	if err := json.Unmarshal(out.Bytes(), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 15 {
		t.Fatalf("%d runs listed, want 15", len(runs))
	}
	for _, r := range runs {
		if r.Status == audit.RunFailed && !strings.HasSuffix(r.Error, strings.Repeat("context ", 20)+"the end: wrong password") {
			t.Errorf("run %d: JSON error cut: %q", r.ID, r.Error)
		}
	}

	f, out, _ = testFactory(t, configPath)
	if err := auditShowRun(ctx, &AuditShowOptions{Factory: f, RunID: 4, Format: formatText}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "the end: wrong password") || !strings.Contains(out.String(), "by user1") {
		t.Errorf("audit show:\n%s", out)
	}

	// --rev takes what the hook takes, and says what is wrong otherwise.
	opts, _, code, _ := parseOpts(t, newCmdAuditList, "--rev", "+04")
	if code != 0 || opts.Revision != "4" {
		t.Errorf("--rev +04: code %d, revision %v", code, opts)
	}
	if _, _, code, msg := parseOpts(t, newCmdAuditList, "--rev", "HEAD"); code != exitUsage || !strings.Contains(msg, "--rev") {
		t.Errorf("--rev HEAD: code %d, %q", code, msg)
	}
}

// audit rejected lists refused requests newest first with their reason;
// --since drops older ones; JSON keeps a text payload as text and a
// binary one as base64.
func TestAuditRejected(t *testing.T) {
	ctx := context.Background()
	configPath, day := auditFixture(t)
	f, out, _ := testFactory(t, configPath)
	if err := auditRejectedRun(ctx, &AuditRejectedOptions{Factory: f, Format: formatText}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "bad signature") || !strings.Contains(text, "10.0.0.9:4000") || !strings.Contains(text, `unknown repo "other"`) {
		t.Errorf("audit rejected:\n%s", text)
	}
	if strings.Index(text, "unknown repo") > strings.Index(text, "bad signature") {
		t.Errorf("not newest first:\n%s", text)
	}

	f, out, _ = testFactory(t, configPath)
	since := day(2).Add(-time.Hour).Format(time.RFC3339)
	if err := auditRejectedRun(ctx, &AuditRejectedOptions{Factory: f, Since: since, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var views []rejectedView
	if err := json.Unmarshal(out.Bytes(), &views); err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || !strings.Contains(views[0].Reason, "unknown repo") || !bytes.Equal(views[0].PayloadBase64, []byte{0xff, 0xfe, 0x00}) {
		t.Errorf("--since %s: %+v", since, views)
	}
}

// audit export: JSON lines and CSV for a queue-time range, parsed back:
// one line per run in [since, until), with problems, dispatches and
// per-severity counts.
func TestAuditExport(t *testing.T) {
	ctx := context.Background()
	configPath, day := auditFixture(t)
	export := func(format, since, until string) string {
		t.Helper()
		f, out, errOut := testFactory(t, configPath)
		if err := auditExportRun(ctx, &AuditExportOptions{Factory: f, Since: since, Until: until, Format: format}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(errOut.String(), "exported ") {
			t.Errorf("no count on stderr: %q", errOut)
		}
		return out.String()
	}

	var runs []audit.ExportRun
	for _, line := range strings.Split(strings.TrimSpace(export(exportJSONL, day(1).Format(time.DateOnly), day(3).Format(time.DateOnly))), "\n") {
		var r audit.ExportRun
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("jsonl line: %v: %s", err, line)
		}
		runs = append(runs, r)
	}
	if len(runs) != 14 {
		t.Fatalf("jsonl: %d runs for days 1-2, want 14", len(runs))
	}
	for i, r := range runs {
		if i > 0 && r.ID <= runs[i-1].ID {
			t.Errorf("not oldest first: %d after %d", r.ID, runs[i-1].ID)
		}
		if len(r.Dispatches) != 1 || r.Dispatches[0].Channel != "reports" || r.Dispatches[0].Status != "sent" {
			t.Errorf("run %d dispatches %+v", r.ID, r.Dispatches)
		}
		if r.Status == audit.RunSucceeded && (len(r.Problems) != 1 || r.Problems[0].Severity != "medium" || r.Problems[0].Message == "") {
			t.Errorf("run %d problems %+v", r.ID, r.Problems)
		}
	}

	recs, err := csv.NewReader(strings.NewReader(export(exportCSV, day(2).Add(-time.Hour).Format(time.RFC3339), ""))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || strings.Join(recs[0], ",") != strings.Join(exportCSVHeader, ",") {
		t.Fatalf("csv since day 2: %d records, header %v", len(recs), recs[0])
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, rec := range recs[1:] {
		if rec[col["medium"]] != "1" && rec[col["status"]] == "succeeded" || rec[col["dispatches"]] != "reports:sent" || rec[col["author"]] == "" {
			t.Errorf("csv record %v", rec)
		}
		if rec[col["status"]] == "failed" && !strings.HasSuffix(rec[col["error"]], "wrong password") {
			t.Errorf("csv error cut: %q", rec[col["error"]])
		}
	}
	// An age works as --since; --until must come after it.
	if got := export(exportJSONL, "100000d", ""); strings.Count(got, "\n") != 15 {
		t.Errorf("--since 100000d exported %d lines, want 15", strings.Count(got, "\n"))
	}
	if _, _, code, _ := parseOpts(t, newCmdAuditExport, "--since", "2026-03-02", "--until", "2026-03-01"); code != exitUsage {
		t.Errorf("--until before --since: exit %d, want %d", code, exitUsage)
	}
	if _, _, code, _ := parseOpts(t, newCmdAuditExport, "--since", "yesterday"); code != exitUsage {
		t.Errorf("--since yesterday: exit %d, want %d", code, exitUsage)
	}
	if _, _, code, _ := parseOpts(t, newCmdAuditExport); code != exitUsage {
		t.Errorf("no --since: exit %d, want %d", code, exitUsage)
	}
}

func TestCSVTextDefusesFormulas(t *testing.T) {
	for in, want := range map[string]string{"=HYPERLINK(\"x\")": "'=HYPERLINK(\"x\")", "@SUM(1)": "'@SUM(1)", "alice": "alice", "": ""} {
		if got := csvText(in); got != want {
			t.Errorf("csvText(%q) = %q, want %q", in, got, want)
		}
	}
}
