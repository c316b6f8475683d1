package audit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
)

func TestPlanNotice(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	run := mustEnqueue(t, s, svnEvent("main", "3"), triggers.SourceTrigger).RunID
	report, err := s.PlanDispatch(ctx, run, "slack", delivery.PurposeReport, delivery.StatusPending, "", &im.Report{})
	if err != nil {
		t.Fatal(err)
	}
	res := &im.Report{Kind: im.KindResolution}
	n1, created, err := s.PlanNotice(ctx, run, "slack", delivery.PurposeResolution, "resolution", res)
	if err != nil || !created {
		t.Fatalf("plan resolution: %+v, %v, %v", n1, created, err)
	}
	if n1.ID == report.ID || n1.RunID != run || n1.Slot != "resolution" || n1.Purpose != delivery.PurposeResolution || n1.Status != delivery.StatusPending {
		t.Errorf("resolution row = %+v", n1)
	}
	n2, created, err := s.PlanNotice(ctx, run, "slack", delivery.PurposeResolution, "resolution", res)
	if err != nil || created || n2.ID != n1.ID {
		t.Errorf("planned again: %+v, created %v, %v", n2, created, err)
	}
	// PlanDispatch still owns the report row only.
	again, err := s.PlanDispatch(ctx, run, "slack", delivery.PurposeReport, delivery.StatusSuppressed, "policy", nil)
	if err != nil || again.ID != report.ID || again.Slot != "" {
		t.Errorf("report row replanned = %+v, %v", again, err)
	}

	digest := &im.Report{Kind: im.KindDigest}
	d1, created, err := s.PlanNotice(ctx, 0, "slack", delivery.PurposeDigest, "digest:team:2026-01-05", digest)
	if err != nil || !created || d1.RunID != 0 {
		t.Fatalf("plan digest: %+v, %v, %v", d1, created, err)
	}
	if d2, created, err := s.PlanNotice(ctx, 0, "slack", delivery.PurposeDigest, "digest:team:2026-01-05", digest); err != nil || created || d2.ID != d1.ID {
		t.Errorf("digest again: %+v, %v, %v", d2, created, err)
	}
	if d3, created, err := s.PlanNotice(ctx, 0, "slack", delivery.PurposeDigest, "digest:team:2026-01-12", digest); err != nil || !created || d3.ID == d1.ID {
		t.Errorf("next period's digest: %+v, %v, %v", d3, created, err)
	}

	// The digest is due at once; the run's rows wait for the run.
	due, err := s.DueChannels(ctx)
	if err != nil || !reflect.DeepEqual(due, []string{"slack"}) {
		t.Errorf("due channels = %v, %v", due, err)
	}
	c, err := s.ClaimDue(ctx, "slack", time.Minute)
	if err != nil || c == nil || c.Dispatch.ID != d1.ID || c.Report == nil || c.Report.Kind != im.KindDigest {
		t.Fatalf("claim due = %+v, %v", c, err)
	}
	if _, err := s.FinishAttempt(ctx, c, delivery.AttemptResult{Status: delivery.StatusSent, MessageID: "ts1"}); err != nil {
		t.Fatal(err)
	}

	rows, err := s.RunReportRows(ctx, run)
	if err != nil || len(rows) != 2 || rows[1].Slot != "resolution" || rows[1].Report == nil || rows[1].Report.Kind != im.KindResolution {
		t.Errorf("run report rows = %+v, %v", rows, err)
	}
	list, err := s.ListDispatches(ctx, DispatchFilter{})
	if err != nil || len(list) != 4 {
		t.Errorf("list = %+v, %v", list, err)
	}

	for _, bad := range []struct {
		run     int64
		purpose delivery.Purpose
		slot    string
		report  *im.Report
	}{
		{run, delivery.PurposeReport, "x", res},
		{run, delivery.PurposeResolution, "", res},
		{run, delivery.PurposeResolution, "resolution-2", nil},
		{-1, delivery.PurposeDigest, "digest:x", res},
	} {
		if _, _, err := s.PlanNotice(ctx, bad.run, "slack", bad.purpose, bad.slot, bad.report); !errors.Is(err, ErrInvalid) {
			t.Errorf("plan notice %+v: err = %v, want ErrInvalid", bad, err)
		}
	}
	if _, _, err := s.PlanNotice(ctx, 9999, "slack", delivery.PurposeResolution, "resolution", res); !errors.Is(err, ErrNotFound) {
		t.Errorf("notice of no run: %v", err)
	}
}

func TestNoticeDedupeKeys(t *testing.T) {
	for _, c := range []struct {
		d    delivery.Dispatch
		want string
	}{
		{delivery.Dispatch{RunID: 7, Channel: "ops", Slot: "resolution", Purpose: delivery.PurposeResolution}, "aicr-7-ops-resolution"},
		{delivery.Dispatch{Channel: "ops", Slot: "digest:team:2026-01-05", Purpose: delivery.PurposeDigest}, "aicr-digest-ops-digest:team:2026-01-05"},
	} {
		if got := delivery.NoticeDedupeKey(c.d); got != c.want {
			t.Errorf("key = %q, want %q", got, c.want)
		}
	}
}

