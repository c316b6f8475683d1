package e2e

// `aicr mcp admin` driven by the official MCP TypeScript SDK over stdio: the
// typed tools as an independent client sees them (the SDK validates every
// structured result against the tool's output schema), every mutation
// without confirm leaving the database byte for byte as it was, the same
// mutations with confirm applied, CLI parity, and the error envelopes.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/internal/admintest"
	"github.com/aicr-dev/aicr/mcperr"
)

type adminTSReport struct {
	Server struct {
		Name string `json:"name"`
	} `json:"server"`
	Tools []struct {
		Name            string   `json:"name"`
		Description     string   `json:"description"`
		Required        []string `json:"required"`
		HasOutputSchema bool     `json:"hasOutputSchema"`
		Annotations     struct {
			ReadOnlyHint    bool `json:"readOnlyHint"`
			DestructiveHint bool `json:"destructiveHint"`
		} `json:"annotations"`
		AdditionalProperties any `json:"additionalProperties"`
	} `json:"tools"`
	Calls []struct {
		Name              string          `json:"name"`
		IsError           bool            `json:"isError"`
		Text              string          `json:"text"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	} `json:"calls"`
}

type tsCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

func adminPlan(t *testing.T, calls ...tsCall) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"calls": calls})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	mustWrite(t, path, string(data))
	return path
}

func runAdminTSClient(t *testing.T, node, config, plan string) adminTSReport {
	t.Helper()
	cmd := exec.Command(node, filepath.Join(tsClientDir, "client.mjs"), "stdio", plan, aicrBin, "mcp", "admin", "--config", config)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client.mjs (aicr mcp admin): %v\nstderr: %s", err, stderr.String())
	}
	var out adminTSReport
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("client report: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return out
}

// fileDigest is the bytes of the database and its WAL ("" when absent).
func fileDigest(t *testing.T, paths ...string) string {
	t.Helper()
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s:%d:", p, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func decodeAs[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

func TestMCPAdminTypeScriptClient(t *testing.T) {
	node := requireTSClient(t)
	fx := admintest.New(t)
	mutations := func(confirm bool, planIDs map[string]string) []tsCall {
		args := func(tool string, a map[string]any) tsCall {
			if confirm {
				a["confirm"] = true
				if id := planIDs[tool]; id != "" {
					a["plan_id"] = id
				}
			}
			return tsCall{Name: tool, Arguments: a}
		}
		return []tsCall{
			args(admin.ToolRunRetry, map[string]any{"run_id": fx.Failed}),
			args(admin.ToolRunCancel, map[string]any{"run_id": fx.Queued, "reason": "reverted"}),
			args(admin.ToolDispatchRetry, map[string]any{"dispatch_id": fx.Dispatch}),
			args(admin.ToolRepoPause, map[string]any{"repo": "main", "reason": "dump/load"}),
			args(admin.ToolRepoResume, map[string]any{"repo": "docs"}),
			args(admin.ToolPrune, map[string]any{}),
		}
	}
	reads := []tsCall{
		{Name: admin.ToolRunsList, Arguments: map[string]any{}},
		{Name: admin.ToolRunInspect, Arguments: map[string]any{"run_id": fx.Old}},
		{Name: admin.ToolDispatchList, Arguments: map[string]any{"status": "dead"}},
		{Name: admin.ToolQueueStatus, Arguments: map[string]any{}},
		{Name: admin.ToolConfigCheck, Arguments: map[string]any{}},
		{Name: admin.ToolDoctor, Arguments: map[string]any{}},
	}
	dbFiles := []string{fx.DB, fx.DB + "-wal"}
	before := fileDigest(t, dbFiles...)

	// Phase 1: the read-only tools and every mutation without confirm.
	rep := runAdminTSClient(t, node, fx.Config, adminPlan(t, append(append([]tsCall{}, reads...), mutations(false, nil)...)...))
	if after := fileDigest(t, dbFiles...); after != before {
		t.Fatal("the database changed although no mutation was confirmed")
	}
	if _, err := os.Stat(filepath.Join(fx.DataDir, "runs", fmt.Sprint(fx.Old))); err != nil {
		t.Fatalf("prune without confirm removed a run directory: %v", err)
	}
	checkAdminTools(t, rep)
	planIDs := map[string]string{}
	for _, c := range rep.Calls {
		if c.IsError {
			t.Errorf("%s: isError %s", c.Name, c.Text)
			continue
		}
		if !strings.HasPrefix(c.Name, "run_retry") && !strings.Contains("run_cancel dispatch_retry repo_pause repo_resume prune", c.Name) {
			continue
		}
		o := decodeAs[admin.Outcome](t, c.StructuredContent)
		if o.Confirmed || len(o.Applied) != 0 || o.PlanID == "" || len(o.Plan) == 0 || !strings.Contains(o.Message, "nothing was written") {
			t.Errorf("%s without confirm: %+v", c.Name, o)
		}
		planIDs[c.Name] = o.PlanID
	}
	if p := decodeAs[admin.Outcome](t, rep.Calls[len(reads)+5].StructuredContent); len(p.Plan) != 1 || p.Plan[0].ID != fx.Old {
		t.Errorf("prune plan %+v, want run %d's directory", p.Plan, fx.Old)
	}

	// CLI parity: each read-only tool's structured content is the verb's
	// --format json output (a list tool's array under one key), and each
	// mutation's plan is the verb's --dry-run --format json output.
	parity := []struct {
		call int
		key  string
		args []string
	}{
		{0, "runs", []string{"audit", "list"}},
		{1, "", []string{"audit", "show", fmt.Sprint(fx.Old)}},
		{2, "dispatches", []string{"dispatch", "list", "--status", "dead"}},
		{3, "", []string{"queue", "status"}},
		{4, "", []string{"config", "check", fx.Config}},
		{5, "", []string{"doctor"}},
		{len(reads) + 0, "", []string{"run", "retry", fmt.Sprint(fx.Failed), "--dry-run"}},
		{len(reads) + 1, "", []string{"run", "cancel", fmt.Sprint(fx.Queued), "--reason", "reverted", "--dry-run"}},
		{len(reads) + 2, "", []string{"dispatch", "retry", fmt.Sprint(fx.Dispatch), "--queue", "--dry-run"}},
		{len(reads) + 3, "", []string{"repo", "pause", "main", "--reason", "dump/load", "--dry-run"}},
		{len(reads) + 4, "", []string{"repo", "resume", "docs", "--dry-run"}},
		{len(reads) + 5, "", []string{"prune", "--dry-run"}},
	}
	for _, p := range parity {
		args := append(append([]string{}, p.args...), "--format", "json")
		if p.args[0] != "config" {
			args = append(args, "--config", fx.Config)
		}
		out, errOut, code := runAicr(t, "", args...)
		// doctor exits 1 when a check fails (no daemon runs here); its
		// report is still the tool's result.
		if code != 0 && !(p.args[0] == "doctor" && code == 1) {
			t.Errorf("aicr %s: exit %d %s", strings.Join(args, " "), code, errOut)
			continue
		}
		var cli, tool any
		if err := json.Unmarshal([]byte(out), &cli); err != nil {
			t.Fatalf("aicr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if err := json.Unmarshal(rep.Calls[p.call].StructuredContent, &tool); err != nil {
			t.Fatal(err)
		}
		if p.key != "" {
			tool = tool.(map[string]any)[p.key]
		}
		// prune's message names its cutoff (now minus the window), and the
		// CLI runs a moment after the tool: the second may differ.
		if rep.Calls[p.call].Name == "prune" {
			cli, tool = blankTimes(t, cli), blankTimes(t, tool)
		}
		// The actor differs (who ran it); nothing else may.
		if !reflect.DeepEqual(cli, tool) {
			t.Errorf("%s: CLI and tool differ\nCLI:  %s\ntool: %s", rep.Calls[p.call].Name, out, rep.Calls[p.call].StructuredContent)
		}
	}
	if after := fileDigest(t, dbFiles...); after != before {
		t.Fatal("a --dry-run CLI verb changed the database")
	}

	// Phase 2: the same mutations confirmed with the plans' ids apply.
	rep = runAdminTSClient(t, node, fx.Config, adminPlan(t, mutations(true, planIDs)...))
	for _, c := range rep.Calls {
		if c.IsError {
			t.Fatalf("%s with confirm: %s", c.Name, c.Text)
		}
		o := decodeAs[admin.Outcome](t, c.StructuredContent)
		if !o.Confirmed || len(o.Applied) != 1 || o.PlanID != planIDs[c.Name] {
			t.Errorf("%s with confirm: %+v", c.Name, o)
		}
	}
	ctx := context.Background()
	store, err := audit.OpenReadOnly(ctx, fx.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if r, _ := store.GetRun(ctx, fx.Failed); r.Status != audit.RunQueued {
		t.Errorf("run_retry: run %d is %s", fx.Failed, r.Status)
	}
	if r, _ := store.GetRun(ctx, fx.Queued); r.Status != audit.RunSkipped || r.SkipReason != audit.SkipCancelled || !strings.Contains(r.Error, "reverted") {
		t.Errorf("run_cancel: run %+v", r.RunSummary)
	}
	if d, _ := store.GetDispatch(ctx, fx.Dispatch); d.Status != delivery.StatusPending {
		t.Errorf("dispatch_retry: %s", d.Status)
	}
	if p, paused, _ := store.RepoPaused(ctx, "main"); !paused || p.Reason != "dump/load" || !strings.Contains(p.PausedBy, "mcp admin") {
		t.Errorf("repo_pause: %+v %v", p, paused)
	}
	if _, paused, _ := store.RepoPaused(ctx, "docs"); paused {
		t.Error("repo_resume: docs still paused")
	}
	if _, err := os.Stat(filepath.Join(fx.DataDir, "runs", fmt.Sprint(fx.Old))); !os.IsNotExist(err) {
		t.Errorf("prune: run directory still there: %v", err)
	}
	if list := runAdminTSClient(t, node, fx.Config, adminPlan(t, tsCall{Name: admin.ToolRunsList, Arguments: map[string]any{"repo": "main", "status": "held"}})); !list.Calls[0].IsError {
		runs := decodeAs[admin.RunsListOutput](t, list.Calls[0].StructuredContent).Runs
		if len(runs) != 1 || runs[0].ID != fx.Failed || !runs[0].RepoPaused {
			t.Errorf("runs_list of the paused repo: %+v", runs)
		}
	}
}

func checkAdminTools(t *testing.T, rep adminTSReport) {
	t.Helper()
	if rep.Server.Name != "aicr-admin" {
		t.Errorf("server %q", rep.Server.Name)
	}
	want := []string{admin.ToolConfigCheck, admin.ToolDispatchList, admin.ToolDispatchRetry, admin.ToolDoctor,
		admin.ToolFindingsDismiss, admin.ToolFindingsList, admin.ToolFindingsReopen, admin.ToolFindingsShow, admin.ToolFindingsStats, admin.ToolPrune,
		admin.ToolQueueStatus, admin.ToolRepoPause, admin.ToolRepoResume, admin.ToolRunCancel, admin.ToolRunInspect,
		admin.ToolRunRetry, admin.ToolRunsList}
	var got []string
	for _, tool := range rep.Tools {
		got = append(got, tool.Name)
		mutating := strings.Contains("run_retry dispatch_retry run_cancel repo_pause repo_resume prune findings_dismiss findings_reopen", tool.Name)
		if !tool.HasOutputSchema || tool.Description == "" || tool.AdditionalProperties != false ||
			tool.Annotations.ReadOnlyHint == mutating || tool.Annotations.DestructiveHint != mutating {
			t.Errorf("tool %s: %+v", tool.Name, tool)
		}
		switch tool.Name {
		case admin.ToolRunInspect, admin.ToolRunCancel:
			if strings.Join(tool.Required, ",") != "run_id" {
				t.Errorf("%s required %v", tool.Name, tool.Required)
			}
		case admin.ToolRepoPause, admin.ToolRepoResume:
			if strings.Join(tool.Required, ",") != "repo" {
				t.Errorf("%s required %v", tool.Name, tool.Required)
			}
		}
	}
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
}

// Every reserved code the admin server can produce, as the SDK sees it:
// isError with {code, message, remedy} as structured content and text.
func TestMCPAdminErrorEnvelopes(t *testing.T) {
	node := requireTSClient(t)
	fx := admintest.New(t)
	rep := runAdminTSClient(t, node, fx.Config, adminPlan(t,
		tsCall{admin.ToolRunInspect, map[string]any{"run_id": 999}},
		tsCall{admin.ToolRunsList, map[string]any{"status": "bogus"}},
		tsCall{admin.ToolRunsList, map[string]any{"stauts": "failed"}},
		tsCall{admin.ToolRunCancel, map[string]any{"run_id": fx.Queued, "confirm": true, "plan_id": "0123456789abcdef"}},
		tsCall{admin.ToolRunRetry, map[string]any{"run_id": fx.Old}},
		tsCall{admin.ToolRepoPause, map[string]any{"repo": "nope"}},
	))
	want := []string{mcperr.NotFound, mcperr.InvalidInput, mcperr.InvalidInput, mcperr.ConfirmationRequired, mcperr.PolicyBlocked, mcperr.NotFound}
	checkEnvelopes(t, rep, want)
	if r, _ := readRun(t, fx.DB, fx.Queued); r.Status != audit.RunQueued {
		t.Errorf("a refused confirmation wrote: run %d is %s", fx.Queued, r.Status)
	}

	// CONFIG_INVALID: the config no longer loads (read at every call).
	bad := filepath.Join(t.TempDir(), "bad.toml")
	mustWrite(t, bad, "[daemon\n")
	checkEnvelopes(t, runAdminTSClient(t, node, bad, adminPlan(t, tsCall{admin.ToolQueueStatus, map[string]any{}})), []string{mcperr.ConfigInvalid})

	// INTERNAL: aicr.db is not a database.
	if err := os.WriteFile(fx.DB, []byte(strings.Repeat("not a database ", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(fx.DB + "-wal")
	os.Remove(fx.DB + "-shm")
	checkEnvelopes(t, runAdminTSClient(t, node, fx.Config, adminPlan(t, tsCall{admin.ToolRunsList, map[string]any{}})), []string{mcperr.Internal})
}

func checkEnvelopes(t *testing.T, rep adminTSReport, codes []string) {
	t.Helper()
	if len(rep.Calls) != len(codes) {
		t.Fatalf("%d results for %d calls", len(rep.Calls), len(codes))
	}
	for i, c := range rep.Calls {
		var sc, text mcperr.Error
		if err := json.Unmarshal(c.StructuredContent, &sc); err != nil || json.Unmarshal([]byte(c.Text), &text) != nil {
			t.Errorf("call %d %s: not an envelope: %s / %s", i, c.Name, c.StructuredContent, c.Text)
			continue
		}
		if !c.IsError || sc.Code != codes[i] || sc.Message == "" || sc.Remedy == "" || text != sc {
			t.Errorf("call %d %s: isError %v envelope %+v, want code %s", i, c.Name, c.IsError, sc, codes[i])
		}
	}
}

func readRun(t *testing.T, db string, id int64) (*audit.RunDetail, error) {
	t.Helper()
	store, err := audit.OpenReadOnly(context.Background(), db)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return store.GetRun(context.Background(), id)
}

// blankTimes is v with every RFC 3339 UTC time replaced by "TIME".
func blankTimes(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`).ReplaceAll(b, []byte("TIME")), &out); err != nil {
		t.Fatal(err)
	}
	return out
}
