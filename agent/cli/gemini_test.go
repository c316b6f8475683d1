package cli_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/review"
)

// The streams under testdata/gemini-cli were written by Gemini CLI 0.61.0
// itself, run by the native tests below against modelsim.

func parseGeminiStream(t *testing.T, name string) cli.Events {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "gemini-cli", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, _ := cli.Lookup(cli.KindGeminiCLI)
	ev, err := a.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Malformed != 0 || ev.Lines == 0 {
		t.Fatalf("%s: %d lines, %d malformed", name, ev.Lines, ev.Malformed)
	}
	return ev
}

func TestGeminiParseSuccess(t *testing.T) {
	ev := parseGeminiStream(t, "success.jsonl")
	want := []cli.ToolCall{{Name: "mcp_aicr_aicr_report_problem"}, {Name: "mcp_aicr_aicr_publish_summary"}}
	if !slices.Equal(ev.ToolCalls, want) {
		t.Errorf("tool calls %+v, want %+v", ev.ToolCalls, want)
	}
	if ev.Model != "scripted-model" || ev.Turns != 3 || ev.InputTokens != 4100 || ev.OutputTokens != 130 {
		t.Errorf("model %q turns %d tokens %d/%d, want scripted-model, 3 turns, 4100/130", ev.Model, ev.Turns, ev.InputTokens, ev.OutputTokens)
	}
	if ev.FinalText != "Review done: one problem reported." {
		t.Errorf("final text %q", ev.FinalText)
	}
	if ev.Failed || ev.APIError != "" || ev.ContextOverflow || len(ev.PermissionDenials) > 0 {
		t.Errorf("a clean run reads as a failure: %+v", ev)
	}
}

func TestGeminiParseRefusedCall(t *testing.T) {
	ev := parseGeminiStream(t, "refused.jsonl")
	if len(ev.ToolCalls) != 1 || !ev.ToolCalls[0].Failed || !strings.HasPrefix(ev.ToolCalls[0].Error, review.CodeFileNotInChange+": ") {
		t.Errorf("tool calls %+v, want one failed with aicr's %s refusal", ev.ToolCalls, review.CodeFileNotInChange)
	}
	// aicr refusing the input is no permission problem of the CLI.
	if len(ev.PermissionDenials) > 0 || ev.Failed {
		t.Errorf("denials %v failed %v", ev.PermissionDenials, ev.Failed)
	}
}

func TestGeminiParseOtherToolsAreNotAicrCalls(t *testing.T) {
	ev := parseGeminiStream(t, "shell.jsonl")
	if len(ev.ToolCalls) != 0 || len(ev.PermissionDenials) != 0 {
		t.Errorf("calls of unregistered built-in tools read as aicr calls %+v or denials %v", ev.ToolCalls, ev.PermissionDenials)
	}
}

func TestGeminiParseDeniedAicrTool(t *testing.T) {
	a, _ := cli.Lookup(cli.KindGeminiCLI)
	stream := `{"type":"tool_use","tool_name":"mcp_aicr_aicr_skip","tool_id":"t1","parameters":{"reason":"lgtm"}}
{"type":"tool_result","tool_id":"t1","status":"error","output":"denied","error":{"type":"policy_violation","message":"Tool execution denied by policy."}}
not json
{"type":"result","status":"success","stats":{"input_tokens":10,"output_tokens":2}}
`
	ev, err := a.Parse(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ev.PermissionDenials, []string{"mcp_aicr_aicr_skip"}) || ev.Malformed != 1 || ev.Lines != 3 {
		t.Errorf("denials %v, lines %d malformed %d", ev.PermissionDenials, ev.Lines, ev.Malformed)
	}
}

