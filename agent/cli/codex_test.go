package cli_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
)

// codexResourceTools are the tools Codex adds for every MCP server it
// has: they list and read that server's MCP resources (aicr's only) and
// cannot be switched off in 0.169.0.
var codexResourceTools = []string{"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"}

// codexAgent is Codex run natively against sim, with binary as its MCP
// server ("": the aicr built for the tests). The pinned version unless
// AICR_CODEX_VERSION names another: how MinVersion or a newer release is
// proven, by running these tests against it.
func codexAgent(t *testing.T, sim *modelsim.Server, binary string) *cli.Agent {
	t.Helper()
	prefix := installed(t, cli.KindCodex)
	if version := os.Getenv("AICR_CODEX_VERSION"); version != "" {
		var out strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		p, err := cli.Install(ctx, cli.InstallOptions{Dir: cacheDir(), Kind: cli.KindCodex, Version: version, Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatalf("install codex %s: %v\n%s", version, err, out.String())
		}
		prefix = p
	}
	if binary == "" {
		binary = aicrBinary(t)
	}
	t.Setenv(testKeyEnv, testKey)
	a, err := cli.New(cli.Options{Kind: cli.KindCodex, LLM: llm.Config{API: llm.APIOpenAIResponses, BaseURL: sim.URL, Model: testModel,
		APIKeyEnv: testKeyEnv, MaxTurns: 8}, KeyEnv: testKeyEnv, Prefix: prefix, Binary: binary})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// keepStream copies a run's event stream to $AICR_CODEX_CAPTURE/name
// (how testdata/codex was captured) and returns it.
func keepStream(t *testing.T, run rundir.Layout, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run.AgentDir(), "codex-pass-1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("AICR_CODEX_CAPTURE"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return string(b)
}

// aicrCalls counts the calls of aicr tools in the conversation so far.
func aicrCalls(r modelsim.Request) int {
	n := 0
	for _, m := range r.Messages {
		for _, c := range m.ToolCalls {
			if strings.HasPrefix(c.Name, "mcp__aicr__") {
				n++
			}
		}
	}
	return n
}

func TestCodexReview(t *testing.T) {
	sim := modelsim.StartFunc(t, reportScenario())
	run := newRun(t)
	// Codex reads AGENTS.md in its working directory: the bundle puts the
	// repository's instructions there.
	if err := os.WriteFile(filepath.Join(run.AgentDir(), "AGENTS.md"), []byte("Repository rule: check divisions."), 0o644); err != nil {
		t.Fatal(err)
	}
	stats, st, err := reviewPass(t, codexAgent(t, sim, ""), run)
	keepStream(t, run, "success.jsonl")
	if err != nil {
		t.Fatalf("review: %v (model server: %v)", err, sim.Err())
	}
	requireReported(t, st)
	if sim.Err() != nil {
		t.Fatal(sim.Err())
	}

	spec, _ := cli.Lookup(cli.KindCodex)
	var want []string
	for _, tool := range review.ToolNames {
		want = append(want, spec.Spec().Mangle(tool))
	}
	want = append(want, codexResourceTools...)
	slices.Sort(want)
	reqs := sim.Requests()
	if len(reqs) != 3 {
		t.Errorf("%d model requests, want 3 (report, summary, prose)", len(reqs))
	}
	for i, r := range reqs {
		got := slices.Sorted(slices.Values(r.Tools))
		if !slices.Equal(got, want) {
			t.Errorf("request %d offered %v, want exactly %v (no shell, patch, image or web tools)", i, got, want)
		}
		// aicr's system prompt replaces Codex's own (a coding agent
		// that runs commands and edits files).
		if !strings.HasPrefix(r.System, "# aicr review instructions") || strings.Contains(r.System, "You are a coding agent") {
			t.Errorf("request %d system prompt starts %.80q, want aicr's in place of Codex's", i, r.System)
		}
		if strings.Contains(string(r.Raw), "skills_instructions") {
			t.Errorf("request %d lists Codex's own skills", i)
		}
		if !strings.Contains(r.System+textOfMessages(r), "Repository rule: check divisions.") {
			t.Errorf("request %d does not carry AGENTS.md", i)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("request %d Authorization = %q", i, got)
		}
		if !r.Stream {
			t.Errorf("request %d not streamed", i)
		}
	}
	// Codex reports usage per turn: the three requests' sums.
	if stats.Turns != 1 || stats.InputTokens != 1200+1400+1500 || stats.OutputTokens != 80+40+10 {
		t.Errorf("stats = %+v, want 1 turn, 4100 in, 130 out", stats)
	}
	if stats.Text != "Review done: one problem reported." {
		t.Errorf("stats.Text = %q", stats.Text)
	}
	// The key reaches Codex through its environment only.
	cfg, err := os.ReadFile(filepath.Join(run.AgentDir(), bundle.HomeDirName, ".codex", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), testKey) || !strings.Contains(string(cfg), `env_key = "`+cli.KeyEnv+`"`) {
		t.Errorf("config.toml must name %s, not hold the key:\n%s", cli.KeyEnv, cfg)
	}
}

func textOfMessages(r modelsim.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestCodexRunsNothingButAicrTools scripts a model that, before
// reviewing, asks for every way Codex has had to run a command or write
// a file: its shell tools by name (not offered under aicr's config), a
// patch, and a local_shell_call item (which the API sends only when the
// tool was offered, and a hostile endpoint can send anyway). None may
// run: a command that only reads a file would pass a read-only sandbox,
// so the canary is a file whose content must never reach the model.
func TestCodexRunsNothingButAicrTools(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary.txt")
	const secret = "CANARY-7c1e55d0"
	if err := os.WriteFile(canary, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	written := filepath.Join(dir, "written.txt")
	patched := "patched-by-model.txt"
	forbidden := []modelsim.ToolCall{
		{Name: "exec_command", Arguments: `{"cmd":"cat ` + canary + `; touch ` + written + `"}`},
		{Name: "shell", Arguments: `{"command":["bash","-lc","cat ` + canary + `; touch ` + written + `"]}`},
		{Name: "shell_command", Arguments: `{"command":"cat ` + canary + `; touch ` + written + `"}`},
		{Name: "apply_patch", Arguments: `{"input":"*** Begin Patch\n*** Add File: ` + patched + `\n+x\n*** End Patch\n"}`},
		{Name: modelsim.LocalShellCall, Arguments: `{"type":"exec","command":["bash","-lc","cat ` + canary + `; touch ` + written + `"]}`},
	}
	report := reportScenario()
	sim := modelsim.StartFunc(t, func(r modelsim.Request) modelsim.Step {
		if r.Offered("report_problem") == "" {
			return report(r)
		}
		if r.ToolResults() == 0 {
			return modelsim.Step{ToolCalls: forbidden}
		}
		switch aicrCalls(r) {
		case 0:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: r.Offered("report_problem"), Arguments: `{"file":"src/calc.go","line":13,"severity":"high","category":"correctness","message":"Mean divides by len(xs), which is zero for an empty slice."}`}}}
		case 1:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: r.Offered("publish_summary"), Arguments: `{"markdown":"One problem."}`}}}
		}
		return modelsim.Step{Text: "done"}
	})
	run := newRun(t)
	_, st, err := reviewPass(t, codexAgent(t, sim, ""), run)
	keepStream(t, run, "forbidden-tools.jsonl")
	if err != nil {
		t.Fatalf("review: %v", err)
	}
	for _, p := range []string{written, filepath.Join(run.AgentDir(), patched)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (err %v): a tool other than aicr's ran", p, err)
		}
	}
	// What the model got back for each forbidden call.
	var answered int
	for _, r := range sim.Requests() {
		if strings.Contains(string(r.Raw), secret) {
			t.Fatalf("the canary's content reached the model: a forbidden command ran\n%s", r.Raw)
		}
		if r.ToolResults() >= len(forbidden) && answered == 0 {
			for _, m := range r.Messages {
				if m.Role == "tool" {
					answered++
					t.Logf("forbidden call answered: %.160q", m.Text)
				}
			}
		}
	}
	if answered < len(forbidden) {
		t.Errorf("%d of %d forbidden calls were answered; Codex must answer each (refused) and go on", answered, len(forbidden))
	}
	// And the review still went through.
	requireReported(t, st)
}

