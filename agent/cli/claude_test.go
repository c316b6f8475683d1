package cli_test

// Claude Code (`claude -p`) against the scripted model server speaking
// Anthropic Messages, with aicr's MCP server: the real CLI at its pinned
// version, natively ([sandbox] kind = "none").
//
// AICR_CLAUDE_CAPTURE=<dir> keeps each run's event stream there, to
// refresh testdata/claude-code/ (scrub it with scrubClaudeStream's rules).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
)

// claudeAgent is Claude Code run natively against baseURL, with binary
// as its MCP server ("": the aicr built for the tests). The pinned
// version unless AICR_CLAUDE_VERSION names another, which is how an
// older MinVersion or a newer release is proven: the whole suite runs
// against it.
func claudeAgent(t *testing.T, baseURL, binary string) *cli.Agent {
	t.Helper()
	version := os.Getenv("AICR_CLAUDE_VERSION")
	if version == "" && binary == "" {
		return nativeAgent(t, cli.KindClaudeCode, llm.APIAnthropic, baseURL)
	}
	prefix := installed(t, cli.KindClaudeCode)
	if version != "" {
		var out strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		p, err := cli.Install(ctx, cli.InstallOptions{Dir: cacheDir(), Kind: cli.KindClaudeCode, Version: version, Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatalf("install claude-code %s: %v\n%s", version, err, out.String())
		}
		prefix = p
	}
	if binary == "" {
		binary = aicrBinary(t)
	}
	t.Setenv(testKeyEnv, testKey)
	a, err := cli.New(cli.Options{Kind: cli.KindClaudeCode, LLM: llm.Config{API: llm.APIAnthropic, BaseURL: baseURL, Model: testModel,
		APIKeyEnv: testKeyEnv, MaxTurns: 8}, KeyEnv: testKeyEnv, Prefix: prefix, Binary: binary})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// claudeStream is the event stream Agent kept for pass 1.
func claudeStream(t *testing.T, run rundir.Layout) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run.AgentDir(), "claude-code-pass-1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("AICR_CLAUDE_CAPTURE"); dir != "" {
		name := strings.TrimPrefix(t.Name(), "TestClaudeCode")
		if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return string(b)
}

// claudeSeen are the aicr tools as Claude Code offers them to the model.
func claudeSeen() []string {
	a, _ := cli.Lookup(cli.KindClaudeCode)
	var names []string
	for _, t := range review.ToolNames {
		names = append(names, a.Spec().Mangle(t))
	}
	return names
}

func TestClaudeCodeReview(t *testing.T) {
	sim := modelsim.StartFunc(t, reportScenario())
	a := claudeAgent(t, sim.URL, "")
	run := newRun(t)
	// The bundle's instruction layers, where the sandbox puts them.
	const agentsMarker = "Instruction layer marker 7f3a: prefer table-driven tests."
	if err := os.WriteFile(filepath.Join(run.AgentDir(), "AGENTS.md"), []byte("# Repository instructions\n\n"+agentsMarker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stats, st, err := reviewPass(t, a, run)
	stream := claudeStream(t, run)
	if err != nil {
		t.Fatalf("Review: %v\n%s", err, stream)
	}
	requireReported(t, st)
	// Every request was answered: none was refused and retried in
	// another shape (the first carries a mid-conversation system message,
	// which the API accepts right after a user turn).
	if err := sim.Err(); err != nil {
		t.Fatalf("model server: %v", err)
	}
	reqs := sim.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (report, summary, prose)", len(reqs))
	}
	first := reqs[0]
	if len(first.Messages) < 2 || first.Messages[0].Role != "user" || first.Messages[1].Role != "system" {
		t.Errorf("first request's roles: %v, want user then the system turn", roles(first))
	}
	if !strings.Contains(first.System, "aicr") {
		t.Errorf("the top-level system prompt lacks aicr's: %.300q", first.System)
	}
	if got, want := strings.Join(sortedCopy(first.Tools), ","), strings.Join(sortedCopy(claudeSeen()), ","); got != want {
		t.Errorf("tools offered: %s, want exactly %s", got, want)
	}
	if first.Header.Get("x-api-key") != testKey || first.Header.Get("anthropic-version") == "" {
		t.Errorf("request headers: x-api-key %q, anthropic-version %q", first.Header.Get("x-api-key"), first.Header.Get("anthropic-version"))
	}
	if !strings.Contains(string(first.Raw), agentsMarker) {
		t.Error("AGENTS.md in the working directory did not reach the model")
	}
	// [agent.llm] max_output_tokens (its default here) bounds each answer.
	if first.MaxTokens != llm.DefaultMaxOutputTokens {
		t.Errorf("max_tokens %d, want %d", first.MaxTokens, llm.DefaultMaxOutputTokens)
	}
	if !first.Stream {
		t.Error("Claude Code did not stream")
	}
	if stats.Turns != 3 || stats.InputTokens != 1200+1400+1500 || stats.OutputTokens != 80+40+10 {
		t.Errorf("stats = %+v, want 3 turns, 4100 tokens in, 130 out", stats)
	}
	if stats.Model != testModel || !strings.Contains(stats.Text, "one problem reported") {
		t.Errorf("stats model %q text %q", stats.Model, stats.Text)
	}
}

// The model calls Bash and Write, which a Claude Code with its default
// tools would run, before reporting: neither exists under aicr's config,
// so nothing is executed, and the aicr calls still go through.
func TestClaudeCodeRunsOnlyAicrTools(t *testing.T) {
	run := newRun(t)
	marker := filepath.Join(run.AgentDir(), "pwned-by-bash")
	written := filepath.Join(run.AgentDir(), "pwned-by-write")
	report := reportScenario()
	sim := modelsim.StartFunc(t, func(r modelsim.Request) modelsim.Step {
		if r.Offered("report_problem") != "" && r.ToolResults() == 0 {
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{
				{Name: "Bash", Arguments: fmt.Sprintf(`{"command":"touch %s","description":"mark"}`, marker)},
				{Name: "Write", Arguments: fmt.Sprintf(`{"file_path":%q,"content":"x"}`, written)},
			}}
		}
		if r.ToolResults() >= 2 {
			// Past the refused pair, report as usual.
			return report(withoutFirstResults(r, 2))
		}
		return report(r)
	})
	a := claudeAgent(t, sim.URL, "")
	_, st, err := reviewPass(t, a, run)
	stream := claudeStream(t, run)
	if err != nil {
		t.Fatalf("Review: %v\n%s", err, stream)
	}
	for _, p := range []string{marker, written} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s exists: a built-in tool ran", p)
		}
	}
	requireReported(t, st)
	for _, r := range sim.Requests() {
		for _, tool := range r.Tools {
			if !strings.HasPrefix(tool, "mcp__aicr__") {
				t.Fatalf("tool %q offered to the model besides aicr's", tool)
			}
		}
	}
	// What the model was told about its Bash call.
	var refusals []string
	for _, m := range sim.Requests()[1].Messages {
		if m.Role == "tool" {
			refusals = append(refusals, m.Text)
		}
	}
	if len(refusals) != 2 {
		t.Fatalf("tool results after the Bash/Write calls: %q", refusals)
	}
	for _, s := range refusals {
		if !strings.Contains(strings.ToLower(s), "no such tool") {
			t.Errorf("the model was told %q, want that there is no such tool", s)
		}
	}
}