func TestGeminiParseFailureOutsideTheAPI(t *testing.T) {
	a, _ := cli.Lookup(cli.KindGeminiCLI)
	stream := `{"type":"init","session_id":"s","model":"m"}
{"type":"error","severity":"error","message":"Maximum session turns exceeded"}
{"type":"result","status":"error","error":{"type":"no_space_left","message":"No space left on device"},"stats":{"input_tokens":0,"output_tokens":0}}
`
	ev, err := a.Parse(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	// Not the model API's refusal: the CLI's own words explain it.
	if !ev.Failed || ev.APIError != "" || ev.APIStatus != 0 || ev.ContextOverflow || ev.Reason != "no_space_left: No space left on device" {
		t.Errorf("events %+v", ev)
	}
}

func TestGeminiParseTurnLimit(t *testing.T) {
	ev := parseGeminiStream(t, "maxturns.jsonl")
	if !ev.Failed || ev.APIError != "" || !strings.Contains(ev.Reason, "max_turns") || ev.Turns != 2 || len(ev.ToolCalls) != 0 {
		t.Errorf("events %+v, want a failed run whose reason names max_turns", ev)
	}
}

func TestGeminiCLITurnLimit(t *testing.T) {
	// The model keeps calling a tool the CLI does not have.
	sim := modelsim.StartFunc(t, func(modelsim.Request) modelsim.Step {
		return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "list_directory", Arguments: `{"dir_path":"."}`}}}
	})
	t.Setenv(testKeyEnv, testKey)
	a, err := cli.New(cli.Options{Kind: cli.KindGeminiCLI, LLM: llm.Config{API: llm.APIGemini, BaseURL: sim.Root(), Model: testModel,
		APIKeyEnv: testKeyEnv, MaxTurns: 2}, KeyEnv: testKeyEnv, Prefix: installed(t, cli.KindGeminiCLI), Binary: aicrBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = reviewPass(t, a, newRun(t))
	if err == nil || !strings.Contains(err.Error(), "max_turns") {
		t.Fatalf("err = %v, want one naming [agent.llm] max_turns", err)
	}
	if n := len(sim.Requests()); n != 2 {
		t.Errorf("%d model requests, want max_turns = 2", n)
	}
}

func TestGeminiParseMCPServerMissing(t *testing.T) {
	// Gemini CLI says so on stderr only ("MCP issues detected"): the
	// stream is a clean run without tools.
	ev := parseGeminiStream(t, "missing.jsonl")
	if len(ev.ToolCalls) != 0 || ev.Failed || ev.MCPFailure != "" || ev.FinalText != "aicr review" {
		t.Errorf("events %+v", ev)
	}
}

func TestGeminiParseAuth(t *testing.T) {
	ev := parseGeminiStream(t, "auth.jsonl")
	if !ev.Failed || ev.APIStatus != 401 || !strings.Contains(ev.APIError, "API key not valid") || ev.ContextOverflow {
		t.Errorf("events %+v, want a failed result with status 401 (Google's API_KEY_INVALID)", ev)
	}
}

func TestGeminiParseContextOverflow(t *testing.T) {
	ev := parseGeminiStream(t, "overflow.jsonl")
	if !ev.Failed || !ev.ContextOverflow || ev.APIStatus != 400 {
		t.Errorf("events %+v, want a context overflow", ev)
	}
}

func TestGeminiConfigure(t *testing.T) {
	a, _ := cli.Lookup(cli.KindGeminiCLI)
	spec := a.Spec()
	s := cli.Setup{LLM: llm.Config{API: llm.APIGemini, BaseURL: "http://gpu-box:8080/", Model: "gemini-2.5-pro", MaxTurns: 12},
		KeyEnv: "TEAM_GEMINI_KEY", MCPCommand: []string{"/opt/aicr/aicr", "mcp", "serve", "--tool-names", "underscore"},
		System: "SYSTEM PROMPT", User: "USER PROMPT", SeenName: spec.Mangle}
	s.Home.HOME, s.Home.XDGCacheHome = "/work/agent/home", "/work/agent/home/.cache"
	inv, err := a.Configure(s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(inv.KeyAs, []string{"GEMINI_API_KEY"}) || inv.Stdin != "USER PROMPT" {
		t.Errorf("key as %v, stdin %q", inv.KeyAs, inv.Stdin)
	}
	for _, want := range []string{"GOOGLE_GEMINI_BASE_URL=http://gpu-box:8080", "GEMINI_CLI_TRUST_WORKSPACE=true",
		"GEMINI_SYSTEM_MD=/work/agent/home/.gemini/system.md", "TMPDIR=/work/agent/home/.cache"} {
		if !slices.Contains(inv.Env, want) {
			t.Errorf("env %v lacks %s", inv.Env, want)
		}
	}
	if !slices.Equal(inv.Args, []string{"-m", "gemini-2.5-pro", "-o", "stream-json"}) {
		t.Errorf("args %v", inv.Args)
	}
	if string(inv.Files[".gemini/system.md"]) != "SYSTEM PROMPT" {
		t.Errorf("system prompt file %q", inv.Files[".gemini/system.md"])
	}
	var settings struct {
		Security struct {
			Auth                         struct{ SelectedType string } `json:"auth"`
			EnvironmentVariableRedaction struct {
				Enabled bool     `json:"enabled"`
				Blocked []string `json:"blocked"`
			} `json:"environmentVariableRedaction"`
		} `json:"security"`
		Privacy   struct{ UsageStatisticsEnabled bool } `json:"privacy"`
		Telemetry struct{ Enabled bool }                `json:"telemetry"`
		General   struct {
			EnableAutoUpdate             bool `json:"enableAutoUpdate"`
			EnableAutoUpdateNotification bool `json:"enableAutoUpdateNotification"`
		} `json:"general"`
		Tools struct {
			Core []string `json:"core"`
		} `json:"tools"`
		Model struct {
			MaxSessionTurns int `json:"maxSessionTurns"`
		} `json:"model"`
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
			Trust   bool     `json:"trust"`
		} `json:"mcpServers"`
	}
	raw := inv.Files[".gemini/settings.json"]
	if err := json.Unmarshal(raw, &settings); err != nil {
		t.Fatal(err)
	}
	if settings.Security.Auth.SelectedType != "gemini-api-key" || settings.Privacy.UsageStatisticsEnabled ||
		settings.Telemetry.Enabled || settings.General.EnableAutoUpdate || settings.General.EnableAutoUpdateNotification ||
		settings.Model.MaxSessionTurns != 12 {
		t.Errorf("settings %s", raw)
	}
	var want []string
	for _, tool := range review.ToolNames {
		want = append(want, "mcp_aicr_"+strings.ReplaceAll(tool, ".", "_"))
	}
	if !slices.Equal(settings.Tools.Core, want) {
		t.Errorf("tools.core %v, want exactly the aicr tools %v", settings.Tools.Core, want)
	}
	m := settings.MCPServers["aicr"]
	if len(settings.MCPServers) != 1 || m.Command != "/opt/aicr/aicr" || !slices.Equal(m.Args, s.MCPCommand[1:]) || !m.Trust {
		t.Errorf("mcpServers %+v", settings.MCPServers)
	}
	if !slices.Contains(settings.Security.EnvironmentVariableRedaction.Blocked, "TEAM_GEMINI_KEY") {
		t.Errorf("the key's variable is not kept from Gemini CLI's children: %s", raw)
	}

	s.LLM.BaseURL = "https://generativelanguage.googleapis.com/v1beta/"
	if inv, err := a.Configure(s); err != nil || !slices.Contains(inv.Env, "GOOGLE_GEMINI_BASE_URL=https://generativelanguage.googleapis.com") {
		t.Errorf("a base_url with the API version: %v %v, want the server root", err, inv.Env)
	}

	s.LLM.API = llm.APIOpenAIChat
	if _, err := a.Configure(s); err == nil || !strings.Contains(err.Error(), `api = "gemini"`) {
		t.Errorf("openai-chat: %v, want a refusal naming api = \"gemini\"", err)
	}
}

// geminiTools are the names the model is offered through Gemini CLI.
func geminiTools() []string {
	var names []string
	for _, tool := range review.ToolNames {
		names = append(names, "mcp_aicr_"+strings.ReplaceAll(tool, ".", "_"))
	}
	slices.Sort(names)
	return names
}

// withWaitForPrevious adds the argument Gemini CLI declares on every MCP
// tool to each call, as a Gemini model fills it in.
func withWaitForPrevious(respond func(modelsim.Request) modelsim.Step) func(modelsim.Request) modelsim.Step {
	return func(r modelsim.Request) modelsim.Step {
		step := respond(r)
		for i, c := range step.ToolCalls {
			step.ToolCalls[i].Arguments = strings.TrimSuffix(c.Arguments, "}") + `,"wait_for_previous":true}`
		}
		return step
	}
}

// mcpServerEnvs returns the environments of the running `aicr mcp serve`
// processes whose state file is statePath.
func mcpServerEnvs(statePath string) []string {
	var envs []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "mcp\x00serve") || !strings.Contains(string(cmdline), statePath) {
			continue
		}
		if env, err := os.ReadFile(filepath.Join(d, "environ")); err == nil {
			envs = append(envs, string(env))
		}
	}
	return envs
}

