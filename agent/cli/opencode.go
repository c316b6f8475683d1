package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/review"
)

// openCode is the OpenCode adapter, and with kilo set the Kilo CLI (an
// OpenCode fork with the same config body, flags and events; only the
// names of its config file and variables differ).
type openCode struct{ kilo bool }

// openCodeAgent is the agent aicr defines in the config: its prompt is
// aicr's system prompt instead of the CLI's own coding-assistant one, and
// its permissions allow the aicr tools and nothing else.
const openCodeAgent = "aicr-review"

// openCodeProvider names the model endpoint in the config; the model is
// "<provider>/<model>".
const openCodeProvider = "aicr"

// openCodeServer is the MCP server's name: OpenCode shows its tools to the
// model as <server>_<tool with dots as underscores>.
const openCodeServer = "aicr"

func (o openCode) Spec() Spec {
	s := Spec{
		Kind: KindOpenCode, Package: "opencode-ai", Version: "1.18.33", MinVersion: "1.18.33",
		Bin: "node_modules/.bin/opencode", APIs: []string{llm.APIOpenAIChat}, ToolNames: review.ToolNamingDotted,
		Mangle: func(tool string) string { return openCodeServer + "_" + strings.ReplaceAll(tool, ".", "_") },
		Capabilities: bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true,
			IsolatedHome: true, ContextCompaction: "delegated",
			ModelMetadata: map[string]string{"context_window": "injected", "max_output_tokens": "injected", "prices": "injected"}},
		Limits: "OpenAI Chat Completions only (through its bundled @ai-sdk/openai-compatible); [agent.llm] headers_file is refused (not wired to the provider's headers yet); " +
			"a missing MCP server is not reported in the event stream (the pass records nothing and the ladder repairs it)",
	}
	if o.kilo {
		s.Kind, s.Package, s.Version, s.MinVersion, s.Bin = KindKilo, "@kilocode/cli", "7.7.7", "7.7.7", "node_modules/.bin/kilo"
		s.Limits += "; puts its own short persona paragraph (\"You are Kilo…\") before aicr's system prompt; " +
			"starts several seconds slower than OpenCode (git and sandbox probes before the MCP server starts)"
	}
	return s
}

// envPrefix is the CLI's prefix for its own variables.
func (o openCode) envPrefix() string {
	if o.kilo {
		return "KILO_"
	}
	return "OPENCODE_"
}

// Configure writes the CLI's global config into the isolated
// XDG_CONFIG_HOME and passes the prompt on stdin: `run` appends its
// standard input to the message, and a diff in argv would hit the
// kernel's argument size limit.
func (o openCode) Configure(s Setup) (Invocation, error) {
	if len(s.MCPCommand) == 0 {
		return Invocation{}, fmt.Errorf("%s: no MCP server command", o.Spec().Kind)
	}
	if s.LLM.Model == "" {
		return Invocation{}, fmt.Errorf("%s: agent.llm.model is empty; name the model the server serves", o.Spec().Kind)
	}
	body, err := o.config(s)
	if err != nil {
		return Invocation{}, err
	}
	file := ".config/opencode/opencode.json"
	if o.kilo {
		file = ".config/kilo/kilo.json"
	}
	if s.Home.XDGConfigHome != "" && s.Home.HOME != "" {
		rel, ok := strings.CutPrefix(s.Home.XDGConfigHome, strings.TrimSuffix(s.Home.HOME, "/")+"/")
		if !ok {
			return Invocation{}, fmt.Errorf("%s: XDG_CONFIG_HOME %s is not below HOME %s", o.Spec().Kind, s.Home.XDGConfigHome, s.Home.HOME)
		}
		file = rel + strings.TrimPrefix(file, ".config")
	}
	p := o.envPrefix()
	env := []string{
		p + "DISABLE_MODELS_FETCH=1", p + "DISABLE_AUTOUPDATE=1", p + "DISABLE_SHARE=1",
		p + "DISABLE_DEFAULT_PLUGINS=1", p + "DISABLE_CLAUDE_CODE=1", p + "DISABLE_EXTERNAL_SKILLS=1",
		p + "DISABLE_LSP_DOWNLOAD=1",
		// The agent dir lies inside the run dir: a config file above it
		// (or in a reviewed tree) must not add tools or providers.
		p + "DISABLE_PROJECT_CONFIG=1",
	}
	if o.kilo {
		// Without a limit Kilo retries an unreachable model server for
		// ever (its "offline" state waits for a user); with one, the pass
		// ends in an API error after a few backed-off attempts, as
		// OpenCode's does by default.
		env = append(env, "KILO_SESSION_RETRY_LIMIT=3")
		env = append(env, "KILO_TELEMETRY_LEVEL=off", "KILO_DISABLE_SESSION_INGEST=1", "KILO_DISABLE_CODEBASE_INDEXING=1",
			"KILO_DISABLE_PRESENCE=1")
	}
	return Invocation{
		Files: map[string][]byte{file: body},
		Args:  []string{"run", "--format", "json", "--agent", openCodeAgent, "--title", "aicr-review"},
		Env:   env,
		Stdin: s.User,
	}, nil
}