// withoutFirstResults drops the first n tool results, so the scripted
// reviewer counts only its own aicr calls.
func withoutFirstResults(r modelsim.Request, n int) modelsim.Request {
	var msgs []modelsim.Message
	for _, m := range r.Messages {
		if m.Role == "tool" && n > 0 {
			n--
			continue
		}
		msgs = append(msgs, m)
	}
	r.Messages = msgs
	return r
}

// aicr refuses a problem on an unchanged line: Claude Code marks the
// tool_result is_error, the model goes on and publishes a summary.
func TestClaudeCodeRefusedCall(t *testing.T) {
	sim := modelsim.StartFunc(t, func(r modelsim.Request) modelsim.Step {
		report, summary := r.Offered("report_problem"), r.Offered("publish_summary")
		switch r.ToolResults() {
		case 0:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: report,
				Arguments: `{"file":"src/calc.go","line":2,"severity":"low","category":"style","message":"unchanged line"}`}}}
		case 1:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: summary, Arguments: `{"markdown":"Nothing to report."}`}}}
		}
		return modelsim.Step{Text: "done"}
	})
	a := claudeAgent(t, sim.URL, "")
	run := newRun(t)
	_, st, err := reviewPass(t, a, run)
	stream := claudeStream(t, run)
	if err != nil {
		t.Fatalf("Review: %v\n%s", err, stream)
	}
	if len(st.Problems) != 0 || len(st.Rejected) != 1 || len(st.Summaries) != 1 {
		t.Fatalf("state: problems %+v rejected %+v summaries %d", st.Problems, st.Rejected, len(st.Summaries))
	}
	ev := parseClaude(t, stream)
	if len(ev.ToolCalls) != 2 || !ev.ToolCalls[0].Failed || ev.ToolCalls[1].Failed {
		t.Fatalf("tool calls %+v: want the report failed, the summary not", ev.ToolCalls)
	}
}

