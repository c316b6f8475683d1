package admin

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// The tool list marshals (a tool with two input schemas does not) and
// every tool declares typed input and output schemas.
func TestToolsListHasTypedSchemas(t *testing.T) {
	s, err := NewServer(New(Deps{ConfigPath: "/nonexistent.toml"}), "test")
	if err != nil {
		t.Fatal(err)
	}
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
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 17 {
		t.Fatalf("%d tools", len(list.Tools))
	}
	for _, tool := range list.Tools {
		b, err := json.Marshal(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		var m struct {
			Input  map[string]any `json:"inputSchema"`
			Output map[string]any `json:"outputSchema"`
		}
		if err := json.Unmarshal(b, &m); err != nil || m.Input["type"] != "object" || m.Output["type"] != "object" || m.Input["additionalProperties"] != false {
			t.Errorf("%s: schemas %s", tool.Name, b)
		}
	}
	// A config that does not load is CONFIG_INVALID, as an isError result.
	req := mcp.CallToolRequest{}
	req.Params.Name = ToolQueueStatus
	res, err := c.CallTool(ctx, req)
	if err != nil || !res.IsError {
		t.Fatalf("queue_status on a missing config: %+v %v", res, err)
	}
}

// Every mutating tool's input schema, as it goes on the wire, offers
// confirm (boolean) and plan_id (string): with additionalProperties
// false, a client that checks arguments against the schema could not
// confirm anything otherwise, and a model never learns it can.
func TestMutatingToolsSchemasOfferConfirm(t *testing.T) {
	s, err := NewServer(New(Deps{ConfigPath: "/nonexistent.toml"}), "test")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(s.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties map[string]struct {
						Type string `json:"type"`
					} `json:"properties"`
				} `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	mutating := map[string]bool{ToolRunRetry: true, ToolDispatchRetry: true, ToolRunCancel: true, ToolRepoPause: true, ToolRepoResume: true, ToolPrune: true,
		ToolFindingsDismiss: true, ToolFindingsReopen: true}
	seen := 0
	for _, tool := range list.Result.Tools {
		p := tool.InputSchema.Properties
		_, hasConfirm := p["confirm"]
		if !mutating[tool.Name] {
			if hasConfirm {
				t.Errorf("read-only %s takes confirm", tool.Name)
			}
			continue
		}
		seen++
		if p["confirm"].Type != "boolean" || p["plan_id"].Type != "string" {
			t.Errorf("%s: input schema properties %v lack confirm (boolean) or plan_id (string)", tool.Name, p)
		}
	}
	if seen != len(mutating) {
		t.Errorf("%d mutating tools listed", seen)
	}
}
