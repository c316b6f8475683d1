package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

func cliRun(t *testing.T) rundir.Layout {
	t.Helper()
	run := rundir.New(t.TempDir())
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "1", Files: []vcs.FileChange{
		{Path: "a.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, Added: []vcs.LineRange{{Start: 1, End: 1}}, Hunks: []vcs.LineRange{{Start: 1, End: 1}}}}}
	if err := run.WriteChange(change); err != nil {
		t.Fatal(err)
	}
	return run
}

// An agent CLI kind is validated against the API its CLI speaks, and
// fallback_llm cannot fall back to an API the llm agent lacks.
func TestCLIKindValidation(t *testing.T) {
	err := agent.Config{Kind: "claude-code", LLM: llm.Config{API: llm.APIOpenAIChat, Model: "m"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "agent.llm.api: claude-code speaks anthropic") {
		t.Errorf("claude-code over Chat Completions: %v", err)
	}
	err = agent.Config{Kind: "gemini-cli", CLI: cli.Config{FallbackLLM: true}, LLM: llm.Config{API: llm.APIGemini, Model: "m"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "agent.cli.fallback_llm") {
		t.Errorf("gemini-cli with an llm fallback: %v", err)
	}
	err = agent.Config{Kind: "codex", CLI: cli.Config{Version: "0.1.0"}, LLM: llm.Config{API: llm.APIOpenAIResponses, Model: "m"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "agent.cli.version") {
		t.Errorf("codex older than the proven minimum: %v", err)
	}
	err = agent.Config{Kind: "codex", LLM: llm.Config{API: llm.APIOpenAIResponses, Model: "m", HeadersFile: "/etc/aicr/h"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "agent.llm.headers_file: not passed to agent CLIs") {
		t.Errorf("headers_file with an agent CLI: %v", err)
	}
	if err := (agent.Config{Kind: "qwen-code", LLM: llm.Config{API: llm.APIOpenAIChat, Model: "m"}}).Validate(); err != nil {
		t.Errorf("a valid qwen-code config: %v", err)
	}
}

// With [agent.cli] fallback_llm, a pass the CLI cannot run (here: not
// installed) is run by the llm agent over the same [agent.llm]; without
// it, the pass fails naming the install command.
func TestCLIFallsBackToTheLLMAgent(t *testing.T) {
	sim := modelsim.Start(t,
		modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_report_problem",
			Arguments: `{"file":"a.go","line":1,"severity":"low","category":"style","message":"fallback found it"}`}}},
		modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_publish_summary", Arguments: `{"markdown":"one"}`}}})
	cfg := agent.Config{Kind: "claude-code", LLM: llm.Config{API: llm.APIAnthropic, BaseURL: sim.URL, Model: "m"}}
	deps := agent.Deps{Binary: "/nonexistent/aicr", CLIInstallDir: t.TempDir()}

	if _, err := agent.New(cfg, agent.Deps{CLIInstallDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "aicr_binary") {
		t.Errorf("an agent CLI without an aicr binary for its MCP server: %v", err)
	}
	a, err := agent.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Review(context.Background(), cliRun(t), pass.Pass{Number: 1, Kind: pass.Review})
	if !errors.Is(err, cli.ErrNotInstalled) || !strings.Contains(err.Error(), "aicr agent install claude-code") {
		t.Fatalf("without the fallback: %v", err)
	}

	cfg.CLI.FallbackLLM = true
	a, err = agent.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	run := cliRun(t)
	stats, err := a.Review(context.Background(), run, pass.Pass{Number: 1, Kind: pass.Review})
	if err != nil {
		t.Fatalf("with the fallback: %v", err)
	}
	st, err := review.LoadState(run.StatePath())
	if err != nil || len(st.Problems) != 1 || st.Problems[0].Message != "fallback found it" {
		t.Fatalf("state after the fallback: %+v %v", st, err)
	}
	if stats.Turns != 2 {
		t.Errorf("stats = %+v, want the fallback's 2 turns", stats)
	}
	if err := sim.Err(); err != nil {
		t.Error(err)
	}
}
