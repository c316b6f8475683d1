package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/review"
)

// codex is OpenAI's Codex CLI (`codex exec`). It speaks only OpenAI
// Responses and offers an MCP server's tools to the model as one tool of
// type "namespace" (mcp__aicr) holding functions named after the MCP
// tools with dots turned into underscores.
type codex struct{}

// codexServer is the MCP server's name in config.toml; the namespace the
// model sees is "mcp__" + it.
const codexServer = "aicr"

// codexInstructions replaces Codex's own base instructions (a coding
// agent that runs shell commands and edits files) with aicr's system
// prompt; it lives in CODEX_HOME.
const codexInstructions = "aicr-instructions.md"

// Spec: MinVersion is the oldest release the native tests pass with
// (AICR_CODEX_VERSION; also 0.154.0, 0.160.0, 0.165.0, 0.171.0). 0.151.0
// and older offer an update_plan tool, and 0.140.0 refuses [agents]
// enabled = false.
func (codex) Spec() Spec {
	return Spec{
		Kind: KindCodex, Package: "@openai/codex", Version: "0.169.0", MinVersion: "0.152.0",
		Bin: "node_modules/.bin/codex", APIs: []string{llm.APIOpenAIResponses}, ToolNames: review.ToolNamingDotted,
		// The model sees namespace mcp__aicr and function aicr_report_problem;
		// an OpenAI-compatible server that flattens namespaces (as the
		// scripted model server does) shows the two joined by "__".
		Mangle: func(tool string) string {
			return "mcp__" + codexServer + "__" + strings.ReplaceAll(tool, ".", "_")
		},
		Capabilities: bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true,
			IsolatedHome: true, ContextCompaction: "delegated",
			ModelMetadata: map[string]string{"context_window": "injected", "max_output_tokens": "not_applicable", "prices": "not_applicable"}},
		Limits: "OpenAI Responses only (wire_api \"chat\" was removed), so a Chat-only server needs a Responses gateway; " +
			"no setting for max_output_tokens or max_turns (the pass timeout bounds a run); " +
			"[agent.llm] headers_file is not applied; " +
			"usage is reported per Codex turn, not per model request; " +
			"Codex's MCP resource tools (list/read aicr's resources) stay offered",
	}
}

// codexConfig is $CODEX_HOME/config.toml.
type codexConfig struct {
	Model                      string `toml:"model"`
	ModelProvider              string `toml:"model_provider"`
	ModelInstructionsFile      string `toml:"model_instructions_file"`
	ModelContextWindow         int    `toml:"model_context_window,omitzero"`
	ModelAutoCompactTokenLimit int    `toml:"model_auto_compact_token_limit,omitzero"`
	// Nothing the model asks for outside the aicr tools is approved, and
	// the sandbox would refuse writes anyway.
	ApprovalPolicy string `toml:"approval_policy"`
	SandboxMode    string `toml:"sandbox_mode"`
	// Web search is a hosted tool the model server would run; off.
	WebSearch               string `toml:"web_search"`
	CheckForUpdateOnStartup bool   `toml:"check_for_update_on_startup"`
	// Codex tells the model its working directory, shell, sandbox and
	// how to ask for approvals: all about tools a review does not have.
	IncludeEnvironmentContext      bool   `toml:"include_environment_context"`
	IncludePermissionsInstructions bool   `toml:"include_permissions_instructions"`
	IncludeAppsInstructions        bool   `toml:"include_apps_instructions"`
	IncludeCollaborationModeInstrs bool   `toml:"include_collaboration_mode_instructions"`
	Analytics                      toggle `toml:"analytics"`
	Feedback                       toggle `toml:"feedback"`
	History                        struct {
		Persistence string `toml:"persistence"`
	} `toml:"history"`
	Agents toggle `toml:"agents"`
	Tools  struct {
		RequestUserInput toggle `toml:"experimental_request_user_input"`
	} `toml:"tools"`
	// Codex installs its own skills (image generation, skill creation…)
	// into CODEX_HOME and lists them in every request; a review has no
	// tool to use them with.
	Skills struct {
		IncludeInstructions bool   `toml:"include_instructions"`
		Bundled             toggle `toml:"bundled"`
	} `toml:"skills"`
	Features       map[string]bool               `toml:"features"`
	ModelProviders map[string]codexModelProvider `toml:"model_providers"`
	MCPServers     map[string]codexMCPServer     `toml:"mcp_servers"`
}

type toggle struct {
	Enabled bool `toml:"enabled"`
}

