package review_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aicr-dev/aicr/review"
)

// When this env var is set the test binary is not running tests: it is the
// child process the MCP client spawned, and it serves the tools over its
// own stdin/stdout exactly as `aicr mcp serve` does.
const serveEnv = "AICR_TEST_MCP_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		opts := review.ServerOptions{
			StatePath:  os.Getenv("AICR_TEST_STATE"),
			ChangePath: os.Getenv("AICR_TEST_CHANGE"),
			Version:    "test",
		}
		opts.Limits.MaxProblems, _ = strconv.Atoi(os.Getenv("AICR_TEST_MAX_PROBLEMS"))
		opts.Limits.MaxRejected, _ = strconv.Atoi(os.Getenv("AICR_TEST_MAX_REJECTED"))
		opts.ToolNames = review.ToolNaming(os.Getenv("AICR_TEST_TOOL_NAMES"))
		// As `aicr mcp serve` does: SIGTERM ends the server cleanly.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		err := review.Serve(ctx, opts, os.Stdin, os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startServer spawns this test binary as the MCP server for f and returns
// an initialised client.
func startServer(t *testing.T, f fixture, maxProblems int, extraEnv ...string) *client.Client {
	t.Helper()
	env := append([]string{
		serveEnv + "=1",
		"AICR_TEST_STATE=" + f.statePath,
		"AICR_TEST_CHANGE=" + f.changePath,
		"AICR_TEST_MAX_PROBLEMS=" + strconv.Itoa(maxProblems),
	}, extraEnv...)
	c, err := client.NewStdioMCPClient(os.Args[0], env)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := testContext(t)
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "review-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// testContext only guards against a hung child; nothing asserts on time.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func call(t *testing.T, c *client.Client, tool string, args any) (string, bool) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(testContext(t), req)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("call %s: %d content items", tool, len(res.Content))
	}
	text, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("call %s: content is not text: %#v", tool, res.Content[0])
	}
	return text.Text, res.IsError
}

// callErr makes a call that must fail and returns its envelope.
func callErr(t *testing.T, c *client.Client, tool string, args any) review.ToolError {
	t.Helper()
	text, isErr := call(t, c, tool, args)
	if !isErr {
		t.Fatalf("call %s %v succeeded: %s", tool, args, text)
	}
	var env review.ToolError
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("envelope %q: %v", text, err)
	}
	if env.Code == "" || env.Message == "" || env.Remedy == "" {
		t.Fatalf("incomplete envelope %q", text)
	}
	return env
}

func callOK(t *testing.T, c *client.Client, tool string, args any) string {
	t.Helper()
	text, isErr := call(t, c, tool, args)
	if isErr {
		t.Fatalf("call %s %v failed: %s", tool, args, text)
	}
	return text
}

