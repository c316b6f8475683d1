package builtin_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// BenchmarkReviewManyCredentials is a file of n added credential lines,
// reviewed end to end through the review tools (a spawned MCP server
// until the tools ran in process). Before the agent
// stopped at LIMIT_EXCEEDED, 10,000 lines took 221 s: every surplus
// finding was sent, refused and appended to a state file rewritten per
// call. Compare ns/line across the sub-benchmarks:
//
//	go test -run '^$' -bench ManyCredentials -benchtime 3x ./agent/builtin/
func BenchmarkReviewManyCredentials(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("lines=%d", n), func(b *testing.B) {
			var src strings.Builder
			for i := 0; i < n; i++ {
				fmt.Fprintf(&src, "password = \"hunter2-%08d\"\n", i)
			}
			change := vcs.Change{Files: []vcs.FileChange{{Path: "creds.py", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
				Added: []vcs.LineRange{{Start: 1, End: n}}, Hunks: []vcs.LineRange{{Start: 1, End: n}}}}}
			var logs bytes.Buffer
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				run := buildRun(b, map[string]string{"creds.py": src.String()}, change)
				a := newAgentWithLimits(b, &logs, review.Limits{})
				b.StartTimer()
				if _, err := a.Review(b.Context(), run, pass.Pass{Number: 1, Kind: pass.Review}); err != nil {
					b.Fatalf("review: %v", err)
				}
				b.StopTimer()
				st, err := review.LoadState(run.StatePath())
				if err != nil || len(st.Problems) != min(n, review.DefaultLimits().MaxProblems) {
					b.Fatalf("state %v: %d problems", err, len(st.Problems))
				}
				logs.Reset()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/line")
		})
	}
}
