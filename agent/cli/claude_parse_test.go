package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
)

// The event streams under testdata/claude-code were written by Claude
// Code 2.1.328 in the runs of claude_test.go (paths scrubbed).
func TestClaudeCodeParse(t *testing.T) {
	const report, summary = "mcp__aicr__aicr_report_problem", "mcp__aicr__aicr_publish_summary"
	cases := []struct {
		file  string
		check func(t *testing.T, ev cli.Events)
	}{
		{"success.jsonl", func(t *testing.T, ev cli.Events) {
			if ev.Model != "scripted-model" || ev.Turns != 3 || ev.InputTokens != 4100 || ev.OutputTokens != 130 {
				t.Errorf("model %q turns %d tokens %d/%d", ev.Model, ev.Turns, ev.InputTokens, ev.OutputTokens)
			}
			if len(ev.ToolCalls) != 2 || ev.ToolCalls[0].Name != report || ev.ToolCalls[1].Name != summary ||
				ev.ToolCalls[0].Failed || ev.ToolCalls[1].Failed {
				t.Errorf("tool calls %+v", ev.ToolCalls)
			}
			if ev.FinalText != "Review done: one problem reported." || ev.Failed || ev.MCPFailure != "" || ev.APIError != "" {
				t.Errorf("events %+v", ev)
			}
			// The model is unknown to Claude Code: its cost is a guess.
			if ev.CostUSD != 0 {
				t.Errorf("cost %v from a default price", ev.CostUSD)
			}
		}},
		{"refused-call.jsonl", func(t *testing.T, ev cli.Events) {
			if len(ev.ToolCalls) != 2 || !ev.ToolCalls[0].Failed || !strings.Contains(ev.ToolCalls[0].Error, "LINE_NOT_IN_DIFF") ||
				ev.ToolCalls[1].Failed || ev.Failed {
				t.Errorf("tool calls %+v failed %v", ev.ToolCalls, ev.Failed)
			}
		}},
		{"builtin-tool-calls.jsonl", func(t *testing.T, ev cli.Events) {
			// Bash and Write are not aicr calls; their refusal is no
			// permission denial either: the tools do not exist.
			if len(ev.ToolCalls) != 2 || ev.ToolCalls[0].Name != report || len(ev.PermissionDenials) != 0 {
				t.Errorf("tool calls %+v denials %v", ev.ToolCalls, ev.PermissionDenials)
			}
		}},
		{"permission-denied.jsonl", func(t *testing.T, ev cli.Events) {
			// Run without --allowedTools: dontAsk mode refuses the calls,
			// and the result still reads success.
			if strings.Join(ev.PermissionDenials, ",") != report+","+summary || ev.Failed || len(ev.ToolCalls) != 2 || !ev.ToolCalls[0].Failed {
				t.Errorf("denials %v failed %v calls %+v", ev.PermissionDenials, ev.Failed, ev.ToolCalls)
			}
		}},
		{"mcp-missing.jsonl", func(t *testing.T, ev cli.Events) {
			if !strings.Contains(ev.MCPFailure, "failed") || ev.Failed || len(ev.ToolCalls) != 0 {
				t.Errorf("events %+v", ev)
			}
		}},
		{"unauthorized.jsonl", func(t *testing.T, ev cli.Events) {
			if ev.APIStatus != 401 || !ev.Failed || ev.APIError == "" || ev.ContextOverflow {
				t.Errorf("events %+v", ev)
			}
		}},
		{"max-turns.jsonl", func(t *testing.T, ev cli.Events) {
			// The model kept calling a tool that does not exist until
			// --max-turns stopped it: a failure, but not the API's.
			if !ev.Failed || ev.APIError != "" || ev.APIStatus != 0 || ev.ContextOverflow || ev.Turns != 9 || len(ev.ToolCalls) != 0 ||
				!strings.Contains(ev.Reason, "maximum number of turns") {
				t.Errorf("events %+v", ev)
			}
		}},
		{"context-overflow.jsonl", func(t *testing.T, ev cli.Events) {
			if !ev.ContextOverflow || !ev.Failed || ev.APIStatus != 400 || !strings.Contains(ev.APIError, "Prompt is too long") {
				t.Errorf("events %+v", ev)
			}
		}},
	}
	a, _ := cli.Lookup(cli.KindClaudeCode)
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "claude-code", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ev, err := a.Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Lines == 0 || ev.Malformed != 0 {
				t.Errorf("lines %d malformed %d", ev.Lines, ev.Malformed)
			}
			c.check(t, ev)
		})
	}
}

