package llm_test

// What a review costs in prompt tokens, measured through the real llm
// agent and the providers' SDKs against modelsim's simulated prompt
// caches (issue 25's figure). modelsim counts tokens as bytes/4 on every
// API, so the ratios are exact and the same on every machine; make
// bench-cost prints them as a table (BenchmarkCost).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

const (
	costFiles    = 10
	costLines    = 22 // about 7k prompt tokens with the instructions and tools
	costProblems = 10
)

// costRun lays out a change of ten new files, one problem planted in
// each (the reviewer reports line 10 of every file).
func costRun(t testing.TB) rundir.Layout {
	t.Helper()
	run := rundir.New(t.TempDir())
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "42", Author: "erin",
		Description: "add the billing service: handlers, store, config"}
	var diff strings.Builder
	for f := 0; f < costFiles; f++ {
		path := fmt.Sprintf("svc/billing/part%02d.go", f)
		var src strings.Builder
		src.WriteString("package billing\n\nimport \"fmt\"\n\n")
		for line := 5; line <= costLines; line++ {
			fmt.Fprintf(&src, "func handler%02d_%02d(id int) string { return fmt.Sprintf(\"invoice-%%d-%d\", id) }\n", f, line, line)
		}
		content := src.String()
		name, _ := run.SrcPath(path)
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		change.Files = append(change.Files, vcs.FileChange{Path: path, Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 1, End: costLines}}, Hunks: []vcs.LineRange{{Start: 1, End: costLines}}})
		fmt.Fprintf(&diff, "Index: %s\n===================================================================\n--- %s\t(nonexistent)\n+++ %s\t(revision 42)\n@@ -0,0 +1,%d @@\n",
			path, path, path, costLines)
		for _, l := range strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n") {
			diff.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
		}
	}
	if err := run.WriteChange(change); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run.DiffPath(), []byte(diff.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return run
}

func costProblemList() []modelsim.Problem {
	var ps []modelsim.Problem
	for f := 0; f < costProblems; f++ {
		ps = append(ps, modelsim.Problem{File: fmt.Sprintf("svc/billing/part%02d.go", f), Line: 10,
			Message: fmt.Sprintf("The invoice number of part %d ignores the id's sign.", f)})
	}
	return ps
}

// costFigure is one review's prompt bill.
type costFigure struct {
	requests int
	// prompt is the first request's whole prompt: the review's own size.
	prompt                        int
	sent, uncached, reads, writes int
	// billed is the input billed at the provider's rates, in
	// full-price input tokens.
	billed float64
	stats  pass.Stats
	reqs   []modelsim.Request
}

func (c costFigure) ratio() float64 { return c.billed / float64(c.prompt) }

// billed weighs a review's input as the provider bills it: Anthropic
// cache reads at 0.1 and writes at 1.25 of the input price, OpenAI's
// cached input at 0.5 (no write charge).
func billed(api string, uncached, reads, writes int) float64 {
	if api == llm.APIAnthropic {
		return float64(uncached) + 0.1*float64(reads) + 1.25*float64(writes)
	}
	return float64(uncached) + 0.5*float64(reads) + 0.5*float64(writes)
}

