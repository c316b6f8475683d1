package audit

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/pgtest"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
)

// populate writes a row into every table through the Store's own methods.
func populate(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	cost := 0.125
	for i := 1; i <= 5; i++ {
		mustEnqueue(t, s, svnEvent("main", fmt.Sprint(i)), triggers.SourceTrigger)
	}
	mustEnqueue(t, s, svnEvent("main", "2"), triggers.SourceSpool) // a duplicate receipt
	mustEnqueue(t, s, svnEvent("main", "2"), triggers.SourceManual)
	for range 3 {
		run := mustClaim(t, s)
		if err := s.AddAgentStats(ctx, run.ID, AgentStats{Agent: "llm", Model: "m", Passes: 1, InputTokens: 10, CacheReadTokens: 5, CostUSD: &cost,
			PerTurn: []TurnUsage{{Attempt: 1, Pass: 1, Turn: 1, InputTokens: 10, CacheReadTokens: 5}}}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordEgress(ctx, run.ID, EgressEvent{Host: "api.example.com", Port: 443, Allowed: run.ID%2 == 0, Reason: "allowlist"}); err != nil {
			t.Fatal(err)
		}
		out := Outcome{Status: RunSucceeded, Problems: []review.Problem{problem("a.go", 3, review.SeverityHigh, "nil deref"), problem("b.go", 9, review.SeverityLow, "typo 'user'")}}
		if err := s.FinishRun(ctx, run.ID, out); err != nil {
			t.Fatal(err)
		}
		d, err := s.PlanDispatch(ctx, run.ID, "dingtalk-dev", delivery.PurposeReport, delivery.StatusPending, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.ClaimDispatch(ctx, d.ID, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.FinishAttempt(ctx, c, delivery.AttemptResult{Status: delivery.StatusSent, Rendered: "report", MessageID: "m1", PartsDelivered: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RecordRejectedEvent(ctx, RejectedEvent{Reason: "bad signature", Remote: "10.0.0.9", Payload: []byte{0, 1, 2, 0xff}, Truncated: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRepoMark(ctx, "main", "5"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SeenSignature(ctx, "abc123", time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Heartbeat(ctx, "1.0", "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeRateToken(ctx, "dingtalk-dev", 3*time.Second, 20); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PauseRepo(ctx, "main", "ops", "freeze"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TrackFindings(ctx, trackReview(1, "1", "alice", repoFiles{"a.go": goodFile}, sqlProblem(4))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PlanNotice(ctx, 0, "dingtalk-dev", delivery.PurposeDigest, "digest:daily:2025-01-02", &im.Report{Kind: im.KindDigest}); err != nil {
		t.Fatal(err)
	}
	sid, err := s.CreateSession(ctx, ReviewSession{Target: "svn-wc:/tmp/wc", Repo: "main", Agent: "llm"}, "first look", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishRound(ctx, sid, 1, RoundOutcome{Status: RoundCompleted}); err != nil {
		t.Fatal(err)
	}
}

// dump reads every row of every table, values as text, for comparison.
func dump(t *testing.T, db *sql.DB, tables []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range tables {
		out[table] = dumpTable(t, db, table)
	}
	return out
}

func dumpTable(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	var out []string
	rows, err := db.QueryContext(t.Context(), `SELECT * FROM `+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = fmt.Sprintf("%x", b)
			}
			parts[i] = cols[i] + "=" + fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sortStrings(out)
	return out
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestCopyAllFromSQLiteKeepsEveryRow(t *testing.T) {
	if onPostgres() {
		t.Skip("runs once, from the SQLite run")
	}
	ctx := context.Background()
	src := openStore(t, tempDB(t))
	populate(t, src)
	srcTables, err := func() ([]string, error) {
		tx, err := src.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		defer tx.Rollback()
		return sqliteTablesInOrder(ctx, tx)
	}()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"events", "runs", "problems", "dispatches", "dispatch_attempts", "egress_events", "rejected_events", "repo_marks", "replay_signatures", "daemons", "rate_buckets"} {
		found := false
		for _, tb := range srcTables {
			found = found || tb == want
		}
		if !found {
			t.Fatalf("table %s not listed for copying: %v", want, srcTables)
		}
	}
	// Parents before children.
	pos := map[string]int{}
	for i, tb := range srcTables {
		pos[tb] = i
	}
	if !(pos["events"] < pos["runs"] && pos["runs"] < pos["dispatches"] && pos["dispatches"] < pos["dispatch_attempts"]) {
		t.Fatalf("tables out of foreign key order: %v", srcTables)
	}

	dst, err := OpenPostgres(ctx, pgtest.Start(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	counts, err := CopyAll(ctx, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range counts {
		if c.Source != c.Copied {
			t.Errorf("%s: %d of %d rows", c.Table, c.Copied, c.Source)
		}
	}
	before, after := dump(t, src.db.DB, srcTables), dump(t, dst.db.DB, srcTables)
	for _, tb := range srcTables {
		if len(before[tb]) == 0 {
			t.Errorf("populate left %s empty; the test would prove nothing for it", tb)
		}
		if !reflect.DeepEqual(before[tb], after[tb]) {
			t.Errorf("table %s differs after the copy:\nsqlite:   %q\npostgres: %q", tb, before[tb], after[tb])
		}
	}
	// Sequences continue past the copied ids: the next event and run get
	// new ids instead of colliding.
	maxRun := int64(0)
	if err := src.db.QueryRow(`SELECT MAX(id) FROM runs`).Scan(&maxRun); err != nil {
		t.Fatal(err)
	}
	enq := mustEnqueue(t, dst, svnEvent("main", "99"), triggers.SourceTrigger)
	if enq.RunID != maxRun+1 {
		t.Errorf("new run id on PostgreSQL = %d, want %d", enq.RunID, maxRun+1)
	}
	// A second copy into the now non-empty database is refused.
	if _, err := CopyAll(ctx, src, dst); err == nil || !strings.Contains(err.Error(), "already has") {
		t.Fatalf("copy into a populated database: %v", err)
	}
}