// The dispatches rebuild keeps every row of a database of the previous
// schema: ids, statuses, reports, message ids and attempts.
func TestMigrationKeepsDispatchRows(t *testing.T) {
	ctx := context.Background()
	idTables() // computed from every migration before the list is cut
	path := tempDB(t)
	full := migrations
	migrations = full[:16] // the schema before migration 17, the rebuild
	old, err := openPath(ctx, t, path)
	migrations = full
	if err != nil {
		t.Fatal(err)
	}
	statuses := []delivery.Status{delivery.StatusPending, delivery.StatusSent, delivery.StatusFailed,
		delivery.StatusSuppressed, delivery.StatusDead, delivery.StatusUnknown}
	var runs []int64
	for i, st := range statuses {
		run := mustEnqueue(t, old, svnEvent("main", fmt.Sprint(i+1)), triggers.SourceTrigger).RunID
		runs = append(runs, run)
		if _, err := old.db.ExecContext(ctx, `INSERT INTO dispatches (id, run_id, channel, status, attempts, last_error, created_at, updated_at,
			purpose, message_id, parts_delivered, report) VALUES (?, ?, 'slack', ?, 1, 'e', ?, ?, 'report', ?, 1, ?)`,
			100+i, run, string(st), formatTime(time.Now()), formatTime(time.Now()), fmt.Sprint("ts-", i), fmt.Sprintf(`{"kind":"review","n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
		if _, err := old.db.ExecContext(ctx, `INSERT INTO dispatch_attempts (id, dispatch_id, attempt, started_at, outcome)
			VALUES (?, ?, 1, ?, 'retry')`, 200+i, 100+i, formatTime(time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	cols := `id, run_id, channel, status, attempts, last_error, created_at, updated_at, sent_at, purpose, next_attempt_at,
		lease_until, rendered, message_id, parts_delivered, first_attempt_at, unknown_outcomes, report`
	before := dumpQuery(t, old, `SELECT `+cols+` FROM dispatches ORDER BY id`)
	attemptsBefore := dumpQuery(t, old, `SELECT * FROM dispatch_attempts ORDER BY id`)
	old.Close()

	s := openStore(t, path)
	if got := dumpQuery(t, s, `SELECT `+cols+` FROM dispatches ORDER BY id`); !reflect.DeepEqual(got, before) {
		t.Errorf("dispatches after the migration:\n%v\nbefore:\n%v", got, before)
	}
	if got := dumpQuery(t, s, `SELECT * FROM dispatch_attempts ORDER BY id`); !reflect.DeepEqual(got, attemptsBefore) {
		t.Errorf("attempts after the migration:\n%v\nbefore:\n%v", got, attemptsBefore)
	}
	// New rows take ids past the copied ones (PostgreSQL's sequences moved).
	if err := s.FinishRun(ctx, mustClaim(t, s).ID, Outcome{Status: RunSucceeded, Problems: []review.Problem{problem("a.go", 1, review.SeverityLow, "x")}}); err != nil {
		t.Fatal(err)
	}
	n, _, err := s.PlanNotice(ctx, runs[0], "slack", delivery.PurposeResolution, "resolution", &im.Report{Kind: im.KindResolution})
	if err != nil || n.ID <= 105 {
		t.Fatalf("new notice after the migration: %+v, %v", n, err)
	}
	c, err := s.ClaimDispatch(ctx, 100, time.Minute)
	if err != nil {
		t.Fatalf("claim the migrated pending row: %v", err)
	}
	if c.Attempt != 2 || c.AttemptID <= 205 || c.Dispatch.MessageID != "ts-0" || c.Report == nil {
		t.Errorf("claim of the migrated row = %+v", c)
	}
	// The rebuilt attempts still belong to the rebuilt dispatches.
	if _, err := s.db.ExecContext(ctx, `DELETE FROM dispatches WHERE id = 101`); err != nil {
		t.Fatal(err)
	}
	if got := dumpQuery(t, s, `SELECT id FROM dispatch_attempts WHERE dispatch_id = 101`); len(got) != 0 {
		t.Errorf("attempts of a deleted dispatch left: %v", got)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO dispatch_attempts (dispatch_id, attempt, started_at) VALUES (9999, 1, 'x')`); err == nil {
		t.Errorf("an attempt of no dispatch was accepted: the foreign key is gone")
	}
}

func dumpQuery(t *testing.T, s *Store, q string) []string {
	t.Helper()
	rows, err := s.db.QueryContext(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		line := ""
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			line += fmt.Sprintf("%s=%v|", cols[i], v)
		}
		out = append(out, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeleteNoticesBefore: the audit_rows retention deletes settled digest
// rows (no run takes them along) and their attempts, never a pending one
// or one updated after the cutoff.
func TestDeleteNoticesBefore(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	settled, _, err := s.PlanNotice(ctx, 0, "slack", delivery.PurposeDigest, "digest:team:2026-01-05", &im.Report{Kind: im.KindDigest})
	if err != nil {
		t.Fatal(err)
	}
	pending, _, err := s.PlanNotice(ctx, 0, "slack", delivery.PurposeDigest, "digest:team:2026-01-12", &im.Report{Kind: im.KindDigest})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE dispatches SET status = 'sent' WHERE id = ?`, settled.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO dispatch_attempts (dispatch_id, attempt, started_at, outcome) VALUES (?, 1, ?, 'sent')`,
		settled.ID, formatTime(time.Now())); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteNoticesBefore(ctx, time.Now().Add(-time.Hour), 10); err != nil || n != 0 {
		t.Fatalf("before the rows were settled long enough: deleted %d, %v", n, err)
	}
	if n, err := s.DeleteNoticesBefore(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("deleted %d, %v; want the settled digest only", n, err)
	}
	var left []int64
	if left, err = listIDs(ctx, s.db, "left", `SELECT id FROM dispatches ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(left, []int64{pending.ID}) {
		t.Errorf("dispatches left = %v, want the pending digest %d", left, pending.ID)
	}
	var attempts int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM dispatch_attempts`).Scan(&attempts); err != nil || attempts != 0 {
		t.Errorf("attempts left = %d, %v", attempts, err)
	}
}