type codexModelProvider struct {
	Name    string `toml:"name"`
	BaseURL string `toml:"base_url"`
	// EnvKey names the variable holding the key: the key itself never
	// reaches a file.
	EnvKey            string `toml:"env_key"`
	WireAPI           string `toml:"wire_api"`
	RequestMaxRetries int    `toml:"request_max_retries"`
	StreamMaxRetries  int    `toml:"stream_max_retries"`
}

type codexMCPServer struct {
	Command string   `toml:"command"`
	Args    []string `toml:"args"`
	// Required: without aicr's tools a pass is pointless, so Codex stops
	// before the first model request instead of reviewing without them.
	Required bool `toml:"required"`
	// DefaultToolsApprovalMode "approve": with approval_policy "never"
	// every MCP call would otherwise be refused.
	DefaultToolsApprovalMode string `toml:"default_tools_approval_mode"`
	StartupTimeoutSec        int    `toml:"startup_timeout_sec"`
}

// codexFeaturesOff are the feature flags whose tools or traffic a review
// must not have: the shell (exec_command, write_stdin), image viewing and
// generation, goals, apps and plugins (the latter look up github.com and
// chatgpt.com at start). With these off and the settings of codexConfig
// the request offers the model the aicr namespace and Codex's three MCP
// resource tools (list/read resources of the configured servers: aicr's
// only), which 0.169.0 cannot switch off. A call of any other tool is
// answered "unsupported call" (TestCodexRunsNothingButAicrTools).
var codexFeaturesOff = []string{"shell_tool", "unified_exec", "view_image", "image_generation", "goals", "apps", "plugins",
	"browser_use", "computer_use", "tool_suggest", "shell_snapshot",
	// Hooks run commands of their own on Codex's events; none are
	// configured, and a project's would need trust, but a review runs none.
	"hooks"}