func TestGeminiCLIReview(t *testing.T) {
	run := newRun(t)
	var (
		once       sync.Once
		serverEnvs []string
	)
	script := withWaitForPrevious(reportScenario())
	sim := modelsim.StartFunc(t, func(r modelsim.Request) modelsim.Step {
		once.Do(func() { serverEnvs = mcpServerEnvs(run.StatePath()) })
		return script(r)
	})
	a := nativeAgent(t, cli.KindGeminiCLI, llm.APIGemini, sim.Root())
	stats, st, err := reviewPass(t, a, run)
	if err != nil {
		t.Fatal(err)
	}
	requireReported(t, st)
	// The key is the CLI's: its MCP server, aicr, never gets it.
	if len(serverEnvs) != 1 {
		t.Errorf("found %d aicr MCP servers of this run while the model was asked, want 1", len(serverEnvs))
	}
	for _, env := range serverEnvs {
		if strings.Contains(env, testKey) {
			t.Error("the aicr MCP server's environment holds the model key")
		}
	}
	if err := sim.Err(); err != nil {
		t.Fatal(err)
	}
	reqs := sim.Requests()
	if len(reqs) != 3 {
		t.Errorf("%d model requests, want 3 (report, summary, prose)", len(reqs))
	}
	for i, r := range reqs {
		tools := slices.Sorted(slices.Values(r.Tools))
		if r.API != modelsim.APIGemini || !r.Stream || r.Model != testModel || !slices.Equal(tools, geminiTools()) {
			t.Errorf("request %d: %s %s stream=%v offered %v, want only %v", i, r.API, r.Model, r.Stream, tools, geminiTools())
		}
		if r.Header.Get("x-goog-api-key") != testKey {
			t.Errorf("request %d: x-goog-api-key is not the configured key", i)
		}
		if r.MaxTokens != llm.DefaultMaxOutputTokens {
			t.Errorf("request %d: maxOutputTokens %d, want [agent.llm] max_output_tokens %d", i, r.MaxTokens, llm.DefaultMaxOutputTokens)
		}
		if !strings.HasPrefix(r.System, "# aicr review instructions") {
			t.Errorf("request %d: system prompt is not aicr's: %.80q", i, r.System)
		}
	}
	if stats.Turns != 3 || stats.InputTokens != 1200+1400+1500 || stats.OutputTokens != 80+40+10 || stats.Model != testModel {
		t.Errorf("stats %+v", stats)
	}
}

