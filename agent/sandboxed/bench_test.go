package sandboxed_test

// The llm-only overhead benchmark of issue 12: one llm review through the
// ladder with the pass in Podman (network "llm-only": the model is reached
// only through the run's egress proxy) against the same review with the
// llm agent in the daemon's process ([sandbox] kind = "none"), both
// against the scripted model server.
//
//	scripts/bench-sandbox.sh            # the table (with the builtin one)
//	go test -run '^$' -bench LLMPassPodman -benchtime 20x ./agent/sandboxed/

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/sandboxed"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/internal/testimage"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/sandbox"
	"github.com/aicr-dev/aicr/vcs"
)

// benchSandbox builds the static aicr binary the runner mounts and
// runs it in the image `make image` ships.
func benchSandbox(b testing.TB) (string, sandbox.Config) {
	b.Helper()
	image := testimage.Agent(b)
	conf := testimage.ContainersConf(b)
	dir := b.TempDir()
	bin := filepath.Join(dir, "aicr")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/aicr-dev/aicr/cmd/aicr")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build aicr: %v\n%s", err, out)
	}
	cfg := sandbox.Config{Kind: "podman", Network: "llm-only", Podman: sandbox.PodmanConfig{Runtime: "runc", Image: image, ContainersConf: conf}}
	cfg.ApplyDefaults(0)
	return bin, cfg
}

// benchChange is a small change of one Go file for the model to review.
func benchChange(b testing.TB) rundir.Layout {
	b.Helper()
	run := rundir.New(filepath.Join(b.TempDir(), "runs", "0"))
	if err := run.Create(); err != nil {
		b.Fatal(err)
	}
	const src = "package billing\n\nfunc Total(xs []int) int {\n\tt := 0\n\tfor _, x := range xs {\n\t\tt += x\n\t}\n\treturn t\n}\n"
	p, _ := run.SrcPath("billing/total.go")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	diff := "Index: billing/total.go\n===================================================================\n--- billing/total.go\t(nonexistent)\n+++ billing/total.go\t(revision 42)\n@@ -0,0 +1,9 @@\n"
	for _, l := range []string{"package billing", "", "func Total(xs []int) int {", "\tt := 0", "\tfor _, x := range xs {", "\t\tt += x", "\t}", "\treturn t", "}"} {
		diff += "+" + l + "\n"
	}
	if err := os.WriteFile(run.DiffPath(), []byte(diff), 0o644); err != nil {
		b.Fatal(err)
	}
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "42", Author: "erin", Description: "add Total",
		Files: []vcs.FileChange{{Path: "billing/total.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 1, End: 9}}, Hunks: []vcs.LineRange{{Start: 1, End: 9}}}}}
	if err := run.WriteChange(change); err != nil {
		b.Fatal(err)
	}
	return run
}

// BenchmarkLLMPassPodman alternates the two reviews so both see the same
// load on a shared machine, and reports medians per review:
//
//	podman-ms    the review with its pass in Podman, network "llm-only"
//	native-ms    the review with the llm agent in process (kind "none")
//	overhead-ms  podman-ms - native-ms
//	ratio        podman-ms / native-ms
func BenchmarkLLMPassPodman(b *testing.B) {
	bin, cfg := benchSandbox(b)
	const key = "sk-bench-sandbox-key-7a31"
	b.Setenv("AICR_BENCH_LLM_KEY", key)
	lgtm := modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_publish_summary", Arguments: `{"title":"ok","markdown":"Total sums the slice; nothing to fix."}`}},
		Usage: modelsim.Usage{Input: 1500, Output: 30}}
	script := make([]modelsim.Step, 2*b.N)
	for i := range script {
		script[i] = lgtm
	}
	sim := modelsim.Start(b, script...)
	sim.RequireKey(key)
	llmCfg := agent.Config{Kind: agent.KindLLM, LLM: llm.Config{API: llm.APIOpenAIChat, BaseURL: sim.URL, Model: "bench-coder", APIKeyEnv: "AICR_BENCH_LLM_KEY"}}

	native, err := agent.New(llmCfg, agent.Deps{Limits: llmCfg.Limits()})
	if err != nil {
		b.Fatal(err)
	}
	runner, err := sandbox.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	boxed, err := sandboxed.New(sandboxed.Options{Config: llmCfg, Runner: runner, Network: "llm-only", Binary: bin})
	if err != nil {
		b.Fatal(err)
	}
	nativeLadder, boxedLadder := agent.NewLadder(llmCfg, native, nil), agent.NewLadder(llmCfg, boxed, nil)
	nativeRun, boxedRun := benchChange(b), benchChange(b)
	ctx := context.Background()
	tgt := agent.Target{Revision: "42"}
	review := func(l *agent.Ladder, run rundir.Layout, what string) time.Duration {
		start := time.Now()
		out, err := l.Run(ctx, run, tgt)
		d := time.Since(start)
		if err != nil || len(out.Result.Summaries) != 1 {
			b.Fatalf("%s review: %v, result %+v", what, err, out.Result)
		}
		return d
	}
	var podmanTimes, nativeTimes []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		podmanTimes = append(podmanTimes, review(boxedLadder, boxedRun, "podman"))
		nativeTimes = append(nativeTimes, review(nativeLadder, nativeRun, "native"))
	}
	b.StopTimer()
	if err := sim.Err(); err != nil {
		b.Fatal(err)
	}
	mp, mn := medianOf(podmanTimes), medianOf(nativeTimes)
	b.ReportMetric(float64(mp.Microseconds())/1000, "podman-ms")
	b.ReportMetric(float64(mn.Microseconds())/1000, "native-ms")
	b.ReportMetric(float64((mp-mn).Microseconds())/1000, "overhead-ms")
	b.ReportMetric(float64(mp)/float64(mn), "ratio")
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
