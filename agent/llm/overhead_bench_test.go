package llm_test

// The overhead benchmark of issue 11: what aicr itself spends on one llm
// review (prompt, SDK encoding and decoding, the HTTP round trips' client
// side, the in-process tool session, the ladder, the builtin pre-pass and
// the merge) against the whole of a builtin review of the same change.
//
//	scripts/bench-llm-overhead.sh        # the table
//	go test -run '^$' -bench LLMOverhead -count 5 ./agent/llm/

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

const (
	benchFiles        = 10
	benchLinesPerFile = 30 // 300 added lines in all
)

// benchRun lays out the change both agents review: ten new Go files of
// 30 lines each, one of them with a committed credential the builtin
// checks find (so the pre-pass has something to merge).
func benchRun(b *testing.B) rundir.Layout {
	b.Helper()
	run := rundir.New(b.TempDir())
	if err := run.Create(); err != nil {
		b.Fatal(err)
	}
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "42", Author: "erin",
		Description: "add the billing service: handlers, store, config"}
	var diff strings.Builder
	for f := 0; f < benchFiles; f++ {
		path := fmt.Sprintf("svc/billing/part%02d.go", f)
		var src strings.Builder
		src.WriteString("package billing\n\nimport \"fmt\"\n\n") // lines 1-4
		for line := 5; line <= benchLinesPerFile; line++ {
			if f == 3 && line == 6 {
				src.WriteString("var password = \"s3cr3t-Prod-Billing-2026\"\n")
				continue
			}
			fmt.Fprintf(&src, "func handler%02d_%02d(id int) string { return fmt.Sprintf(\"invoice-%%d-%d\", id) }\n", f, line, line)
		}
		content := src.String()
		name, _ := run.SrcPath(path)
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		change.Files = append(change.Files, vcs.FileChange{Path: path, Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 1, End: benchLinesPerFile}}, Hunks: []vcs.LineRange{{Start: 1, End: benchLinesPerFile}}})
		fmt.Fprintf(&diff, "Index: %s\n===================================================================\n--- %s\t(nonexistent)\n+++ %s\t(revision 42)\n@@ -0,0 +1,%d @@\n",
			path, path, path, benchLinesPerFile)
		for _, l := range strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n") {
			diff.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
		}
	}
	if err := run.WriteChange(change); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(run.DiffPath(), []byte(diff.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return run
}

// benchScript is one llm review: three problems, then the summary.
func benchScript() []modelsim.Step {
	report := func(file, line int, msg string) modelsim.ToolCall {
		return modelsim.ToolCall{Name: "aicr_report_problem", Arguments: fmt.Sprintf(
			`{"file":"svc/billing/part%02d.go","line":%d,"severity":"medium","category":"correctness","message":%q}`, file, line, msg)}
	}
	return []modelsim.Step{
		{ToolCalls: []modelsim.ToolCall{
			report(1, 10, "The invoice number ignores the id's sign."),
			report(5, 20, "The format string drops the currency."),
			report(8, 25, "This handler duplicates handler08_24."),
		}, Usage: modelsim.Usage{Input: 6000, Output: 200}},
		{ToolCalls: []modelsim.ToolCall{{Name: "aicr_publish_summary", Arguments: `{"title":"3 problems","markdown":"Invoice formatting is inconsistent."}`}},
			Usage: modelsim.Usage{Input: 6400, Output: 40}},
	}
}

var (
	aicrBinOnce sync.Once
	aicrBinPath string
	aicrBinErr  error
)

// aicrBinary builds the real aicr binary once: the builtin agent spawns
// `aicr mcp serve` per pass, as the daemon does, and that process start
// is part of the builtin review's cost.
func aicrBinary(b *testing.B) string {
	b.Helper()
	aicrBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "aicr-bench-")
		if err != nil {
			aicrBinErr = err
			return
		}
		aicrBinPath = filepath.Join(dir, "aicr")
		out, err := exec.Command("go", "build", "-o", aicrBinPath, "github.com/aicr-dev/aicr/cmd/aicr").CombinedOutput()
		if err != nil {
			aicrBinErr = fmt.Errorf("build aicr: %w\n%s", err, out)
		}
	})
	if aicrBinErr != nil {
		b.Fatal(aicrBinErr)
	}
	return aicrBinPath
}