// measureCost runs one review pass of the llm agent against a modelsim
// answering as respond does, caches simulated.
func measureCost(t testing.TB, api string, promptCache bool, respond func(modelsim.Request) modelsim.Step) costFigure {
	t.Helper()
	sim := modelsim.StartFunc(t, respond)
	sim.SimulateCaches()
	cfg := llm.Config{API: api, BaseURL: sim.URL, Model: "bench-coder", PromptCache: &promptCache}
	a, err := llm.New(llm.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	run := costRun(t)
	stats, err := a.Review(context.Background(), run, firstPass)
	if err != nil {
		t.Fatalf("%s: %v", api, err)
	}
	if err := sim.Err(); err != nil {
		t.Fatal(err)
	}
	if st := loadState(t, run); len(st.Problems) != costProblems || len(st.Summaries) != 1 {
		t.Fatalf("%s: %d problems, %d summaries recorded (refused %+v)", api, len(st.Problems), len(st.Summaries), st.Rejected)
	}
	c := costFigure{requests: len(sim.Requests()), stats: stats, reqs: sim.Requests()}
	for i, u := range stats.TurnUsage {
		p := u.Input + u.CacheRead + u.CacheWrite
		if i == 0 {
			c.prompt = p
		}
		c.sent += p
		c.uncached += u.Input
		c.reads += u.CacheRead
		c.writes += u.CacheWrite
	}
	c.billed = billed(api, c.uncached, c.reads, c.writes)
	return c
}

// The figure of issue 25: a review that reports ten problems one per
// answer (eleven requests of a ~7k-token prompt) is billed at most 2.8
// times the prompt on Anthropic with breakpoints (12.3 without) and at
// most 6.8 on OpenAI's APIs; a model that makes every call at once takes
// one request.
func TestCostFigures(t *testing.T) {
	bounds := map[string]float64{llm.APIAnthropic: 2.8, llm.APIOpenAIChat: 6.8, llm.APIOpenAIResponses: 6.8}
	for _, api := range llm.APIs {
		after := measureCost(t, api, true, modelsim.OneCallPerAnswer(costProblemList()))
		if after.requests != costProblems+1 || after.stats.Turns != costProblems+1 {
			t.Errorf("%s: %d requests, %d turns, want %d", api, after.requests, after.stats.Turns, costProblems+1)
		}
		if after.prompt < 6000 || after.prompt > 8000 {
			t.Errorf("%s: the prompt is %d tokens, want about 7k", api, after.prompt)
		}
		if r := after.ratio(); r > bounds[api] {
			t.Errorf("%s: billed %.2f× the prompt (uncached %d, reads %d, writes %d of %d), want <= %.1f",
				api, r, after.uncached, after.reads, after.writes, after.prompt, bounds[api])
		}
		// The split lands in the pass's stats whole.
		if after.stats.InputTokens != after.uncached || after.stats.CacheReadTokens != after.reads ||
			after.stats.CacheWriteTokens != after.writes || after.stats.PromptTokens() != after.sent {
			t.Errorf("%s: stats %+v do not add up to the turns' usage", api, after.stats)
		}
		before := measureCost(t, api, false, modelsim.OneCallPerAnswer(costProblemList()))
		for i, r := range after.reqs {
			if r.ParallelToolCalls() == nil && api != llm.APIAnthropic {
				t.Errorf("%s request %d does not ask for parallel tool calls", api, i+1)
			}
			// system, the change, the moving one; never more than four.
			if n := r.CacheBreakpoints(); api == llm.APIAnthropic && n != 3 {
				t.Errorf("anthropic request %d carries %d breakpoints, want 3", i+1, n)
			}
			if strings.Contains(string(r.Raw), "disable_parallel_tool_use") {
				t.Errorf("%s request %d turns parallel tool use off", api, i+1)
			}
		}
		for i, r := range before.reqs {
			if strings.Contains(string(r.Raw), "cache_control") {
				t.Errorf("%s with prompt_cache = false: request %d sends cache_control", api, i+1)
			}
		}
		if api == llm.APIAnthropic {
			if before.reads+before.writes != 0 || before.ratio() < 11 {
				t.Errorf("anthropic without prompt_cache: %.2f× (reads %d, writes %d), want the whole prompt every time",
					before.ratio(), before.reads, before.writes)
			}
			if after.reads == 0 || after.writes == 0 {
				t.Errorf("anthropic: reads %d, writes %d; want both", after.reads, after.writes)
			}
		}
		once := measureCost(t, api, true, modelsim.AllAtOnce(costProblemList()))
		if once.requests != 1 {
			t.Errorf("%s: the all-at-once model took %d requests, want 1", api, once.requests)
		}
		t.Logf("%-17s prompt %d: one call per answer %.2f× (before %.2f×), all at once %d request(s)",
			api, after.prompt, after.ratio(), before.ratio(), once.requests)
	}
}

// A follow-up pass shares pass 1's system prompt and change byte for
// byte, so its first request reads them from the cache on every API.
func TestFollowUpReadsTheChangeFromTheCache(t *testing.T) {
	for _, c := range []struct {
		api    string
		stream bool
	}{{llm.APIOpenAIChat, false}, {llm.APIOpenAIChat, true}, {llm.APIOpenAIResponses, false}, {llm.APIOpenAIResponses, true},
		{llm.APIAnthropic, false}, {llm.APIAnthropic, true}} {
		api := c.api
		sim := modelsim.StartFunc(t, modelsim.AllAtOnce(costProblemList()[:2]))
		sim.SimulateCaches()
		a, err := llm.New(llm.Options{Config: llm.Config{API: api, BaseURL: sim.URL, Model: "bench-coder", Stream: c.stream}})
		if err != nil {
			t.Fatal(err)
		}
		run := costRun(t)
		first, err := a.Review(context.Background(), run, firstPass)
		if err != nil {
			t.Fatal(err)
		}
		follow := pass.Pass{Number: 2, Kind: pass.FollowUp, Context: []pass.Answer{{Request: "fetch_more_context svc/billing/part01.go",
			Text: strings.Repeat("10: func handler01_10(id int) string\n", 40)}}}
		second, err := a.Review(context.Background(), run, follow)
		if err != nil {
			t.Fatal(err)
		}
		if err := sim.Err(); err != nil {
			t.Fatal(err)
		}
		p1, u2 := first.TurnUsage[0], second.TurnUsage[0]
		whole1 := p1.Input + p1.CacheRead + p1.CacheWrite
		// Everything of pass 1's request but its last lines ("# Review
		// pass 1 ...", under 128 tokens) is pass 2's prefix too.
		if u2.CacheRead < whole1-128-16 {
			t.Errorf("%s (stream %v): the follow-up read %d tokens from the cache, want pass 1's %d but its own section", api, c.stream, u2.CacheRead, whole1)
		}
	}
}

// A server that refuses parallel_tool_calls (400 naming it) gets the
// request again without the field, and the agent never sends it again.
func TestParallelToolCallsFallBack(t *testing.T) {
	for _, api := range []string{llm.APIOpenAIChat, llm.APIOpenAIResponses} {
		sim := modelsim.StartFunc(t, modelsim.OneCallPerAnswer(costProblemList()[:1]))
		sim.RefuseParallelToolCalls()
		a, err := llm.New(llm.Options{Config: llm.Config{API: api, BaseURL: sim.URL, Model: "old-gateway"}})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			run := costRun(t)
			stats, err := a.Review(context.Background(), run, firstPass)
			if err != nil {
				t.Fatalf("%s pass %d: %v", api, i+1, err)
			}
			if st := loadState(t, run); len(st.Problems) != 1 || len(st.Summaries) != 1 || stats.Turns != 2 {
				t.Errorf("%s pass %d: %d problems, %d summaries, %d turns", api, i+1, len(st.Problems), len(st.Summaries), stats.Turns)
			}
		}
		reqs := sim.Requests()
		// The refused one, then four without the field (two passes of two turns).
		if len(reqs) != 5 || reqs[0].ParallelToolCalls() == nil {
			t.Fatalf("%s: %d requests, the first asking for parallel calls: %v", api, len(reqs), reqs[0].ParallelToolCalls() != nil)
		}
		for i, r := range reqs[1:] {
			if r.ParallelToolCalls() != nil {
				t.Errorf("%s: request %d names parallel_tool_calls after the refusal", api, i+2)
			}
		}
		if err := sim.Err(); err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkCost reports the figure per API and mode (scripts/bench-cost.sh
// prints the table): before = prompt_cache off, after = on, both with the
// one-call-per-answer model; once = the all-at-once model. The counts are
// modelsim's deterministic ones, so one iteration is the figure.
func BenchmarkCost(b *testing.B) {
	modes := []struct {
		name    string
		cache   bool
		respond func([]modelsim.Problem) func(modelsim.Request) modelsim.Step
	}{
		{"before", false, modelsim.OneCallPerAnswer},
		{"after", true, modelsim.OneCallPerAnswer},
		{"once", true, modelsim.AllAtOnce},
	}
	for _, api := range llm.APIs {
		for _, m := range modes {
			b.Run(api+"/"+m.name, func(b *testing.B) {
				var c costFigure
				for i := 0; i < b.N; i++ {
					c = measureCost(b, api, m.cache, m.respond(costProblemList()))
				}
				b.ReportMetric(float64(c.requests), "requests")
				b.ReportMetric(float64(c.prompt), "prompt-tok")
				b.ReportMetric(float64(c.sent), "sent-tok")
				b.ReportMetric(float64(c.uncached), "uncached-tok")
				b.ReportMetric(float64(c.reads), "read-tok")
				b.ReportMetric(float64(c.writes), "write-tok")
				b.ReportMetric(c.ratio(), "billed-x")
			})
		}
	}
}

// vLLM reports its prefix-cache hits only when started with
// --enable-prompt-tokens-details; without it the whole prompt counts as
// uncached input, and nothing is lost or invented.
func TestVLLMCacheDetails(t *testing.T) {
	for _, details := range []bool{false, true} {
		sim := modelsim.StartFunc(t, modelsim.OneCallPerAnswer(costProblemList()[:1]))
		sim.SimulateCaches()
		sim.VLLM(modelsim.VLLMOptions{PromptTokensDetails: details})
		a, err := llm.New(llm.Options{Config: llm.Config{API: llm.APIOpenAIChat, BaseURL: sim.URL, Model: "qwen"}})
		if err != nil {
			t.Fatal(err)
		}
		stats, err := a.Review(context.Background(), costRun(t), firstPass)
		if err != nil {
			t.Fatal(err)
		}
		second := stats.TurnUsage[1]
		if details && (second.CacheRead == 0 || second.Input >= second.CacheRead) {
			t.Errorf("with details: %+v, want the first turn's prompt read from the cache", second)
		}
		if !details && (second.CacheRead != 0 || second.Input < stats.TurnUsage[0].Input) {
			t.Errorf("without details: %+v, want the whole prompt as input", second)
		}
	}
}