// A line that is not JSON (a crash message on stdout) is counted, not fatal.
func TestClaudeCodeParseMalformed(t *testing.T) {
	a, _ := cli.Lookup(cli.KindClaudeCode)
	ev, err := a.Parse(strings.NewReader("Error: something broke\n{\"type\":\"result\",\"subtype\":\"error_during_execution\",\"is_error\":true,\"num_turns\":0}\n"))
	if err != nil || ev.Malformed != 1 || ev.Lines != 2 || !ev.Failed {
		t.Fatalf("events %+v err %v", ev, err)
	}
}

func TestClaudeCodeConfigure(t *testing.T) {
	a, _ := cli.Lookup(cli.KindClaudeCode)
	home := bundle.HomeEnvFor("/work/agent")
	inv, err := a.Configure(cli.Setup{
		LLM: llm.Config{API: llm.APIAnthropic, BaseURL: "http://gpu-box:8000/v1", Model: "claude-opus-4-8", MaxTurns: 12,
			MaxOutputTokens: 8000, ContextWindow: 150000},
		KeyEnv:     "AICR_LLM_KEY",
		MCPCommand: []string{"/opt/aicr/bin/aicr", "mcp", "serve", "--state", "/work/agent/state.json", "--tool-names", "dotted"},
		AgentDir:   "/work/agent", Home: home, System: "aicr system prompt", User: "review this",
	})
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(inv.Args, " ")
	for _, want := range []string{"-p", "--output-format stream-json", "--verbose", "--model claude-opus-4-8", "--strict-mcp-config",
		"--no-session-persistence", "--max-turns 12", "--permission-mode dontAsk",
		"--mcp-config /work/agent/home/aicr/claude-mcp.json", "--system-prompt-file /work/agent/home/aicr/claude-system-prompt.md"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	// No built-in tool: --tools takes the empty list.
	if i := slices.Index(inv.Args, "--tools"); i < 0 || inv.Args[i+1] != "" {
		t.Errorf("args %q: want --tools \"\"", inv.Args)
	}
	i := slices.Index(inv.Args, "--allowedTools")
	if i < 0 || inv.Args[i+1] != strings.Join(claudeSeen(), ",") {
		t.Errorf("args %q: want --allowedTools with exactly the aicr tools", inv.Args)
	}
	env := strings.Join(inv.Env, "\n") + "\n"
	for _, want := range []string{"ANTHROPIC_BASE_URL=http://gpu-box:8000\n", "ENABLE_TOOL_SEARCH=false\n",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\n", "DISABLE_TELEMETRY=1\n", "DISABLE_AUTOUPDATER=1\n", "DISABLE_ERROR_REPORTING=1\n",
		"CLAUDE_CODE_MAX_OUTPUT_TOKENS=8000\n", "CLAUDE_CODE_AUTO_COMPACT_WINDOW=150000\n", "CLAUDE_CODE_TMPDIR=/work/agent/home/tmp\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if !slices.Equal(inv.KeyAs, []string{"ANTHROPIC_API_KEY"}) || strings.Contains(env, "API_KEY=") {
		t.Errorf("key as %v; env %s", inv.KeyAs, env)
	}
	if inv.Stdin != "review this" || string(inv.Files["aicr/claude-system-prompt.md"]) != "aicr system prompt" {
		t.Errorf("stdin %q files %v", inv.Stdin, inv.Files)
	}
	var mcp struct {
		MCPServers map[string]struct {
			Type, Command string
			Args          []string
			Env           map[string]string
		}
	}
	if err := json.Unmarshal(inv.Files["aicr/claude-mcp.json"], &mcp); err != nil {
		t.Fatal(err)
	}
	s := mcp.MCPServers["aicr"]
	if s.Env["ANTHROPIC_API_KEY"] != "" || s.Env["AICR_LLM_KEY"] != "" || len(s.Env) != 2 {
		t.Errorf("MCP server env %v: want both key variables blanked", s.Env)
	}
	if s.Type != "stdio" || s.Command != "/opt/aicr/bin/aicr" || strings.Join(s.Args, " ") != "mcp serve --state /work/agent/state.json --tool-names dotted" {
		t.Errorf("mcp.json %+v", mcp)
	}

	if got := a.Spec().Mangle("aicr.report_problem"); got != "mcp__aicr__aicr_report_problem" {
		t.Errorf("mangle = %q", got)
	}
	small, err := a.Configure(cli.Setup{LLM: llm.Config{Model: "m", ContextWindow: 32000}, Home: home, MCPCommand: []string{"aicr"}})
	if err != nil || strings.Contains(strings.Join(small.Env, " "), "AUTO_COMPACT_WINDOW") {
		t.Errorf("a 32k window: env %v, err %v; Claude Code takes no compact window below 100k", small.Env, err)
	}
	if _, err := a.Configure(cli.Setup{LLM: llm.Config{Model: "m"}, Home: home}); err == nil {
		t.Error("Configure without an MCP command succeeded")
	}
}
