package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/internal/modelsim"
)

// Through the ladder, a follow-up pass reads pass 1's system prompt and
// change from the provider's cache (modelsim's simulated one), and the
// review's stats carry the split per turn.
func TestLadderFollowUpReadsTheCache(t *testing.T) {
	for _, api := range llm.APIs {
		sim := modelsim.StartFunc(t, func(r modelsim.Request) modelsim.Step {
			summary := simCall(r.Offered("publish_summary"), `{"markdown":"Add subtracts."}`)
			if strings.Contains(r.Messages[0].Text, "follow-up") {
				return modelsim.Step{ToolCalls: []modelsim.ToolCall{summary}}
			}
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{
				simCall(r.Offered("report_problem"), reportLine4),
				simCall(r.Offered("fetch_more_context"), `{"path":"svc/sub.go","reason":"the caller's contract"}`),
				summary,
			}}
		})
		sim.SimulateCaches()
		a, err := agent.New(agent.Config{Kind: "llm", LLM: llm.Config{API: api, BaseURL: sim.URL, Model: "scripted"}}, agent.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		repo := &fakeRepo{files: map[string]string{"svc/sub.go": "package svc\n\nfunc Sub(a, b int) int { return a - b }\n"}}
		run := ladderRun(t, 800)
		out, err := (&agent.Ladder{Agent: a}).Run(context.Background(), run, agent.Target{Revision: "9", Replayer: repo})
		if err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		if err := sim.Err(); err != nil {
			t.Fatal(err)
		}
		reqs := sim.Requests()
		if len(reqs) != 2 || !strings.Contains(reqs[1].Messages[0].Text, "follow-up") {
			t.Fatalf("%s: %d requests, want pass 1 and its follow-up", api, len(reqs))
		}
		st := out.Stats
		if len(st.TurnUsage) != 2 || st.Turns != 2 {
			t.Fatalf("%s: %d turns, turn usage %+v", api, st.Turns, st.TurnUsage)
		}
		p1, p2 := st.TurnUsage[0], st.TurnUsage[1]
		whole1 := p1.Input + p1.CacheRead + p1.CacheWrite
		if p2.CacheRead < whole1-128-16 || st.CacheReadTokens != p2.CacheRead {
			t.Errorf("%s: the follow-up read %d of pass 1's %d prompt tokens from the cache (stats %+v)", api, p2.CacheRead, whole1, st)
		}
		if st.PromptTokens() != whole1+p2.Input+p2.CacheRead+p2.CacheWrite {
			t.Errorf("%s: stats %+v do not add up to the turns", api, st)
		}
	}
}
