package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// kind = "llm" validates its [agent.llm] table, every error naming its
// key, and New builds the agent without contacting anything.
func TestLLMKind(t *testing.T) {
	err := agent.Config{Kind: "llm", LLM: llm.Config{API: "openai", BaseURL: "ftp://x", MaxTurns: -1}}.Validate()
	if err == nil {
		t.Fatal("an empty [agent.llm] must be refused")
	}
	for _, want := range []string{
		`agent.llm.api: unknown API "openai" (one of: openai-chat, openai-responses, anthropic, gemini)`,
		`agent.llm.base_url: must be an http:// or https:// URL, got "ftp://x"`,
		"agent.llm.model: is required",
		"agent.llm.max_turns: must not be negative, got -1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	good := agent.Config{Kind: "llm", Timeout: time.Minute, LLM: llm.Config{API: llm.APIAnthropic, Model: "claude-sonnet-4-5", APIKeyEnv: "ANTHROPIC_API_KEY"}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(good, agent.Deps{})
	if err != nil || a == nil {
		t.Fatalf("New: %v", err)
	}
}

// The [agent.llm] prices price the review; builtin has none.
func TestLLMPrices(t *testing.T) {
	c := agent.Config{Kind: "llm", LLM: llm.Config{PricePerMTokIn: 3, PricePerMTokOut: 15}}
	cost, ok := c.Prices().Cost(pass.Stats{InputTokens: 2_000_000, OutputTokens: 100_000})
	if !ok || cost != 7.5 {
		t.Errorf("cost %v %v, want 7.5", cost, ok)
	}
	c.Kind = "builtin"
	if _, ok := c.Prices().Cost(pass.Stats{InputTokens: 1}); ok {
		t.Error("builtin has no price")
	}
}

// [agent.llm] timeout bounds the llm agent's pass in place of [agent]
// timeout, and the error names the key that set it: a model server that
// never answers does not hold a worker for the longer limit.
func TestLLMTimeoutBoundsThePass(t *testing.T) {
	sim := modelsim.Start(t, modelsim.Step{Hang: true})
	run := rundir.New(t.TempDir())
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "1", Files: []vcs.FileChange{
		{Path: "a.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, Added: []vcs.LineRange{{Start: 1, End: 1}}, Hunks: []vcs.LineRange{{Start: 1, End: 1}}}}}
	if err := run.WriteChange(change); err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{Kind: "llm", Timeout: time.Hour, LLM: llm.Config{API: llm.APIOpenAIChat, BaseURL: sim.URL, Model: "m", Timeout: 300 * time.Millisecond}}
	a, err := agent.New(cfg, agent.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Review(context.Background(), run, pass.Pass{Number: 1, Kind: pass.Review})
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the pass outlived [agent.llm] timeout by far")
	}
	if !errors.Is(err, agent.ErrTimeout) || !strings.Contains(err.Error(), "[agent.llm] timeout") || !strings.Contains(err.Error(), "300ms") {
		t.Errorf("err = %v", err)
	}
}
