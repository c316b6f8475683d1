package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/internal/modelsim"
)

// Prompt caching through the daemon, on Anthropic's API: with the
// default config every request carries three cache breakpoints and the
// follow-up pass reads pass 1's prompt from the (simulated) cache, which
// the pass's stats carry (the daemon logs them); with prompt_cache =
// false no request names cache_control.
func TestLLMPromptCacheThroughTheDaemon(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("prompt_cache=%v", on), func(t *testing.T) {
			e := newEnv(t, 1)
			sim := modelsim.StartFunc(t, func(r modelsim.Request) modelsim.Step {
				summary := modelsim.ToolCall{Name: r.Offered("publish_summary"), Arguments: `{"markdown":"Name() ignores the configuration."}`}
				if strings.Contains(r.Messages[0].Text, "follow-up") {
					return modelsim.Step{ToolCalls: []modelsim.ToolCall{summary}}
				}
				return modelsim.Step{ToolCalls: []modelsim.ToolCall{
					{Name: r.Offered("fetch_more_context"), Arguments: `{"path":"src/util.go","reason":"what Lookup does with the name"}`},
					{Name: r.Offered("report_problem"), Arguments: fmt.Sprintf(`{"file":"src/config.go","line":7,"severity":"medium","category":%q,"message":%q}`, modelCategory, modelMessage)},
					summary,
				}}
			})
			sim.SimulateCaches()
			sim.RequireKey(e2eModelKey)
			var extra []string
			if !on {
				extra = append(extra, "prompt_cache = false")
			}
			useLLM(t, e, modelsim.APIAnthropic, sim, extra...)
			e.startDaemon()
			e.commit("wire the production account", map[string]string{"src/config.go": plantedFile, "src/util.go": utilFile})
			runs := e.waitFinished(e.store(), 1, 120*time.Second)
			log, _ := os.ReadFile(e.daemonLog)
			if runs[0].Status != audit.RunSucceeded {
				t.Fatalf("run: %+v\n%s", runs[0], log)
			}
			if err := sim.Err(); err != nil {
				t.Errorf("model server: %v", err)
			}
			reqs := sim.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2 (the review's one answer, the follow-up's)", len(reqs))
			}
			for i, r := range reqs {
				want := 3
				if !on {
					want = 0
				}
				if n := r.CacheBreakpoints(); n != want {
					t.Errorf("request %d carries %d cache breakpoints, want %d", i+1, n, want)
				}
			}
			// The passes' log lines (JSON): what each read from the cache.
			var reads []int
			for _, line := range strings.Split(string(log), "\n") {
				var rec struct {
					Msg       string `json:"msg"`
					CacheRead *int   `json:"cache_read_tokens"`
				}
				if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "llm pass done" && rec.CacheRead != nil {
					reads = append(reads, *rec.CacheRead)
				}
			}
			if len(reads) != 2 {
				t.Fatalf("%d \"llm pass done\" lines with cache_read_tokens, want 2:\n%s", len(reads), log)
			}
			if on && reads[1] < 1024 || !on && reads[1] != 0 {
				t.Errorf("the follow-up pass read %d tokens from the cache", reads[1])
			}
			e.stopDaemon()
			assertNoKey(t, e.dir)
		})
	}
}
