package review_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
)

// TestClientAddedArgumentsAreIgnored: Gemini CLI adds wait_for_previous to
// every MCP tool call. Each tool must take the call as if the argument
// were absent, through the MCP server and through a ToolSession alike,
// while an argument no client adds is still refused.
func TestClientAddedArgumentsAreIgnored(t *testing.T) {
	calls := []struct{ tool, args string }{
		{review.ToolReportProblem, `{"file":"app/main.go","line":7,"severity":"high","category":"correctness","message":"db.Open ignores the timeout","wait_for_previous":false}`},
		{review.ToolFetchMoreContext, `{"path":"lib/util.go","range":{"start_line":1,"end_line":40},"reason":"callee","wait_for_previous":true}`},
		{review.ToolTryBlame, `{"wait_for_previous":true,"path":"app/main.go","reason":"who wrote it"}`},
		{review.ToolPublishSummary, `{"title":"One problem","markdown":"One problem.","wait_for_previous":true}`},
		{review.ToolSkip, `{"reason":"lgtm","wait_for_previous":false}`},
	}
	f := newFixture(t)
	s, err := review.NewToolSession(review.ServerOptions{StatePath: f.statePath})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if text, isErr := s.Call(context.Background(), c.tool, json.RawMessage(c.args)); isErr {
			t.Errorf("%s %s refused: %s", c.tool, c.args, text)
		}
	}
	text, isErr := s.Call(context.Background(), review.ToolReportProblem,
		json.RawMessage(`{"file":"app/main.go","line":8,"severity":"low","category":"style","message":"x","author":"bob","wait_for_previous":true}`))
	if !isErr || !strings.Contains(text, "author") || strings.Contains(text, "wait_for_previous") {
		t.Errorf("an undeclared argument beside wait_for_previous: %v %s, want a refusal naming author only", isErr, text)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st := loadState(t, f.statePath)
	if len(st.Problems) != 1 || len(st.ContextRequests) != 1 || len(st.AttributionRequests) != 1 ||
		len(st.Summaries) != 1 || st.Skip == nil || len(st.Rejected) != 1 {
		t.Errorf("state after the calls: %+v", st)
	}

	viaMCP := newFixture(t)
	c := startServer(t, viaMCP, 0)
	callOK(t, c, review.ToolReportProblem, map[string]any{"file": "app/main.go", "line": 7, "severity": "high",
		"category": "correctness", "message": "db.Open ignores the timeout", "wait_for_previous": true})
	if st := loadState(t, viaMCP.statePath); len(st.Problems) != 1 {
		t.Errorf("MCP server state: %+v", st)
	}
}
