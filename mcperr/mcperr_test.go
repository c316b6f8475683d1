package mcperr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestMiddlewareTurnsFailuresIntoEnvelopes(t *testing.T) {
	cases := []struct {
		name     string
		handler  func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
		wantCode string
	}{
		{"go error", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("disk full")
		}, Internal},
		{"wrapped envelope", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("run 4: %w", New(NotFound, "list runs", "no run 4"))
		}, NotFound},
		{"panic", func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			panic("boom")
		}, Internal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := mcp.CallToolRequest{}
			req.Params.Name = "x"
			res, err := Middleware(c.handler)(context.Background(), req)
			if err != nil || res == nil || !res.IsError {
				t.Fatalf("result %+v, err %v", res, err)
			}
			env, ok := res.StructuredContent.(*Error)
			if !ok || env.Code != c.wantCode || env.Message == "" || env.Remedy == "" {
				t.Fatalf("structured content %#v", res.StructuredContent)
			}
			var fromText Error
			if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &fromText); err != nil || fromText.Code != env.Code || fromText.Message != env.Message || fromText.Remedy != env.Remedy {
				t.Fatalf("text %v does not carry the envelope: %v", res.Content, err)
			}
		})
	}
}
