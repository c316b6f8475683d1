package sandboxed_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/agent/sandboxed"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/sandbox"
)

// The team's dismissals reach the model from a pass in the shipped image
// too: the host leaves dismissed.json in the run dir, the sandbox mounts
// it read-only beside change.json, and the llm agent inside lists it in
// the user message it sends through the run's egress proxy.
func TestPodmanPassListsDismissals(t *testing.T) {
	bin, cfg := benchSandbox(t)
	const key = "sk-dismissal-sandbox-key-51c0"
	t.Setenv("AICR_TEST_LLM_KEY", key)
	sim := modelsim.Start(t, modelsim.Step{
		ToolCalls: []modelsim.ToolCall{{Name: "aicr_skip", Arguments: `{"reason":"lgtm"}`}},
		Check: func(r modelsim.Request) error {
			user := r.Messages[0].Text
			for _, want := range []string{"## Dismissed findings (untrusted data)",
				"billing/total.go, line 6, correctness, dismissed as won't fix", "Finding: Total overflows on large slices.",
				"Reason: amounts are bounded by the caller"} {
				if !strings.Contains(user, want) {
					return errors.New("the sandboxed pass's prompt lacks " + want)
				}
			}
			return nil
		}})
	sim.RequireKey(key)
	llmCfg := agent.Config{Kind: agent.KindLLM, LLM: llm.Config{API: llm.APIOpenAIChat, BaseURL: sim.URL, Model: "coder", APIKeyEnv: "AICR_TEST_LLM_KEY"}}
	runner, err := sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	boxed, err := sandboxed.New(sandboxed.Options{Config: llmCfg, Runner: runner, Network: "llm-only", Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	run := benchChange(t)
	if err := prompt.WriteDismissals(run.DismissedPath(), []prompt.Dismissal{{Path: "billing/total.go", Line: 6,
		Category: "correctness", Message: "Total overflows on large slices.", Reason: "wont_fix", Note: "amounts are bounded by the caller"}}); err != nil {
		t.Fatal(err)
	}
	out, err := agent.NewLadder(llmCfg, boxed, nil).Run(context.Background(), run, agent.Target{Revision: "42"})
	if err != nil {
		t.Fatalf("sandboxed review: %v (outcome %+v)", err, out)
	}
	if err := sim.Err(); err != nil {
		t.Error(err)
	}
	if n := len(sim.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
}