func TestCodexMCPServerMissing(t *testing.T) {
	sim := modelsim.StartFunc(t, reportScenario())
	a := codexAgent(t, sim, filepath.Join(t.TempDir(), "no-such-aicr"))
	run := newRun(t)
	_, st, err := reviewPass(t, a, run)
	if out := keepStream(t, run, "mcp-missing.jsonl"); out != "" {
		t.Errorf("Codex wrote on stdout: %s", out)
	}
	if dir := os.Getenv("AICR_CODEX_CAPTURE"); dir != "" {
		b, _ := os.ReadFile(filepath.Join(run.AgentDir(), "codex-pass-1.stderr"))
		if err := os.WriteFile(filepath.Join(dir, "mcp-missing.stderr"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !errors.Is(err, cli.ErrMisconfigured) || !strings.Contains(err.Error(), "No such file or directory") {
		t.Fatalf("err = %v, want ErrMisconfigured naming the missing binary", err)
	}
	// required = true: Codex stops before spending a model request.
	if n := len(sim.Requests()); n != 0 || len(st.Problems)+len(st.Summaries) != 0 {
		t.Errorf("%d model requests, state %+v; want none", n, st)
	}
}

func TestCodexWrongKey(t *testing.T) {
	sim := modelsim.StartFunc(t, reportScenario())
	sim.RequireKey("sk-another-key-0000")
	run := newRun(t)
	_, _, err := reviewPass(t, codexAgent(t, sim, ""), run)
	keepStream(t, run, "unauthorized.jsonl")
	if !errors.Is(err, llm.ErrAuth) {
		t.Fatalf("err = %v, want llm.ErrAuth", err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("the error carries the key: %v", err)
	}
	// stream_max_retries = 1: one retry, not Codex's default five.
	if n := len(sim.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (one retry)", n)
	}
}

func TestCodexContextOverflow(t *testing.T) {
	sim := modelsim.StartFunc(t, func(modelsim.Request) modelsim.Step {
		return modelsim.Step{ErrorType: "context_length_exceeded"}
	})
	run := newRun(t)
	_, _, err := reviewPass(t, codexAgent(t, sim, ""), run)
	keepStream(t, run, "context-overflow.jsonl")
	if !errors.Is(err, llm.ErrContextOverflow) {
		t.Fatalf("err = %v, want llm.ErrContextOverflow", err)
	}
}

// TestCodexRefusedCall: aicr refuses a report outside the change; Codex
// hands the refusal to the model, which corrects itself.
func TestCodexRefusedCall(t *testing.T) {
	sim := modelsim.StartFunc(t, func(r modelsim.Request) modelsim.Step {
		report, summary := r.Offered("report_problem"), r.Offered("publish_summary")
		if report == "" {
			return modelsim.Step{Text: "no tools"}
		}
		switch r.ToolResults() {
		case 0:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: report, Arguments: `{"file":"src/other.go","line":2,"severity":"high","category":"correctness","message":"Not in this change."}`}}}
		case 1:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: report, Arguments: `{"file":"src/calc.go","line":13,"severity":"high","category":"correctness","message":"Mean divides by len(xs), which is zero for an empty slice."}`}}}
		case 2:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: summary, Arguments: `{"markdown":"One problem."}`}}}
		}
		return modelsim.Step{Text: "done"}
	})
	run := newRun(t)
	_, st, err := reviewPass(t, codexAgent(t, sim, ""), run)
	stream := keepStream(t, run, "refused-call.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	requireReported(t, st)
	a, _ := cli.Lookup(cli.KindCodex)
	ev, err := a.Parse(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.ToolCalls) != 3 || !ev.ToolCalls[0].Failed || ev.ToolCalls[0].Error == "" || ev.ToolCalls[1].Failed {
		t.Errorf("tool calls = %+v, want the first refused with aicr's reason, the others through", ev.ToolCalls)
	}
}