func TestGeminiCLIRunsOnlyAicrTools(t *testing.T) {
	run := newRun(t)
	shellMarker := filepath.Join(run.AgentDir(), "shell-ran")
	writeMarker := filepath.Join(run.AgentDir(), "file-written")
	// read_file is one of the tools Gemini CLI runs without asking in a
	// headless run, unless tools.core leaves it out.
	readable := filepath.Join(run.AgentDir(), "notes.txt")
	if err := os.WriteFile(readable, []byte("READ-BY-A-BUILTIN-TOOL"), 0o644); err != nil {
		t.Fatal(err)
	}
	report := reportScenario()
	sim := modelsim.StartFunc(t, func(r modelsim.Request) modelsim.Step {
		if r.ToolResults() == 0 && r.Offered("report_problem") != "" {
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{
				{Name: "run_shell_command", Arguments: fmt.Sprintf(`{"command":"touch %s"}`, shellMarker)},
				{Name: "write_file", Arguments: fmt.Sprintf(`{"file_path":%q,"content":"x"}`, writeMarker)},
				{Name: "read_file", Arguments: fmt.Sprintf(`{"file_path":%q}`, readable)},
			}}
		}
		// Two refused calls came back: go on as a reviewing model does.
		shifted := r
		shifted.Messages = nil
		for _, m := range r.Messages {
			if m.Role == "tool" && slices.ContainsFunc([]string{"run_shell_command", "write_file", "read_file"},
				func(tool string) bool { return strings.HasPrefix(m.ToolCallID, tool) }) {
				continue
			}
			shifted.Messages = append(shifted.Messages, m)
		}
		return report(shifted)
	})
	a := nativeAgent(t, cli.KindGeminiCLI, llm.APIGemini, sim.Root())
	_, st, err := reviewPass(t, a, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{shellMarker, writeMarker} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v): Gemini CLI ran a built-in tool", p, err)
		}
	}
	requireReported(t, st)
	var refused int
	for _, r := range sim.Requests() {
		for _, m := range r.Messages {
			if m.Role != "tool" {
				continue
			}
			if strings.Contains(m.Text, "READ-BY-A-BUILTIN-TOOL") {
				t.Errorf("read_file ran: the model saw %q", m.Text)
			}
			if strings.Contains(m.Text, "not found") {
				refused++
			}
		}
	}
	if refused == 0 {
		t.Error("the model never saw the built-in tools refused")
	}
}