func (codex) Configure(s Setup) (Invocation, error) {
	if len(s.MCPCommand) == 0 {
		return Invocation{}, fmt.Errorf("codex: no MCP server command")
	}
	if s.KeyEnv == "" {
		return Invocation{}, fmt.Errorf("codex: no key variable (Setup.KeyEnv)")
	}
	c := codexConfig{
		Model: s.LLM.Model, ModelProvider: "aicr",
		ModelInstructionsFile: path.Join(s.Home.CodexHome, codexInstructions),
		ApprovalPolicy:        "never", SandboxMode: "read-only", WebSearch: "disabled",
		Features: map[string]bool{},
		ModelProviders: map[string]codexModelProvider{"aicr": {Name: "aicr", BaseURL: strings.TrimRight(s.LLM.BaseURL, "/"),
			EnvKey: s.KeyEnv, WireAPI: "responses", RequestMaxRetries: 1, StreamMaxRetries: 1}},
		MCPServers: map[string]codexMCPServer{codexServer: {Command: s.MCPCommand[0], Args: s.MCPCommand[1:], Required: true,
			DefaultToolsApprovalMode: "approve", StartupTimeoutSec: 30}},
	}
	c.History.Persistence = "none"
	for _, f := range codexFeaturesOff {
		c.Features[f] = false
	}
	if w := s.LLM.ContextWindow; w > 0 {
		c.ModelContextWindow = w
		// Compact before the next answer could overflow the window.
		c.ModelAutoCompactTokenLimit = w * 9 / 10
		if o := s.LLM.MaxOutputTokens; o > 0 && o < w && w-o < c.ModelAutoCompactTokenLimit {
			c.ModelAutoCompactTokenLimit = w - o
		}
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(c); err != nil {
		return Invocation{}, fmt.Errorf("codex: config.toml: %w", err)
	}
	codexDir, err := homeRelative(s.Home.HOME, s.Home.CodexHome)
	if err != nil {
		return Invocation{}, fmt.Errorf("codex: %w", err)
	}
	return Invocation{
		Files: map[string][]byte{
			path.Join(codexDir, "config.toml"):     buf.Bytes(),
			path.Join(codexDir, codexInstructions): []byte(s.System),
		},
		// --strict-config: a key this version does not know (a newer
		// or older CLI than proven) fails the run instead of being
		// ignored, since some of them are what keeps the shell off.
		Args:  []string{"exec", "--json", "--skip-git-repo-check", "--ephemeral", "--strict-config", "--color", "never", "-"},
		Stdin: s.User,
	}, nil
}

// homeRelative is dir relative to home; Invocation.Files are HOME-relative.
func homeRelative(home, dir string) (string, error) {
	home, dir = path.Clean(home), path.Clean(dir)
	if !strings.HasPrefix(dir, home+"/") {
		return "", fmt.Errorf("CODEX_HOME %s is not below HOME %s", dir, home)
	}
	return strings.TrimPrefix(dir, home+"/"), nil
}

// codexEvent is one line of `codex exec --json`.
type codexEvent struct {
	Type    string     `json:"type"`
	Message string     `json:"message"`
	Item    *codexItem `json:"item"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
	Usage *struct {
		InputTokens           int `json:"input_tokens"`
		CachedInputTokens     int `json:"cached_input_tokens"`
		CacheWriteInputTokens int `json:"cache_write_input_tokens"`
		OutputTokens          int `json:"output_tokens"`
	} `json:"usage"`
}

type codexItem struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Message string `json:"message"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Status  string `json:"status"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

// codexOverflow is how Codex reports a context_length_exceeded answer.
const codexOverflow = "ran out of room in the model's context window"

func (codex) Parse(r io.Reader) (Events, error) {
	var ev Events
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), eventCap)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev.Lines++
		var e codexEvent
		if json.Unmarshal(line, &e) != nil {
			ev.Malformed++
			continue
		}
		switch e.Type {
		case "item.completed":
			if e.Item != nil {
				codexItemDone(&ev, e.Item)
			}
		case "turn.completed":
			ev.Turns++
			if e.Usage != nil {
				// OpenAI's input counts its cached parts too.
				read := min(e.Usage.CachedInputTokens, e.Usage.InputTokens)
				write := min(e.Usage.CacheWriteInputTokens, e.Usage.InputTokens-read)
				ev.InputTokens += e.Usage.InputTokens - read - write
				ev.CacheReadTokens += read
				ev.CacheWriteTokens += write
				ev.OutputTokens += e.Usage.OutputTokens
			}
		case "turn.failed":
			ev.Failed = true
			if e.Error != nil {
				codexAPIError(&ev, e.Error.Message)
			}
		case "error":
			// Retries ("Reconnecting... 1/5") and the final refusal; the
			// last one is what stopped the run.
			codexAPIError(&ev, e.Message)
		}
	}
	return ev, sc.Err()
}

func codexItemDone(ev *Events, it *codexItem) {
	switch it.Type {
	case "agent_message":
		ev.FinalText = it.Text
	case "mcp_tool_call":
		if it.Server != codexServer {
			return
		}
		call := ToolCall{Name: it.Tool, Failed: it.Status == "failed"}
		if it.Error != nil {
			call.Error = it.Error.Message
		} else if call.Failed && it.Result != nil {
			var texts []string
			for _, c := range it.Result.Content {
				if c.Text != "" {
					texts = append(texts, c.Text)
				}
			}
			call.Error = strings.Join(texts, "\n")
		}
		if call.Failed && strings.Contains(call.Error, "requires approval") {
			ev.PermissionDenials = append(ev.PermissionDenials, it.Tool)
		}
		ev.ToolCalls = append(ev.ToolCalls, call)
	}
	// Items of type "error" are warnings ("Model metadata for `m` not
	// found"): the run goes on, and turn.failed says when it did not.
}

// codexAPIError reads Codex's error text: the model API's JSON body
// passed through, a status line ("unexpected status 401 Unauthorized:
// …"), or its own words for a context overflow.
func codexAPIError(ev *Events, msg string) {
	msg = strings.TrimSpace(msg)
	if msg == "" || strings.HasPrefix(msg, "Reconnecting...") {
		return
	}
	if strings.Contains(msg, codexOverflow) || strings.Contains(msg, "context_length_exceeded") {
		ev.ContextOverflow = true
	}
	ev.APIError = msg
	if st := codexStatus(msg); st != 0 {
		ev.APIStatus = st
	}
}

// codexStatus finds the HTTP status in Codex's "unexpected status 401
// Unauthorized: …" message.
func codexStatus(msg string) int {
	const marker = "unexpected status "
	i := strings.Index(msg, marker)
	if i < 0 {
		return 0
	}
	var st int
	if _, err := fmt.Sscanf(msg[i+len(marker):], "%d", &st); err != nil {
		return 0
	}
	return st
}

// ParseStderr finds the one failure Codex reports only on stderr: a
// required MCP server (aicr's) that did not start, which ends the run
// before the first model request with nothing on stdout.
func (codex) ParseStderr(stderr string, ev *Events) {
	const marker = "required MCP servers failed to initialize: "
	i := strings.LastIndex(stderr, marker)
	if i < 0 || ev.MCPFailure != "" {
		return
	}
	msg := stderr[i+len(marker):]
	if j := strings.IndexAny(msg, "\r\n"); j >= 0 {
		msg = msg[:j]
	}
	ev.MCPFailure = "did not start: " + strings.TrimSpace(msg)
}