func loadState(t *testing.T, path string) *review.State {
	t.Helper()
	st, err := review.LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestServerToolsList(t *testing.T) {
	f := newFixture(t)
	c := startServer(t, f, 0)
	res, err := c.ListTools(testContext(t), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	required := map[string][]string{
		"aicr.report_problem":     {"category", "file", "line", "message", "severity"},
		"aicr.publish_summary":    {"markdown"},
		"aicr.skip":               {"reason"},
		"aicr.fetch_more_context": {"path", "reason"},
		"aicr.try_blame":          {"path", "reason"},
	}
	types := map[string]map[string]string{
		"aicr.report_problem": {"file": "string", "line": "integer", "end_line": "integer", "severity": "string",
			"category": "string", "message": "string", "suggestion": "string", "fingerprint": "string"},
		"aicr.publish_summary":    {"title": "string", "markdown": "string"},
		"aicr.skip":               {"reason": "string"},
		"aicr.fetch_more_context": {"path": "string", "range": "object", "reason": "string"},
		"aicr.try_blame":          {"path": "string", "range": "object", "reason": "string"},
	}
	if len(res.Tools) != len(required) {
		t.Fatalf("got %d tools, want %d", len(res.Tools), len(required))
	}
	for _, tool := range res.Tools {
		want, ok := required[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
		got := append([]string(nil), tool.InputSchema.Required...)
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s required = %v, want %v", tool.Name, got, want)
		}
		if len(tool.InputSchema.Properties) != len(types[tool.Name]) {
			t.Errorf("%s has %d properties, want %d", tool.Name, len(tool.InputSchema.Properties), len(types[tool.Name]))
		}
		for name, typ := range types[tool.Name] {
			prop, _ := tool.InputSchema.Properties[name].(map[string]any)
			if prop["type"] != typ {
				t.Errorf("%s.%s type = %v, want %s", tool.Name, name, prop["type"], typ)
			}
		}
		if tool.InputSchema.AdditionalProperties != false {
			t.Errorf("%s allows additional properties: %v", tool.Name, tool.InputSchema.AdditionalProperties)
		}
	}
	var sev map[string]any
	for _, tool := range res.Tools {
		if tool.Name == "aicr.report_problem" {
			sev, _ = tool.InputSchema.Properties["severity"].(map[string]any)
		}
	}
	if fmt.Sprint(sev["enum"]) != "[info low medium high critical]" {
		t.Errorf("severity enum = %v", sev["enum"])
	}
}

func TestServerRecordsAndRejects(t *testing.T) {
	f := newFixture(t)
	c := startServer(t, f, 2)

	// Starting the server writes an empty state: the agent connected.
	if st := loadState(t, f.statePath); len(st.Problems)+len(st.Rejected) != 0 || st.Skip != nil {
		t.Fatalf("initial state not empty: %+v", st)
	}

	text := callOK(t, c, "aicr.report_problem", map[string]any{
		"file": "app/main.go", "line": 7, "severity": "high", "category": "Resource Leak",
		"message": "connection never closed", "suggestion": "defer db.Close()",
	})
	st := loadState(t, f.statePath)
	if len(st.Problems) != 1 {
		t.Fatalf("problem not recorded: %+v", st)
	}
	p := st.Problems[0]
	if p.File != "app/main.go" || p.Line != 7 || p.Category != "resource-leak" || p.Severity != review.SeverityHigh || p.Fingerprint == "" {
		t.Errorf("recorded %+v", p)
	}
	if want := "recorded problem 1 (fingerprint " + p.Fingerprint + ")"; text != want {
		t.Errorf("text = %q, want %q", text, want)
	}

	// Same anchor and category, reworded: a duplicate, not a second problem.
	text = callOK(t, c, "aicr.report_problem", map[string]any{
		"file": "app/main.go", "line": 7, "severity": "medium", "category": "resource-leak", "message": "leak",
	})
	if !strings.Contains(text, "duplicate of problem 1") {
		t.Errorf("duplicate text = %q", text)
	}
	if st := loadState(t, f.statePath); len(st.Problems) != 1 {
		t.Errorf("duplicate recorded: %d problems", len(st.Problems))
	}

	bad := []struct {
		tool string
		args map[string]any
		code string
	}{
		{"aicr.report_problem", map[string]any{"file": "nope.go", "line": 1, "severity": "low", "category": "x", "message": "m"}, review.CodeFileNotInChange},
		{"aicr.report_problem", map[string]any{"file": "app/main.go", "line": 15, "severity": "low", "category": "x", "message": "m"}, review.CodeLineNotInDiff},
		{"aicr.report_problem", map[string]any{"file": "/etc/passwd", "line": 1, "severity": "low", "category": "x", "message": "m"}, review.CodePathOutOfScope},
		{"aicr.report_problem", map[string]any{"file": "app/main.go", "line": "7", "severity": "low", "category": "x", "message": "m"}, review.CodeInvalidInput},
		{"aicr.report_problem", map[string]any{"file": "app/main.go", "line": 7, "severity": "low", "category": "x", "message": "m", "author": "bob"}, review.CodeInvalidInput},
		{"aicr.report_problem", map[string]any{"file": "app/main.go", "line": 7, "severity": "severe", "category": "x", "message": "m"}, review.CodeInvalidInput},
		{"aicr.publish_summary", map[string]any{"title": "t"}, review.CodeInvalidInput},
		{"aicr.skip", map[string]any{}, review.CodeInvalidInput},
		{"aicr.fetch_more_context", map[string]any{"path": "../x", "reason": "r"}, review.CodePathOutOfScope},
		{"aicr.try_blame", map[string]any{"path": "a.go", "range": map[string]any{"start_line": 5, "end_line": 2}, "reason": "r"}, review.CodeInvalidInput},
		{"aicr.try_blame", map[string]any{"path": "a.go", "range": map[string]any{"start": 5}, "reason": "r"}, review.CodeInvalidInput},
	}
	for i, b := range bad {
		env := callErr(t, c, b.tool, b.args)
		if env.Code != b.code {
			t.Errorf("%s %v: code %s (%s), want %s", b.tool, b.args, env.Code, env.Message, b.code)
		}
		st := loadState(t, f.statePath)
		if len(st.Rejected) != i+1 {
			t.Fatalf("after bad call %d: %d rejections", i, len(st.Rejected))
		}
		r := st.Rejected[i]
		if r.Tool != b.tool || r.ToolError != env {
			t.Errorf("rejection %+v does not match call %s / %+v", r, b.tool, env)
		}
		var args map[string]any
		if err := json.Unmarshal(r.Arguments, &args); err != nil || fmt.Sprint(args) != fmt.Sprint(b.args) {
			t.Errorf("rejection arguments %s, want %v", r.Arguments, b.args)
		}
	}
	if env := callErr(t, c, "aicr.report_problem", map[string]any{
		"file": "app/main.go", "line": 7, "severity": "low", "category": "x", "message": "m", "author": "bob",
	}); !strings.Contains(env.Message, "author") || !strings.Contains(env.Remedy, "fingerprint") {
		t.Errorf("unknown argument envelope %+v", env)
	}

	// Limit of two problems: the second distinct one passes, the third not.
	callOK(t, c, "aicr.report_problem", map[string]any{"file": "docs/guide.md", "line": 1, "severity": "info", "category": "docs", "message": "title"})
	env := callErr(t, c, "aicr.report_problem", map[string]any{"file": "app/main.go", "line": 20, "severity": "low", "category": "x", "message": "m"})
	if env.Code != review.CodeLimitExceeded {
		t.Errorf("third problem: %+v", env)
	}

	callOK(t, c, "aicr.publish_summary", map[string]any{"title": "Review", "markdown": "Looks mostly fine."})
	callOK(t, c, "aicr.skip", map[string]any{"reason": "lgtm"})
	callOK(t, c, "aicr.fetch_more_context", map[string]any{"path": "lib/db.go", "range": map[string]any{"start_line": 1, "end_line": 40}, "reason": "see Open"})
	callOK(t, c, "aicr.try_blame", map[string]any{"path": "app/main.go", "reason": "who added it"})

	st = loadState(t, f.statePath)
	if len(st.Problems) != 2 || len(st.Summaries) != 1 || st.Skip == nil || st.Skip.Reason != "lgtm" ||
		len(st.ContextRequests) != 1 || len(st.AttributionRequests) != 1 || len(st.Rejected) != len(bad)+2 {
		t.Fatalf("final state %+v", st)
	}
	if r := st.ContextRequests[0].Range; r == nil || r.Start != 1 || r.End != 40 {
		t.Errorf("context range %+v", r)
	}
}

func TestServerRestartKeepsState(t *testing.T) {
	f := newFixture(t)
	c := startServer(t, f, 0)
	callOK(t, c, "aicr.report_problem", map[string]any{"file": "app/main.go", "line": 5, "severity": "low", "category": "a", "message": "m"})
	if err := c.Close(); err != nil {
		t.Logf("close: %v", err)
	}

	c2 := startServer(t, f, 0)
	callOK(t, c2, "aicr.report_problem", map[string]any{"file": "app/main.go", "line": 6, "severity": "low", "category": "a", "message": "m"})
	text := callOK(t, c2, "aicr.report_problem", map[string]any{"file": "app/main.go", "line": 5, "severity": "low", "category": "a", "message": "again"})
	if !strings.Contains(text, "duplicate of problem 1") {
		t.Errorf("restart lost earlier problem: %q", text)
	}
	if st := loadState(t, f.statePath); len(st.Problems) != 2 {
		t.Errorf("problems after restart: %+v", st.Problems)
	}
}

func TestNewServerErrors(t *testing.T) {
	f := newFixture(t)
	if _, err := review.NewServer(review.ServerOptions{StatePath: f.statePath, ChangePath: f.dir + "/missing.json"}); err == nil ||
		!strings.Contains(err.Error(), "no change file") {
		t.Errorf("missing change: %v", err)
	}
	writeFile(t, f.statePath, "{garbage")
	if _, err := review.NewServer(review.ServerOptions{StatePath: f.statePath}); err == nil ||
		!strings.Contains(err.Error(), "corrupt state file") {
		t.Errorf("corrupt state: %v", err)
	}
	// Defaults follow the run directory layout: agent/<state> → ../change.json.
	if err := os.Remove(f.statePath); err != nil {
		t.Fatal(err)
	}
	if _, err := review.NewServer(review.ServerOptions{StatePath: f.statePath}); err != nil {
		t.Errorf("default change path: %v", err)
	}
}

// A call the server cannot record (its state file's directory is gone)
// is the INTERNAL envelope as an isError result, never a JSON-RPC error
// an agent CLI might not show its model; the call is undone.
func TestServerStateWriteFailureIsInternalEnvelope(t *testing.T) {
	f := newFixture(t)
	c := startServer(t, f, 0)
	if err := os.RemoveAll(f.agentDir); err != nil {
		t.Fatal(err)
	}
	env := callErr(t, c, review.ToolReportProblem, map[string]any{"file": "app/main.go", "line": 7, "severity": "high",
		"category": "sql-injection", "message": "query built from input"})
	if env.Code != review.CodeInternal || !strings.Contains(env.Message, "could not be recorded") || !strings.Contains(env.Remedy, "stop") {
		t.Fatalf("envelope %+v", env)
	}
}