// codexConfigured is Configure's config.toml for l.
func codexConfigured(t *testing.T, l llm.Config) (map[string]any, cli.Invocation) {
	t.Helper()
	a, _ := cli.Lookup(cli.KindCodex)
	agentDir := "/work/run/agent"
	inv, err := a.Configure(cli.Setup{LLM: l, KeyEnv: "MY_KEY", MCPCommand: []string{"/opt/aicr/bin/aicr", "mcp", "serve"},
		AgentDir: agentDir, Home: bundle.HomeEnvFor(agentDir), System: "SYSTEM", User: "USER"})
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if _, err := toml.Decode(string(inv.Files[".codex/config.toml"]), &cfg); err != nil {
		t.Fatalf("config.toml: %v\n%s", err, inv.Files[".codex/config.toml"])
	}
	return cfg, inv
}

func TestCodexConfigure(t *testing.T) {
	cfg, inv := codexConfigured(t, llm.Config{API: llm.APIOpenAIResponses, BaseURL: "http://gw:8000/v1/", Model: "gpt-x",
		ContextWindow: 32000, MaxOutputTokens: 4000})
	if cfg["model_context_window"] != int64(32000) || cfg["model_auto_compact_token_limit"] != int64(28000) {
		t.Errorf("context window %v, auto compact at %v; want 32000 and 28000 (window less one answer)",
			cfg["model_context_window"], cfg["model_auto_compact_token_limit"])
	}
	p := cfg["model_providers"].(map[string]any)["aicr"].(map[string]any)
	if p["base_url"] != "http://gw:8000/v1" || p["env_key"] != "MY_KEY" || p["wire_api"] != "responses" {
		t.Errorf("provider = %v", p)
	}
	m := cfg["mcp_servers"].(map[string]any)["aicr"].(map[string]any)
	if m["command"] != "/opt/aicr/bin/aicr" || m["required"] != true || m["default_tools_approval_mode"] != "approve" {
		t.Errorf("mcp server = %v", m)
	}
	f := cfg["features"].(map[string]any)
	for _, off := range []string{"shell_tool", "unified_exec", "view_image", "plugins"} {
		if f[off] != false {
			t.Errorf("features.%s = %v, want false", off, f[off])
		}
	}
	if cfg["approval_policy"] != "never" || cfg["sandbox_mode"] != "read-only" || cfg["web_search"] != "disabled" ||
		cfg["model_instructions_file"] != "/work/run/agent/home/.codex/aicr-instructions.md" {
		t.Errorf("config = %v", cfg)
	}
	if string(inv.Files[".codex/aicr-instructions.md"]) != "SYSTEM" || inv.Stdin != "USER" || inv.Args[len(inv.Args)-1] != "-" {
		t.Errorf("invocation = %+v", inv)
	}
	// Without a context window nothing is said: Codex would otherwise
	// take 0 as the window and compact before every request.
	cfg, _ = codexConfigured(t, llm.Config{API: llm.APIOpenAIResponses, BaseURL: "http://gw:8000/v1", Model: "gpt-x"})
	if _, ok := cfg["model_context_window"]; ok {
		t.Errorf("model_context_window set without [agent.llm] context_window: %v", cfg["model_context_window"])
	}
	if _, ok := cfg["model_auto_compact_token_limit"]; ok {
		t.Errorf("model_auto_compact_token_limit set without a context window")
	}
}

