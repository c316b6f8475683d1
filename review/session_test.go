package review_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aicr-dev/aicr/review"
)

// sessionScript exercises every tool and every refusal path the handler
// has: valid calls, duplicates, a line outside the diff, a file outside
// the change, an unknown argument, a wrong type, non-JSON, and the limit.
var sessionScript = []struct {
	tool string
	args string
}{
	{review.ToolReportProblem, `{"file":"app/main.go","line":7,"severity":"high","category":"correctness","message":"db.Open ignores the timeout"}`},
	{review.ToolReportProblem, `{"file":"app/main.go","line":7,"severity":"high","category":"correctness","message":"db.Open ignores the timeout"}`},
	{review.ToolReportProblem, `{"file":"app/main.go","line":15,"severity":"low","category":"style","message":"outside the diff"}`},
	{review.ToolReportProblem, `{"file":"other.go","line":1,"severity":"low","category":"style","message":"not in the change"}`},
	{review.ToolReportProblem, `{"file":"app/main.go","line":8,"severity":"low","category":"style","message":"x","author":"bob"}`},
	{review.ToolReportProblem, `{"file":"app/main.go","line":"8","severity":"low","category":"style","message":"x"}`},
	{review.ToolReportProblem, `["not", "an", "object"]`},
	{review.ToolReportProblem, `{"file":"app/main.go","line":20,"severity":"medium","category":"race-condition","message":"second problem"}`},
	{review.ToolReportProblem, `{"file":"docs/guide.md","line":2,"severity":"info","category":"docs","message":"past the limit"}`},
	{review.ToolFetchMoreContext, `{"path":"lib/util.go","range":{"start_line":1,"end_line":40},"reason":"callee"}`},
	{review.ToolTryBlame, `{"path":"app/main.go","reason":"who wrote it"}`},
	{review.ToolPublishSummary, `{"title":"Two problems","markdown":"## Summary\n\nTwo problems."}`},
	{review.ToolSkip, `{}`},
}

// TestToolSessionMatchesMCPServer runs the same calls through `aicr mcp
// serve`'s stdio transport and through a ToolSession and requires the
// same answers and the same state file: one implementation, two doors.
func TestToolSessionMatchesMCPServer(t *testing.T) {
	viaMCP := newFixture(t)
	c := startServer(t, viaMCP, 2)
	var mcpAnswers []string
	for _, step := range sessionScript {
		req := mcp.CallToolRequest{}
		req.Params.Name = step.tool
		req.Params.Arguments = json.RawMessage(step.args)
		res, err := c.CallTool(testContext(t), req)
		if err != nil {
			t.Fatalf("mcp %s %s: %v", step.tool, step.args, err)
		}
		text, _ := mcp.AsTextContent(res.Content[0])
		mcpAnswers = append(mcpAnswers, answer(text.Text, res.IsError))
	}
	c.Close()

	viaSession := newFixture(t)
	s, err := review.NewToolSession(review.ServerOptions{StatePath: viaSession.statePath, Limits: review.Limits{MaxProblems: 2}})
	if err != nil {
		t.Fatal(err)
	}
	var sessionAnswers []string
	for _, step := range sessionScript {
		text, isErr := s.Call(context.Background(), step.tool, json.RawMessage(step.args))
		sessionAnswers = append(sessionAnswers, answer(text, isErr))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	errors := 0
	for i := range sessionScript {
		if mcpAnswers[i] != sessionAnswers[i] {
			t.Errorf("call %d (%s %s):\n mcp:     %s\n session: %s", i, sessionScript[i].tool, sessionScript[i].args, mcpAnswers[i], sessionAnswers[i])
		}
		if strings.HasPrefix(sessionAnswers[i], "error ") {
			errors++
		}
	}
	if errors < 6 {
		t.Errorf("the script should exercise at least 6 refusals, got %d: %q", errors, sessionAnswers)
	}
	a, b := stateJSON(t, viaMCP.statePath), stateJSON(t, viaSession.statePath)
	if !bytes.Equal(a, b) {
		t.Errorf("state files differ:\n mcp:     %s\n session: %s", a, b)
	}
	st := loadState(t, viaSession.statePath)
	if len(st.Problems) != 2 || len(st.ContextRequests) != 1 || len(st.AttributionRequests) != 1 || len(st.Summaries) != 1 {
		t.Errorf("session state: %+v", st)
	}
}

func answer(text string, isErr bool) string {
	if isErr {
		return "error " + text
	}
	return "ok " + text
}

// stateJSON is the state file with the fields that depend on when a call
// was made removed, re-encoded canonically.
func stateJSON(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	dropTimes(v)
	out, _ := json.Marshal(v)
	return out
}

func dropTimes(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.HasSuffix(strings.ToLower(k), "at") && isString(e) {
				delete(x, k)
				continue
			}
			dropTimes(e)
		}
	case []any:
		for _, e := range x {
			dropTimes(e)
		}
	}
}

func isString(v any) bool { _, ok := v.(string); return ok }

