package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/aicr-dev/aicr/mcperr"
)

// The session tools declare typed input and output schemas (the result,
// or the envelope), and a tool of the review server that fails in a way
// nobody planned (a panic) still answers with the envelope, not with a
// JSON-RPC error.
func TestReviewServerSchemasAndEnvelope(t *testing.T) {
	f, _, _ := testFactory(t, filepath.Join(t.TempDir(), "missing.toml"))
	s, err := newReviewServer(&reviewTools{f: f})
	if err != nil {
		t.Fatal(err)
	}
	s.AddTool(mcp.NewTool("boom"), server.ToolHandlerFunc(func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		panic("planted")
	}))
	c, err := client.NewInProcessClient(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	// The list as it goes on the wire (a client's decoding would drop the
	// anyOf).
	raw, err := json.Marshal(s.HandleMessage(ctx, json.RawMessage(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	// Fields each result must have, as the issue names them.
	want := map[string][]string{
		toolReviewBegin: {"session_id", "round", "status"},
		toolReviewWait:  {"session_id", "round", "status", "elapsed_seconds", "next", "next_reason"},
		toolReviewReply: {"session_id", "round", "status"},
		toolReviewEnd:   {"session_id", "status", "finalized"},
	}
	seen := 0
	for _, b := range list.Result.Tools {
		var m struct {
			Name   string `json:"name"`
			Output struct {
				Type  string `json:"type"`
				AnyOf []struct {
					Properties map[string]any `json:"properties"`
					Required   []string       `json:"required"`
				} `json:"anyOf"`
			} `json:"outputSchema"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		fields, ok := want[m.Name]
		if !ok {
			continue
		}
		seen++
		if m.Output.Type != "object" || len(m.Output.AnyOf) != 2 {
			t.Errorf("%s: output schema %s", m.Name, b)
			continue
		}
		result, envelope := m.Output.AnyOf[0], m.Output.AnyOf[1]
		for _, k := range fields {
			if _, ok := result.Properties[k]; !ok {
				t.Errorf("%s: output schema lacks %s: %s", m.Name, k, b)
			}
		}
		for _, k := range []string{"code", "message", "remedy"} {
			if _, ok := envelope.Properties[k]; !ok {
				t.Errorf("%s: the envelope's schema lacks %s: %s", m.Name, k, b)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the session tools listed", seen)
	}

	req := mcp.CallToolRequest{}
	req.Params.Name = "boom"
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("a panicking tool answered with a protocol error: %v", err)
	}
	if code := envelopeCode(res); !res.IsError || code != mcperr.Internal {
		t.Fatalf("a panicking tool: %+v", res)
	}

	// A config that does not load is CONFIG_INVALID, as an isError result.
	req.Params.Name = toolReviewWait
	req.Params.Arguments = map[string]any{"session_id": "rs-1"}
	res, err = c.CallTool(ctx, req)
	if err != nil || !res.IsError {
		t.Fatalf("review_wait on a missing config: %+v %v", res, err)
	}
	if code := envelopeCode(res); code != mcperr.ConfigInvalid {
		t.Errorf("review_wait on a missing config: %+v", res.StructuredContent)
	}
}

// envelopeCode is the code of a result's structured envelope.
func envelopeCode(res *mcp.CallToolResult) string {
	b, _ := json.Marshal(res.StructuredContent)
	var env mcperr.Error
	_ = json.Unmarshal(b, &env)
	return env.Code
}