// The Parse tests read streams captured from Codex 0.169.0 runs above
// (AICR_CODEX_CAPTURE=agent/cli/testdata/codex).
func parseCodexFile(t *testing.T, name string) cli.Events {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "codex", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, _ := cli.Lookup(cli.KindCodex)
	ev, err := a.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestCodexParseSuccess(t *testing.T) {
	ev := parseCodexFile(t, "success.jsonl")
	if ev.Failed || ev.ContextOverflow || ev.APIError != "" || ev.Malformed != 0 {
		t.Errorf("events = %+v, want a clean run", ev)
	}
	if len(ev.ToolCalls) != 2 || ev.ToolCalls[0].Name != "aicr.report_problem" || ev.ToolCalls[1].Name != "aicr.publish_summary" ||
		ev.ToolCalls[0].Failed || ev.ToolCalls[1].Failed {
		t.Errorf("tool calls = %+v", ev.ToolCalls)
	}
	if ev.Turns != 1 || ev.InputTokens != 4100 || ev.OutputTokens != 130 || ev.FinalText != "Review done: one problem reported." {
		t.Errorf("events = %+v", ev)
	}
}

func TestCodexParseRefusedCall(t *testing.T) {
	ev := parseCodexFile(t, "refused-call.jsonl")
	if len(ev.ToolCalls) != 3 || !ev.ToolCalls[0].Failed || !strings.Contains(ev.ToolCalls[0].Error, "src/other.go") {
		t.Errorf("tool calls = %+v, want the first refused naming src/other.go", ev.ToolCalls)
	}
	if len(ev.PermissionDenials) != 0 || ev.Failed {
		t.Errorf("a call aicr refused is not a permission denial nor a failed run: %+v", ev)
	}
}

func TestCodexParseUnapprovedCall(t *testing.T) {
	ev := parseCodexFile(t, "unapproved-call.jsonl")
	if len(ev.PermissionDenials) == 0 || ev.PermissionDenials[0] != "aicr.report_problem" {
		t.Errorf("permission denials = %v, want aicr.report_problem (events %+v)", ev.PermissionDenials, ev)
	}
}

func TestCodexParseUnauthorized(t *testing.T) {
	ev := parseCodexFile(t, "unauthorized.jsonl")
	if ev.APIStatus != 401 || !ev.Failed || ev.ContextOverflow {
		t.Errorf("events = %+v, want a failed run with status 401", ev)
	}
}

func TestCodexParseContextOverflow(t *testing.T) {
	ev := parseCodexFile(t, "context-overflow.jsonl")
	if !ev.ContextOverflow || !ev.Failed {
		t.Errorf("events = %+v, want a context overflow", ev)
	}
}

func TestCodexParseMCPServerMissing(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "codex", "mcp-missing.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cli.Lookup(cli.KindCodex)
	ev, err := a.Parse(strings.NewReader("")) // Codex printed nothing on stdout
	if err != nil {
		t.Fatal(err)
	}
	a.(cli.StderrParser).ParseStderr(string(b), &ev)
	if ev.MCPFailure != "did not start: aicr: No such file or directory (os error 2) (code -32603)" {
		t.Errorf("MCPFailure = %q", ev.MCPFailure)
	}
	// A run whose stderr says nothing of it has no MCP failure.
	var clean cli.Events
	a.(cli.StderrParser).ParseStderr("WARNING: proceeding, even though we could not create PATH aliases", &clean)
	if clean.MCPFailure != "" {
		t.Errorf("MCPFailure = %q for a clean stderr", clean.MCPFailure)
	}
}

// TestCodexInPodman runs the pass as the daemon does under [sandbox] kind
// = "podman": `aicr agent pass` in the node image with Codex mounted
// read-only, once with the host's network and once with llm-only egress
// (the model server reached through the egress proxy's tunnel).
func TestCodexInPodman(t *testing.T) {
	for _, network := range []string{"host", "llm-only"} {
		t.Run(network, func(t *testing.T) {
			sim := modelsim.StartFunc(t, reportScenario())
			sim.RequireKey(testKey)
			egress := &egressLog{}
			a := podmanAgent(t, cli.KindCodex, llm.APIOpenAIResponses, sim.URL, network, egress)
			run := newRun(t)
			stats, st, err := reviewPass(t, a, run)
			if err != nil {
				t.Fatalf("review in podman (%s): %v (model server: %v)", network, err, sim.Err())
			}
			requireReported(t, st)
			spec, _ := cli.Lookup(cli.KindCodex)
			reqs := sim.Requests()
			if len(reqs) == 0 || reqs[0].Offered("report_problem") != spec.Spec().Mangle("aicr.report_problem") {
				t.Fatalf("requests %d; the model was not offered %s", len(reqs), spec.Spec().Mangle("aicr.report_problem"))
			}
			if stats.Agent != cli.KindCodex || stats.InputTokens != 4100 {
				t.Errorf("stats = %+v, want codex's with 4100 input tokens", stats)
			}
			if network == "llm-only" {
				evs := egress.Events()
				if len(evs) == 0 {
					t.Errorf("llm-only: the egress proxy saw no connection; the model server was reached some other way")
				}
				// Whatever reached the proxy was the model server (with
				// the server on loopback the container has no other way
				// out at all).
				for _, e := range evs {
					if !e.Allowed {
						t.Errorf("llm-only: Codex tried %s:%d (%s)", e.Host, e.Port, e.Reason)
					}
				}
			}
		})
	}
}

// TestCodexCanaryProbeSeesAShell is the control of
// TestCodexRunsNothingButAicrTools: with aicr's config but Codex's shell
// switched back on, the same probe (a read-only command, which the
// read-only sandbox allows) does bring the canary to the model. So the
// probe's silence under aicr's config means the shell is off, not that
// the probe cannot see it.
func TestCodexCanaryProbeSeesAShell(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary.txt")
	const secret = "CANARY-0b9d2f3a"
	if err := os.WriteFile(canary, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sim := modelsim.StartFunc(t, func(r modelsim.Request) modelsim.Step {
		if r.ToolResults() == 0 {
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"cat ` + canary + `"}`}}}
		}
		return modelsim.Step{Text: "done"}
	})
	run := newRun(t)
	home := bundle.HomeEnvFor(run.AgentDir())
	for _, d := range home.Dirs() {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := cli.Lookup(cli.KindCodex)
	inv, err := a.Configure(cli.Setup{LLM: llm.Config{API: llm.APIOpenAIResponses, BaseURL: sim.URL, Model: testModel}, KeyEnv: cli.KeyEnv,
		MCPCommand: []string{aicrBinary(t), "mcp", "serve", "--state", run.StatePath(), "--change", run.ChangePath(), "--tool-names", "dotted"},
		AgentDir:   run.AgentDir(), Home: home, System: "review", User: "review"})
	if err != nil {
		t.Fatal(err)
	}
	for rel, b := range inv.Files {
		s := string(b)
		if strings.HasSuffix(rel, "config.toml") {
			on := strings.NewReplacer("shell_tool = false", "shell_tool = true", "unified_exec = false", "unified_exec = true")
			if s = on.Replace(s); s == string(b) {
				t.Fatalf("config.toml has no shell switches to turn on:\n%s", b)
			}
		}
		if err := os.WriteFile(filepath.Join(home.HOME, rel), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := cli.Executable(a, installed(t, cli.KindCodex))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, inv.Args...)
	cmd.Dir = run.AgentDir()
	cmd.Env = append(home.Env(), cli.KeyEnv+"=none", "PATH="+os.Getenv("PATH"))
	cmd.Stdin = strings.NewReader(inv.Stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("codex: %v\n%s", err, out)
	}
	for _, r := range sim.Requests() {
		if strings.Contains(string(r.Raw), secret) {
			return
		}
	}
	t.Fatal("with the shell on, the canary never reached the model: the probe of TestCodexRunsNothingButAicrTools proves nothing")
}