// TestToolSessionToolsAreTheServersTools: the specs a model is offered
// are the tools `aicr mcp serve` lists, schema for schema, and carry the
// seed's fields (docs: the five tools' exact schemas).
func TestToolSessionToolsAreTheServersTools(t *testing.T) {
	f := newFixture(t)
	s, err := review.NewToolSession(review.ServerOptions{StatePath: f.statePath})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := startServer(t, newFixture(t), 0)
	res, err := c.ListTools(testContext(t), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]mcp.Tool{}
	for _, tool := range res.Tools {
		listed[tool.Name] = tool
	}
	specs := s.Tools()
	if len(specs) != len(review.ToolNames) {
		t.Fatalf("%d specs, want %d", len(specs), len(review.ToolNames))
	}
	seed := map[string]struct{ required, optional []string }{
		review.ToolReportProblem:    {[]string{"category", "file", "line", "message", "severity"}, []string{"end_line", "fingerprint", "suggestion"}},
		review.ToolPublishSummary:   {[]string{"markdown"}, []string{"title"}},
		review.ToolSkip:             {[]string{"reason"}, nil},
		review.ToolFetchMoreContext: {[]string{"path", "reason"}, []string{"range"}},
		review.ToolTryBlame:         {[]string{"path", "reason"}, []string{"range"}},
	}
	for _, spec := range specs {
		tool, ok := listed[spec.Name]
		if !ok {
			t.Errorf("session offers %s, which the server does not list", spec.Name)
			continue
		}
		if spec.Description != tool.Description {
			t.Errorf("%s: description differs from the server's", spec.Name)
		}
		var got, want any
		_ = json.Unmarshal(spec.Schema, &got)
		wantRaw, _ := json.Marshal(tool.InputSchema)
		_ = json.Unmarshal(wantRaw, &want)
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) {
			t.Errorf("%s schema:\n session: %s\n server:  %s", spec.Name, g, w)
		}
		var schema struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(spec.Schema, &schema); err != nil {
			t.Fatalf("%s schema: %v", spec.Name, err)
		}
		want2 := seed[spec.Name]
		sort.Strings(schema.Required)
		if strings.Join(schema.Required, ",") != strings.Join(want2.required, ",") {
			t.Errorf("%s required = %v, seed says %v", spec.Name, schema.Required, want2.required)
		}
		var props []string
		for p := range schema.Properties {
			props = append(props, p)
		}
		all := append(append([]string(nil), want2.required...), want2.optional...)
		sort.Strings(props)
		sort.Strings(all)
		if schema.Type != "object" || strings.Join(props, ",") != strings.Join(all, ",") {
			t.Errorf("%s: type %q, properties %v, seed says %v", spec.Name, schema.Type, props, all)
		}
		if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: additionalProperties must be false", spec.Name)
		}
	}
	var sev struct {
		Properties struct {
			Severity struct {
				Enum []string `json:"enum"`
			} `json:"severity"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(specs[0].Schema, &sev)
	if got := strings.Join(sev.Properties.Severity.Enum, ","); got != "info,low,medium,high,critical" {
		t.Errorf("severity enum = %s", got)
	}
}

// TestToolSessionAcceptsProviderNames: a model API that forbids dots calls
// aicr_report_problem; the call is recorded under the canonical name, and
// an unknown tool is refused with the envelope, recorded like any refusal.
func TestToolSessionAcceptsProviderNames(t *testing.T) {
	f := newFixture(t)
	s, err := review.NewToolSession(review.ServerOptions{StatePath: f.statePath})
	if err != nil {
		t.Fatal(err)
	}
	text, isErr := s.Call(context.Background(), "aicr_skip", json.RawMessage(`{"reason":"lgtm"}`))
	if isErr {
		t.Fatalf("aicr_skip: %s", text)
	}
	text, isErr = s.Call(context.Background(), "shell_exec", json.RawMessage(`{"cmd":"id"}`))
	var env review.ToolError
	if !isErr || json.Unmarshal([]byte(text), &env) != nil || env.Code != review.CodeInvalidInput || env.Remedy == "" {
		t.Fatalf("unknown tool: %v %s", isErr, text)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st := loadState(t, f.statePath)
	if st.Skip == nil || st.Skip.Reason != "lgtm" || len(st.Rejected) != 1 || st.Rejected[0].Tool != "shell_exec" {
		t.Errorf("state: skip %+v, rejected %+v", st.Skip, st.Rejected)
	}
}

// TestToolSessionStopsWhenStateCannotBeWritten: a call whose result cannot
// be written is undone, and the session reports the failure instead of
// answering as if it had been recorded.
func TestToolSessionStopsWhenStateCannotBeWritten(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	f := newFixture(t)
	s, err := review.NewToolSession(review.ServerOptions{StatePath: f.statePath})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(f.statePath), 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Dir(f.statePath), 0o755) })
	text, isErr := s.Call(context.Background(), review.ToolSkip, json.RawMessage(`{"reason":"lgtm"}`))
	if !isErr || s.Err() == nil {
		t.Fatalf("call on an unwritable state dir: isError %v, %s, Err %v", isErr, text, s.Err())
	}
	if s.Close() == nil {
		t.Error("Close must report the failure")
	}
	os.Chmod(filepath.Dir(f.statePath), 0o755)
	if st := loadState(t, f.statePath); st.Skip != nil {
		t.Errorf("the failed call was recorded: %+v", st.Skip)
	}
}
