package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/internal/admintest"
	"github.com/aicr-dev/aicr/mcperr"
)

func envCode(err error) string {
	var e *mcperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestFindingsListFiltersAndShowsHistory(t *testing.T) {
	fx := admintest.New(t)
	fs := admintest.AddFindings(t, fx)
	a := admin.New(admin.Deps{ConfigPath: fx.Config})
	ctx := context.Background()

	all, err := a.FindingsList(ctx, admin.FindingsListInput{})
	if err != nil || len(all.Findings) != 3 {
		t.Fatalf("all: %+v %v", all, err)
	}
	for _, c := range []struct {
		name string
		in   admin.FindingsListInput
		want []int64
	}{
		{"active", admin.FindingsListInput{State: "active"}, []int64{fs.Open}},
		{"resolved", admin.FindingsListInput{State: "resolved"}, []int64{fs.Resolved}},
		{"dismissed in main", admin.FindingsListInput{Repo: "main", State: "dismissed"}, []int64{fs.Dismissed}},
		{"severity", admin.FindingsListInput{Severity: "medium"}, []int64{fs.Open, fs.Resolved}},
		{"category", admin.FindingsListInput{Category: "style"}, []int64{fs.Resolved}},
		{"path", admin.FindingsListInput{Path: "src/a.go"}, []int64{fs.Open}},
		{"other repo", admin.FindingsListInput{Repo: "docs"}, nil},
		{"limit", admin.FindingsListInput{Limit: 1}, nil},
	} {
		got, err := a.FindingsList(ctx, c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.name == "limit" {
			if len(got.Findings) != 1 {
				t.Errorf("limit 1 gave %d", len(got.Findings))
			}
			continue
		}
		ids := map[int64]bool{}
		for _, f := range got.Findings {
			ids[f.ID] = true
		}
		if len(ids) != len(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, ids, c.want)
		}
		for _, id := range c.want {
			if !ids[id] {
				t.Errorf("%s: %d missing from %v", c.name, id, ids)
			}
		}
	}
	for _, bad := range []admin.FindingsListInput{{State: "closed"}, {Severity: "huge"}, {Limit: -1}} {
		if _, err := a.FindingsList(ctx, bad); envCode(err) != mcperr.InvalidInput {
			t.Errorf("%+v: %v", bad, err)
		}
	}

	d, err := a.FindingsShow(ctx, admin.FindingInput{FindingID: fs.Dismissed})
	if err != nil {
		t.Fatal(err)
	}
	if d.Finding.State != findings.StateDismissed || d.Finding.ActedBy != "carol" || len(d.History) != 2 ||
		d.History[1].Kind != findings.EventDismissed || d.History[1].Via != findings.ViaWeb || d.History[1].Note != "cleanup is deferred" {
		t.Fatalf("show = %+v", d)
	}
	if _, err := a.FindingsShow(ctx, admin.FindingInput{FindingID: 999}); envCode(err) != mcperr.NotFound {
		t.Fatalf("missing finding: %v", err)
	}
	if _, err := a.FindingsShow(ctx, admin.FindingInput{}); envCode(err) != mcperr.InvalidInput {
		t.Fatalf("no id: %v", err)
	}
}

func TestFindingsStatsCountsPrecision(t *testing.T) {
	fx := admintest.New(t)
	admintest.AddFindings(t, fx)
	a := admin.New(admin.Deps{ConfigPath: fx.Config})
	out, err := a.FindingsStats(context.Background(), admin.FindingsStatsInput{Repo: "main"})
	if err != nil {
		t.Fatal(err)
	}
	var sec *admin.StatView
	for i, s := range out.Stats {
		if s.Group == "category" && s.Value == "security" {
			sec = &out.Stats[i]
		}
	}
	if sec == nil || sec.Reported != 2 || sec.FalsePositive != 1 || sec.Dismissed != 1 || sec.Open != 1 || sec.Precision == nil || *sec.Precision != 0.5 {
		t.Fatalf("security = %+v in %+v", sec, out.Stats)
	}
	future, err := a.FindingsStats(context.Background(), admin.FindingsStatsInput{Since: "1h"})
	if err != nil || len(future.Stats) != 0 {
		t.Fatalf("since 1h: %+v %v", future, err)
	}
	if _, err := a.FindingsStats(context.Background(), admin.FindingsStatsInput{Since: "yesterday"}); envCode(err) != mcperr.InvalidInput {
		t.Fatalf("bad since: %v", err)
	}
}

// Dismiss and reopen are two-phase: the plan writes nothing, a plan made
// stale by another actor is refused, the apply records who and from
// where.
func TestFindingsDismissAndReopenAreTwoPhase(t *testing.T) {
	fx := admintest.New(t)
	fs := admintest.AddFindings(t, fx)
	ctx := context.Background()
	a := admin.New(admin.Deps{ConfigPath: fx.Config, Actor: "dave (mcp admin)", Via: findings.ViaMCP})

	plan, err := a.FindingsDismiss(ctx, admin.FindingsDismissInput{FindingID: fs.Open, Reason: "wont_fix", Note: "legacy"})
	if err != nil || plan.Confirmed || len(plan.Plan) != 1 || plan.Plan[0].From != "open" || plan.Plan[0].To != "dismissed" || plan.Finding != nil {
		t.Fatalf("plan = %+v %v", plan, err)
	}
	if f := get(t, fx, fs.Open); f.State != findings.StateOpen {
		t.Fatalf("the plan wrote: %s", f.State)
	}
	res, err := a.FindingsDismiss(ctx, admin.FindingsDismissInput{FindingID: fs.Open, Reason: "wont_fix", Note: "legacy",
		TwoPhase: admin.TwoPhase{Confirm: true, PlanID: plan.PlanID}})
	if err != nil || !res.Confirmed || len(res.Applied) != 1 || res.Finding == nil || res.Finding.State != findings.StateDismissed {
		t.Fatalf("apply = %+v %v", res, err)
	}
	f := get(t, fx, fs.Open)
	if f.Dismissal != findings.ActionWontFix || f.ActedBy != "dave (mcp admin)" || f.ActedVia != findings.ViaMCP || f.Note != "legacy" {
		t.Fatalf("dismissed = %+v", f)
	}
	// Dismissed already: nothing to do, and the old plan is stale.
	again, err := a.FindingsDismiss(ctx, admin.FindingsDismissInput{FindingID: fs.Open, Reason: "false_positive"})
	if err != nil || len(again.Plan) != 0 {
		t.Fatalf("again = %+v %v", again, err)
	}
	if _, err := a.FindingsDismiss(ctx, admin.FindingsDismissInput{FindingID: fs.Open, Reason: "wont_fix",
		TwoPhase: admin.TwoPhase{Confirm: true, PlanID: plan.PlanID}}); envCode(err) != mcperr.ConfirmationRequired {
		t.Fatalf("stale plan: %v", err)
	}

	rp, err := a.FindingsReopen(ctx, admin.FindingsReopenInput{FindingID: fs.Open})
	if err != nil || len(rp.Plan) != 1 || rp.Plan[0].From != "dismissed" || rp.Plan[0].To != "reopened" {
		t.Fatalf("reopen plan = %+v %v", rp, err)
	}
	if _, err := a.FindingsReopen(ctx, admin.FindingsReopenInput{FindingID: fs.Open, Note: "we fix it after all",
		TwoPhase: admin.TwoPhase{Confirm: true, PlanID: rp.PlanID}}); err != nil {
		t.Fatal(err)
	}
	if f := get(t, fx, fs.Open); f.State != findings.StateReopened {
		t.Fatalf("reopened = %+v", f)
	}
	open, err := a.FindingsReopen(ctx, admin.FindingsReopenInput{FindingID: fs.Open, TwoPhase: admin.TwoPhase{Confirm: true}})
	if err != nil || len(open.Applied) != 0 {
		t.Fatalf("reopen an open finding: %+v %v", open, err)
	}

	for _, in := range []admin.FindingsDismissInput{{FindingID: fs.Open, Reason: "reopen"}, {FindingID: fs.Open}, {Reason: "wont_fix"}} {
		if _, err := a.FindingsDismiss(ctx, in); envCode(err) != mcperr.InvalidInput {
			t.Errorf("%+v: %v", in, err)
		}
	}
	if _, err := a.FindingsDismiss(ctx, admin.FindingsDismissInput{FindingID: fs.Resolved, Reason: "wont_fix"}); envCode(err) != mcperr.PolicyBlocked {
		t.Fatalf("dismiss a resolved finding: %v", err)
	}
	ro := admin.New(admin.Deps{ConfigPath: fx.Config, ReadOnly: true})
	if _, err := ro.FindingsReopen(ctx, admin.FindingsReopenInput{FindingID: fs.Dismissed, TwoPhase: admin.TwoPhase{Confirm: true}}); envCode(err) != mcperr.PolicyBlocked {
		t.Fatalf("read-only server: %v", err)
	}
	if _, err := a.FindingsDismiss(ctx, admin.FindingsDismissInput{FindingID: 999, Reason: "wont_fix"}); envCode(err) != mcperr.NotFound {
		t.Fatalf("missing finding: %v", err)
	}
}

func get(t *testing.T, fx admintest.Fixture, id int64) findings.Finding {
	t.Helper()
	s, err := audit.OpenReadOnly(context.Background(), fx.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := s.GetFinding(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Over MCP: findings_list's structured content is the list, and
// findings_dismiss plans, then applies with the plan's id.
func TestFindingsToolsOverMCP(t *testing.T) {
	fx := admintest.New(t)
	fs := admintest.AddFindings(t, fx)
	s, err := admin.NewServer(admin.New(admin.Deps{ConfigPath: fx.Config, Actor: "erin (mcp admin)", Via: findings.ViaMCP}), "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any, out any) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s: %s: %v", name, b, err)
			}
		}
		return res
	}
	var list admin.FindingsListOutput
	if res := call(admin.ToolFindingsList, map[string]any{"state": "active"}, &list); res.IsError || len(list.Findings) != 1 || list.Findings[0].ID != fs.Open {
		t.Fatalf("findings_list = %+v", list)
	}
	var plan admin.FindingActOutput
	call(admin.ToolFindingsDismiss, map[string]any{"finding_id": fs.Open, "reason": "accepted_risk"}, &plan)
	if plan.Confirmed || plan.PlanID == "" {
		t.Fatalf("plan = %+v", plan)
	}
	var done admin.FindingActOutput
	call(admin.ToolFindingsDismiss, map[string]any{"finding_id": fs.Open, "reason": "accepted_risk", "confirm": true, "plan_id": plan.PlanID}, &done)
	if !done.Confirmed || done.Finding == nil || done.Finding.Dismissal != findings.ActionAcceptedRisk || done.Finding.ActedBy != "erin (mcp admin)" || done.Finding.ActedVia != findings.ViaMCP {
		t.Fatalf("apply = %+v", done)
	}
	if res := call(admin.ToolFindingsShow, map[string]any{"finding_id": fs.Open, "extra": 1}, nil); !res.IsError {
		t.Fatal("an unknown argument was accepted")
	}
}