// timedModel fronts sim and adds up the time its handlers take: that is
// the model server's time, measured on the server side, which the
// benchmark subtracts from the llm review's wall clock.
type timedModel struct {
	URL    string
	served atomic.Int64 // nanoseconds inside the server
}

func startTimedModel(b *testing.B, sim *modelsim.Server) *timedModel {
	b.Helper()
	target, err := url.Parse(strings.TrimSuffix(sim.URL, "/v1"))
	if err != nil {
		b.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	tm := &timedModel{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		proxy.ServeHTTP(w, r)
		tm.served.Add(int64(time.Since(start)))
	}))
	b.Cleanup(srv.Close)
	tm.URL = srv.URL + "/v1"
	return tm
}

// BenchmarkLLMOverhead alternates a builtin review and an llm review of
// the same change, each through the ladder the daemon runs (agent.New,
// agent.NewLadder: the llm one with the builtin pre-pass), and reports
// per review:
//
//	builtin-ms   the builtin review, all of it (it has no model)
//	llm-ms       the llm review's wall clock
//	model-ms     the model server's share of it, measured server side
//	aicr-ms      llm-ms - model-ms: aicr's own overhead
//	overhead-x   aicr-ms / builtin-ms
//
// Alternating keeps both halves under the same load on a shared machine.
// ns/op is the sum of both reviews and means nothing on its own.
func BenchmarkLLMOverhead(b *testing.B) {
	for _, api := range llm.APIs {
		b.Run(api, func(b *testing.B) {
			builtinRun, llmRun := benchRun(b), benchRun(b)
			bin := aicrBinary(b)

			builtinCfg := agent.Config{Kind: agent.KindBuiltin}
			ba, err := agent.New(builtinCfg, agent.Deps{Binary: bin, Limits: builtinCfg.Limits()})
			if err != nil {
				b.Fatal(err)
			}
			builtinLadder := agent.NewLadder(builtinCfg, ba, nil)

			var script []modelsim.Step
			for i := 0; i < b.N; i++ {
				script = append(script, benchScript()...)
			}
			sim := modelsim.Start(b, script...)
			model := startTimedModel(b, sim)
			llmCfg := agent.Config{Kind: agent.KindLLM, LLM: llm.Config{API: api, BaseURL: model.URL, Model: "bench-coder"}}
			la, err := agent.New(llmCfg, agent.Deps{Limits: llmCfg.Limits()})
			if err != nil {
				b.Fatal(err)
			}
			llmLadder := agent.NewLadder(llmCfg, la, nil)

			ctx := context.Background()
			tgt := agent.Target{Revision: "42"}
			var builtinTime, llmTime time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				out, err := builtinLadder.Run(ctx, builtinRun, tgt)
				builtinTime += time.Since(start)
				if err != nil || len(out.Result.Problems) != 1 {
					b.Fatalf("builtin review: %v, %d problems", err, len(out.Result.Problems))
				}
				start = time.Now()
				out, err = llmLadder.Run(ctx, llmRun, tgt)
				llmTime += time.Since(start)
				// The model's three and the pre-pass's credential.
				if err != nil || len(out.Result.Problems) != 4 || out.Stats.Turns != 2 {
					b.Fatalf("llm review: %v, %d problems, %d turns", err, len(out.Result.Problems), out.Stats.Turns)
				}
			}
			b.StopTimer()
			if err := sim.Err(); err != nil {
				b.Fatal(err)
			}
			n := float64(b.N)
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 / n }
			modelTime := time.Duration(model.served.Load())
			aicrTime := llmTime - modelTime
			b.ReportMetric(ms(builtinTime), "builtin-ms")
			b.ReportMetric(ms(llmTime), "llm-ms")
			b.ReportMetric(ms(modelTime), "model-ms")
			b.ReportMetric(ms(aicrTime), "aicr-ms")
			b.ReportMetric(float64(aicrTime)/float64(builtinTime), "overhead-x")
		})
	}
}
