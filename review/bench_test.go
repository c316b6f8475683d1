package review_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aicr-dev/aicr/review"
)

// BenchmarkRejectedCalls is a runaway agent: a pass of n refused 8 KiB
// calls (off the diff) through a real MCP client, in process. The cost
// per call must not grow with n: before the rejected cap, every call
// appended to the state and rewrote and fsynced all of it (3,000 calls
// took 348 s). Compare ns/call across the sub-benchmarks:
//
//	go test -run '^$' -bench RejectedCalls -benchtime 3x ./review/
func BenchmarkRejectedCalls(b *testing.B) {
	for _, n := range []int{100, 1000, 3000} {
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			message := strings.Repeat("x", 8<<10)
			var stateBytes int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f := newFixture(b)
				s, err := review.NewServer(review.ServerOptions{StatePath: f.statePath, ChangePath: f.changePath})
				if err != nil {
					b.Fatal(err)
				}
				c, err := client.NewInProcessClient(s)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				init := mcp.InitializeRequest{}
				init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
				if _, err := c.Initialize(ctx, init); err != nil {
					b.Fatal(err)
				}
				req := mcp.CallToolRequest{}
				req.Params.Name = review.ToolReportProblem
				req.Params.Arguments = map[string]any{"file": "app/main.go", "line": 15, "severity": "low", "category": "x", "message": message}
				b.StartTimer()
				for k := 0; k < n; k++ {
					res, err := c.CallTool(ctx, req)
					if err != nil || !res.IsError {
						b.Fatalf("call %d: %v %+v", k, err, res)
					}
				}
				b.StopTimer()
				c.Close()
				if fi, err := os.Stat(f.statePath); err == nil {
					stateBytes = fi.Size()
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
			b.ReportMetric(float64(stateBytes), "state-bytes")
		})
	}
}