func TestGeminiCLIMCPServerMissing(t *testing.T) {
	sim := modelsim.StartFunc(t, reportScenario())
	t.Setenv(testKeyEnv, testKey)
	a, err := cli.New(cli.Options{Kind: cli.KindGeminiCLI, LLM: llm.Config{API: llm.APIGemini, BaseURL: sim.Root(), Model: testModel,
		APIKeyEnv: testKeyEnv, MaxTurns: 8}, KeyEnv: testKeyEnv, Prefix: installed(t, cli.KindGeminiCLI),
		Binary: filepath.Join(t.TempDir(), "no-aicr")})
	if err != nil {
		t.Fatal(err)
	}
	run := newRun(t)
	// The stream does not say the server failed (stderr does, "MCP issues
	// detected"): the pass ends without error and without a record, and
	// the ladder's repair pass follows.
	_, st, err := reviewPass(t, a, run)
	requireUnreportedMCPFailure(t, sim, st, err)
}

func TestGeminiCLIAuthFailure(t *testing.T) {
	sim := modelsim.StartFunc(t, reportScenario())
	sim.RequireKey("a-different-key")
	a := nativeAgent(t, cli.KindGeminiCLI, llm.APIGemini, sim.Root())
	run := newRun(t)
	_, _, err := reviewPass(t, a, run)
	if !errors.Is(err, llm.ErrAuth) {
		t.Fatalf("err = %v, want llm.ErrAuth", err)
	}
	// Gemini CLI's error report (it holds the request) stays in the run.
	reports, _ := filepath.Glob(filepath.Join(run.AgentDir(), bundle.HomeDirName, ".cache", "gemini-client-error-*.json"))
	if len(reports) == 0 {
		t.Error("no gemini-client-error report under the run's HOME: it went to the host's temp dir")
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("the error carries the key: %v", err)
	}
}

