package review_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aicr-dev/aicr/review"
)

func TestListenAddr(t *testing.T) {
	tests := []struct {
		in    string
		allow bool
		want  string
		err   error
	}{
		{in: "127.0.0.1:8080", want: "127.0.0.1:8080"},
		{in: "127.0.0.2:0", want: "127.0.0.2:0"},
		{in: "localhost:9", want: "localhost:9"},
		{in: "[::1]:9", want: "[::1]:9"},
		{in: ":8080", want: "127.0.0.1:8080"},
		{in: "8080", want: "127.0.0.1:8080"},
		{in: "0.0.0.0:8080", err: review.ErrNotLoopback},
		{in: "[::]:8080", err: review.ErrNotLoopback},
		{in: "10.1.2.3:8080", err: review.ErrNotLoopback},
		{in: "mcp.example.com:8080", err: review.ErrNotLoopback},
		{in: "0.0.0.0:8080", allow: true, want: "0.0.0.0:8080"},
		{in: "mcp.example.com:8080", allow: true, want: "mcp.example.com:8080"},
	}
	for _, tt := range tests {
		got, err := review.ListenAddr(tt.in, tt.allow)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("ListenAddr(%q, %v) = %q, %v; want %v", tt.in, tt.allow, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ListenAddr(%q, %v) = %q, %v; want %q", tt.in, tt.allow, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:8080:9", "[::1"} {
		if _, err := review.ListenAddr(bad, true); err == nil {
			t.Errorf("ListenAddr(%q) accepted", bad)
		}
	}
}

// startHTTPServer runs ServeHTTP in this process and returns its URL; the
// server stops when the test ends.
func startHTTPServer(t *testing.T, f fixture, naming review.ToolNaming) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- review.ServeHTTP(ctx, review.ServerOptions{StatePath: f.statePath, ChangePath: f.changePath, ToolNames: naming},
			review.HTTPOptions{Addr: "127.0.0.1:0", Ready: func(u string) { urls <- u }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
	})
	select {
	case u := <-urls:
		return u
	case err := <-done:
		t.Fatalf("ServeHTTP: %v", err)
	}
	return ""
}

func httpClient(t *testing.T, url string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := testContext(t)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "review-http-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(testContext(t), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names
}

// Over Streamable HTTP the same tools write the same state file, and two
// sessions share it.
func TestServerHTTP(t *testing.T) {
	f := newFixture(t)
	url := startHTTPServer(t, f, "")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, review.HTTPPath) {
		t.Fatalf("url %q", url)
	}
	a := httpClient(t, url)
	if got := strings.Join(toolNames(t, a), ","); got != "aicr.fetch_more_context,aicr.publish_summary,aicr.report_problem,aicr.skip,aicr.try_blame" {
		t.Fatalf("tools %s", got)
	}
	callOK(t, a, "aicr.report_problem", map[string]any{"file": "app/main.go", "line": 7, "severity": "high", "category": "leak", "message": "m"})
	env := callErr(t, a, "aicr.report_problem", map[string]any{"file": "app/main.go", "line": 15, "severity": "low", "category": "x", "message": "m"})
	if env.Code != review.CodeLineNotInDiff {
		t.Errorf("off-diff over http: %+v", env)
	}

	b := httpClient(t, url)
	text := callOK(t, b, "aicr.report_problem", map[string]any{"file": "app/main.go", "line": 7, "severity": "low", "category": "leak", "message": "again"})
	if !strings.Contains(text, "duplicate of problem 1") {
		t.Errorf("second session does not see the first one's problem: %q", text)
	}
	callOK(t, b, "aicr.publish_summary", map[string]any{"markdown": "One leak."})
	callOK(t, b, "aicr.skip", map[string]any{"reason": "lgtm"})
	callOK(t, b, "aicr.fetch_more_context", map[string]any{"path": "lib/db.go", "reason": "callers"})
	callOK(t, b, "aicr.try_blame", map[string]any{"path": "app/main.go", "range": map[string]any{"start_line": 5, "end_line": 9}, "reason": "who"})

	st := loadState(t, f.statePath)
	if len(st.Problems) != 1 || len(st.Rejected) != 1 || len(st.Summaries) != 1 || st.Skip == nil ||
		len(st.ContextRequests) != 1 || len(st.AttributionRequests) != 1 {
		t.Fatalf("state after http calls: %+v", st)
	}
}

func TestServerHTTPRefusesNonLoopback(t *testing.T) {
	f := newFixture(t)
	err := review.ServeHTTP(context.Background(), review.ServerOptions{StatePath: f.statePath}, review.HTTPOptions{Addr: "0.0.0.0:0"})
	if !errors.Is(err, review.ErrNotLoopback) {
		t.Fatalf("ServeHTTP on 0.0.0.0: %v", err)
	}
}

// Underscore aliases are recorded under the canonical name, so the state
// file does not depend on how the client spelled the tool.
func TestServerToolNaming(t *testing.T) {
	tests := []struct {
		naming review.ToolNaming
		want   int
		has    string
		hasNot string
	}{
		{review.ToolNamingUnderscore, 5, "aicr_report_problem", "aicr.report_problem"},
		{review.ToolNamingBoth, 10, "aicr_report_problem", ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.naming), func(t *testing.T) {
			f := newFixture(t)
			c := startServer(t, f, 0, "AICR_TEST_TOOL_NAMES="+string(tt.naming))
			names := toolNames(t, c)
			joined := "," + strings.Join(names, ",") + ","
			if len(names) != tt.want || !strings.Contains(joined, ","+tt.has+",") || (tt.hasNot != "" && strings.Contains(joined, ","+tt.hasNot+",")) {
				t.Fatalf("tools %v", names)
			}
			callOK(t, c, "aicr_report_problem", map[string]any{"file": "app/main.go", "line": 7, "severity": "high", "category": "leak", "message": "m"})
			callErr(t, c, "aicr_skip", map[string]any{})
			st := loadState(t, f.statePath)
			if len(st.Problems) != 1 || len(st.Rejected) != 1 || st.Rejected[0].Tool != review.ToolSkip {
				t.Fatalf("state %+v", st)
			}
		})
	}
	if _, err := review.NewServer(review.ServerOptions{ToolNames: "camel"}); err == nil {
		t.Error("NewServer accepted tool names camel")
	}
}