// A missing aicr binary: Claude Code still exits 0 with "success", but
// its init event says the server failed, which Review turns into
// ErrMisconfigured.
func TestClaudeCodeMCPServerMissing(t *testing.T) {
	sim := modelsim.StartFunc(t, reportScenario())
	a := claudeAgent(t, sim.URL, filepath.Join(t.TempDir(), "no-such-aicr"))
	run := newRun(t)
	_, st, err := reviewPass(t, a, run)
	stream := claudeStream(t, run)
	if !errors.Is(err, cli.ErrMisconfigured) {
		t.Fatalf("Review = %v, want ErrMisconfigured\n%s", err, stream)
	}
	if !strings.Contains(err.Error(), "no-such-aicr") {
		t.Errorf("the error does not name the binary: %v", err)
	}
	if len(st.Problems)+len(st.Summaries) != 0 {
		t.Errorf("state without an MCP server: %+v", st)
	}
}

// A refused key fails the pass as llm.ErrAuth after Claude Code's own
// (bounded) retries.
func TestClaudeCodeUnauthorized(t *testing.T) {
	sim := modelsim.StartFunc(t, reportScenario())
	sim.RequireKey("sk-some-other-key")
	a := claudeAgent(t, sim.URL, "")
	run := newRun(t)
	_, _, err := reviewPass(t, a, run)
	stream := claudeStream(t, run)
	if !errors.Is(err, llm.ErrAuth) {
		t.Fatalf("Review = %v, want llm.ErrAuth\n%s", err, stream)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("the error carries the key: %v", err)
	}
	if n := len(sim.Requests()); n == 0 || n > 1+3 {
		t.Errorf("%d requests: want the first plus at most the bounded retries", n)
	}
}

// The API's prompt_too_long answer reaches the ladder as
// llm.ErrContextOverflow, so it retries with the prompt clipped.
func TestClaudeCodeContextOverflow(t *testing.T) {
	sim := modelsim.StartFunc(t, func(modelsim.Request) modelsim.Step {
		return modelsim.Step{ErrorType: "prompt_too_long"}
	})
	a := claudeAgent(t, sim.URL, "")
	run := newRun(t)
	_, _, err := reviewPass(t, a, run)
	stream := claudeStream(t, run)
	if !errors.Is(err, llm.ErrContextOverflow) {
		t.Fatalf("Review = %v, want llm.ErrContextOverflow\n%s", err, stream)
	}
}

func parseClaude(t *testing.T, stream string) cli.Events {
	t.Helper()
	a, _ := cli.Lookup(cli.KindClaudeCode)
	ev, err := a.Parse(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func roles(r modelsim.Request) []string {
	var out []string
	for _, m := range r.Messages {
		out = append(out, m.Role)
	}
	return out
}

func sortedCopy(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return out
}

// Against a server that accepts only user and assistant roles (a
// self-hosted Anthropic-compatible server, an older model), Claude
// Code's first request is refused for its system turn; it sends the
// same turn folded into the user message and the review goes through,
// at the cost of that one refused request.
func TestClaudeCodeUserAssistantOnlyServer(t *testing.T) {
	sim := modelsim.StartFunc(t, reportScenario())
	sim.UserAssistantRolesOnly()
	a := claudeAgent(t, sim.URL, "")
	run := newRun(t)
	_, st, err := reviewPass(t, a, run)
	stream := claudeStream(t, run)
	if err != nil {
		t.Fatalf("Review: %v\n%s", err, stream)
	}
	requireReported(t, st)
	reqs := sim.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4: the refused first one, then report, summary, prose", len(reqs))
	}
	if got := roles(reqs[0]); len(got) < 2 || got[1] != "system" {
		t.Fatalf("first request's roles %v: want the system turn the server refuses", got)
	}
	for i, r := range reqs[1:] {
		if slices.Contains(roles(r), "system") {
			t.Errorf("request %d still carries a system turn: %v", i+2, roles(r))
		}
	}
	if first := reqs[1].Messages[0]; first.Role != "user" || !strings.Contains(first.Text, "aicr collects the results") {
		t.Errorf("the retried request lost the system turn's text (the MCP server's instructions): %.400q", first.Text)
	}
}

// Claude Code starts its MCP servers with its own environment; the
// key it holds must not reach aicr's server, which has no use for it.
func TestClaudeCodeMCPServerGetsNoKey(t *testing.T) {
	sim := modelsim.StartFunc(t, reportScenario())
	dir := t.TempDir()
	envFile := filepath.Join(dir, "mcp-env.txt")
	wrapper := filepath.Join(dir, "aicr-env")
	script := fmt.Sprintf("#!/bin/sh\nenv > %q\nexec %q \"$@\"\n", envFile, aicrBinary(t))
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	a := claudeAgent(t, sim.URL, wrapper)
	run := newRun(t)
	_, st, err := reviewPass(t, a, run)
	if err != nil {
		t.Fatalf("Review: %v\n%s", err, claudeStream(t, run))
	}
	requireReported(t, st)
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatalf("the MCP server was not started through the wrapper: %v", err)
	}
	if strings.Contains(string(env), testKey) {
		t.Error("aicr's MCP server was started with the model key in its environment")
	}
}