// config is the CLI's opencode.json / kilo.json. The key is referenced as
// {env:NAME}, never written.
func (o openCode) config(s Setup) ([]byte, error) {
	model := map[string]any{"name": s.LLM.Model, "tool_call": true}
	if s.LLM.ContextWindow > 0 || s.LLM.MaxOutputTokens > 0 {
		// context 0 is "unknown" to the CLI: no compaction threshold.
		model["limit"] = map[string]int{"context": s.LLM.ContextWindow, "output": s.LLM.MaxOutputTokens}
	}
	if s.LLM.PricePerMTokIn > 0 || s.LLM.PricePerMTokOut > 0 {
		// The CLI prices each step with these (USD per million tokens),
		// its cached tokens too (models.dev's cost schema).
		read, write := s.LLM.CachePrices()
		model["cost"] = map[string]float64{"input": s.LLM.PricePerMTokIn, "output": s.LLM.PricePerMTokOut,
			"cache_read": read, "cache_write": write}
	}
	permission := orderedRules{{"*", "deny"}, {openCodeServer + "_*", "allow"}}
	agent := map[string]any{
		"description": "Reviews one change with aicr's tools",
		"mode":        "primary",
		"prompt":      s.System,
		"permission":  permission,
	}
	if s.LLM.MaxTurns > 0 {
		agent["steps"] = s.LLM.MaxTurns
	}
	cfg := map[string]any{
		"$schema":           "https://opencode.ai/config.json",
		"autoupdate":        false,
		"share":             "disabled",
		"snapshot":          false,
		"formatter":         false,
		"lsp":               false,
		"model":             openCodeProvider + "/" + s.LLM.Model,
		"small_model":       openCodeProvider + "/" + s.LLM.Model,
		"default_agent":     openCodeAgent,
		"enabled_providers": []string{openCodeProvider},
		"provider": map[string]any{openCodeProvider: map[string]any{
			"npm":  "@ai-sdk/openai-compatible",
			"name": openCodeProvider,
			"options": map[string]any{
				"baseURL": strings.TrimSuffix(s.LLM.BaseURL, "/"),
				"apiKey":  "{env:" + s.KeyEnv + "}",
			},
			"models": map[string]any{s.LLM.Model: model},
		}},
		"mcp": map[string]any{openCodeServer: map[string]any{
			"type": "local", "enabled": true, "command": s.MCPCommand,
			// The CLI hands its whole environment to the server; the key
			// is the CLI's alone.
			"environment": map[string]string{s.KeyEnv: ""},
		}},
		"permission": permission,
		"agent":      map[string]any{openCodeAgent: agent},
	}
	if o.kilo {
		// Kilo's own gateway provider fetches its model list from api.kilo.ai.
		cfg["disabled_providers"] = []string{"kilo"}
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// orderedRules is a permission object whose keys keep their order: the
// CLI applies the last matching rule, so the catch-all deny comes first.
type orderedRules [][2]string

func (r orderedRules) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[0])
		v, _ := json.Marshal(kv[1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// openCodeEvent is one line of `run --format json`: step_start,
// tool_use, text and step_finish carry a message part; error carries the
// session's error (APIError, ContextOverflowError, ProviderAuthError...).
type openCodeEvent struct {
	Type string `json:"type"`
	Part struct {
		Tool   string `json:"tool"`
		Text   string `json:"text"`
		Reason string `json:"reason"`
		State  struct {
			Status string          `json:"status"`
			Error  json.RawMessage `json:"error"`
		} `json:"state"`
		Tokens struct {
			Input  int `json:"input"`
			Output int `json:"output"`
			Cache  struct {
				Read  int `json:"read"`
				Write int `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
		Cost float64 `json:"cost"`
	} `json:"part"`
	Error struct {
		Name string `json:"name"`
		Data struct {
			Message    string `json:"message"`
			StatusCode int    `json:"statusCode"`
		} `json:"data"`
	} `json:"error"`
}

// openCodeDenials are the tool errors the CLI gives for a call its
// permissions (or its tool list) did not allow.
var openCodeDenials = []string{
	"prevents you from using this specific tool call",
	"rejected permission to use this specific tool call",
	"Model tried to call unavailable tool",
}

// Parse reads the event stream. A step_finish is one model round trip;
// there is no final result event, so a failure is an error event.
func (o openCode) Parse(r io.Reader) (Events, error) {
	var ev Events
	aicrTool := openCodeServer + "_"
	known := map[string]bool{}
	for _, name := range seenNames(o.Spec().Mangle) {
		known[name] = true
	}
	err := openCodeLines(r, func(line []byte) {
		ev.Lines++
		var e openCodeEvent
		if err := json.Unmarshal(line, &e); err != nil {
			ev.Malformed++
			return
		}
		switch e.Type {
		case "step_finish":
			ev.Turns++
			t := e.Part.Tokens
			// The CLI counts cached prompt tokens apart, as they are billed.
			ev.InputTokens += t.Input
			ev.CacheReadTokens += t.Cache.Read
			ev.CacheWriteTokens += t.Cache.Write
			ev.OutputTokens += t.Output
			ev.CostUSD += e.Part.Cost
		case "text":
			if strings.TrimSpace(e.Part.Text) != "" {
				ev.FinalText = e.Part.Text
			}
		case "tool_use":
			if !strings.HasPrefix(e.Part.Tool, aicrTool) {
				// A tool outside aicr's (the model tried the CLI's shell or
				// editor): refused by the config, not a failure of the pass.
				return
			}
			call := ToolCall{Name: e.Part.Tool}
			if e.Part.State.Status == "error" {
				call.Failed, call.Error = true, openCodeErrorText(e.Part.State.Error)
				// A misspelt name is the model's slip; one of aicr's own
				// tools refused or missing is the config's.
				if !known[e.Part.Tool] {
					ev.ToolCalls = append(ev.ToolCalls, call)
					return
				}
				for _, d := range openCodeDenials {
					if strings.Contains(call.Error, d) {
						ev.PermissionDenials = append(ev.PermissionDenials, e.Part.Tool)
						break
					}
				}
			}
			ev.ToolCalls = append(ev.ToolCalls, call)
		case "error":
			ev.Failed = true
			d := e.Error.Data
			switch e.Error.Name {
			case "ContextOverflowError":
				ev.ContextOverflow = true
			case "ProviderAuthError":
				ev.APIStatus, ev.APIError = http.StatusUnauthorized, d.Message
			default:
				if d.StatusCode != 0 {
					ev.APIStatus = d.StatusCode
				}
				msg := d.Message
				if msg == "" {
					msg = e.Error.Name
				}
				ev.APIError = msg
			}
		}
	})
	return ev, err
}

// openCodeLines calls fn with every non-empty line of r; a line may be as
// long as the whole capped event log.
func openCodeLines(r io.Reader, fn func([]byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), eventCap+1)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			fn(line)
		}
	}
	return sc.Err()
}

// openCodeErrorText is a tool error that the CLI gives as a string or an object.
func openCodeErrorText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