func TestGeminiCLIContextOverflow(t *testing.T) {
	sim := modelsim.StartFunc(t, func(modelsim.Request) modelsim.Step {
		return modelsim.Step{ErrorType: "context_length_exceeded"}
	})
	a := nativeAgent(t, cli.KindGeminiCLI, llm.APIGemini, sim.Root())
	_, _, err := reviewPass(t, a, newRun(t))
	if !errors.Is(err, llm.ErrContextOverflow) {
		t.Fatalf("err = %v, want llm.ErrContextOverflow", err)
	}
}

// TestGeminiCLILargePrompt: the prompt goes on stdin, so a diff larger
// than one argument may be (128 KiB) reaches the model whole.
func TestGeminiCLILargePrompt(t *testing.T) {
	run := newRun(t)
	var diff strings.Builder
	diff.WriteString(calcDiff)
	for diff.Len() < 300<<10 {
		diff.WriteString("+// padding line to make the diff larger than one argument may be\n")
	}
	diff.WriteString("+// END-OF-LARGE-DIFF\n")
	if err := os.WriteFile(run.DiffPath(), []byte(diff.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sim := modelsim.StartFunc(t, reportScenario())
	a := nativeAgent(t, cli.KindGeminiCLI, llm.APIGemini, sim.Root())
	_, st, err := reviewPass(t, a, run)
	if err != nil {
		t.Fatal(err)
	}
	requireReported(t, st)
	first := sim.Requests()[0]
	if len(first.Messages) == 0 || !strings.Contains(first.Messages[0].Text, "END-OF-LARGE-DIFF") || len(first.Messages[0].Text) < 300<<10 {
		t.Errorf("the first request's prompt (%d bytes) does not hold the whole diff", len(first.Messages[0].Text))
	}
}

// TestGeminiCLIInPodman runs the review as the daemon does with [sandbox]
// kind = "podman" and network = "llm-only": the CLI in the node image,
// the model server reached only through the run's egress proxy.
func TestGeminiCLIInPodman(t *testing.T) {
	sim := modelsim.StartFunc(t, withWaitForPrevious(reportScenario()))
	var log egressLog
	a := podmanAgent(t, cli.KindGeminiCLI, llm.APIGemini, sim.Root(), "llm-only", &log)
	run := newRun(t)
	stats, st, err := reviewPass(t, a, run)
	if err != nil {
		t.Fatal(err)
	}
	requireReported(t, st)
	if err := sim.Err(); err != nil {
		t.Fatal(err)
	}
	for i, r := range sim.Requests() {
		if tools := slices.Sorted(slices.Values(r.Tools)); !slices.Equal(tools, geminiTools()) || r.Header.Get("x-goog-api-key") != testKey {
			t.Errorf("request %d offered %v (want only %v) or lacks the key", i, tools, geminiTools())
		}
	}
	if stats.Turns != 3 || stats.InputTokens != 1200+1400+1500 {
		t.Errorf("stats %+v", stats)
	}
	// Every connection that left the container went to the model server.
	model := strings.TrimPrefix(sim.Root(), "http://")
	events := log.Events()
	if len(events) == 0 {
		t.Error("the egress proxy saw no connection: the model server was reached some other way")
	}
	for _, e := range events {
		if !e.Allowed || net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) != model {
			t.Errorf("egress %s:%d allowed=%v (%s), want only the model server %s", e.Host, e.Port, e.Allowed, e.Reason, model)
		}
	}
}
