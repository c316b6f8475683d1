package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/review"
)

// qwenCode is the Qwen Code adapter: `qwen "<prompt>" -o stream-json`
// with $HOME/.qwen/settings.json, speaking Chat Completions through its
// "openai" auth type.
type qwenCode struct{}

// qwenToolPrefix is how Qwen Code names the tools of the MCP server
// called "aicr": mcp__<server>__<tool>.
const qwenToolPrefix = "mcp__aicr__"

func (qwenCode) Spec() Spec {
	return Spec{
		Kind: KindQwenCode, Package: "@qwen-code/qwen-code", Version: "0.24.4", MinVersion: "0.24.4",
		Bin: "node_modules/.bin/qwen", APIs: []string{llm.APIOpenAIChat}, ToolNames: review.ToolNamingUnderscore,
		Mangle: qwenMangle,
		Capabilities: bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true,
			IsolatedHome: true, ContextCompaction: "delegated",
			ModelMetadata: map[string]string{"context_window": "injected", "max_output_tokens": "injected", "prices": "not_applicable"}},
		Limits: "Chat Completions only (its \"openai\" auth type). The user prompt reaches it as an @file " +
			"reference (an inline diff gets its @@ hunk headers rewritten), so the run dir path must not contain " +
			"whitespace. Its own tools, skills and context files are switched off: the model sees only the aicr " +
			"tools. A missing MCP server shows only as \"disconnected\" (exit 0). It compacts its chat itself " +
			"once context_window is set, and refuses a prompt over it before sending.",
	}
}

// qwenMangle: Qwen Code offers MCP tools as mcp__<server>__<tool>. The
// server runs with --tool-names underscore because a dotted name gets a
// hash suffix (mcp__aicr__aicr_report_problem_0ldqi69).
func qwenMangle(tool string) string {
	return qwenToolPrefix + strings.ReplaceAll(tool, ".", "_")
}

// qwenDenied are Qwen Code 0.24.4's own tools. Denied tools are not
// registered, so the model is never offered them; a call it makes anyway
// is refused ("… permission was declined. Matching deny rule"). tools.core
// additionally disables every built-in file, shell and web tool a later
// version adds, since it lists only aicr tools. tool_search and tool_call
// are the deferred-tool bridge: with them the aicr tools would be hidden
// behind a search the model has to know to make.
var qwenDenied = []string{
	"run_shell_command", "monitor", "write_file", "edit", "notebook_edit", "web_fetch", "web_search",
	"read_file", "zoom_image", "glob", "grep_search", "list_directory", "read_mcp_resource", "todo_write",
	"save_memory", "lsp", "cron_create", "cron_list", "cron_delete", "loop_wakeup", "create_sub_session",
	"agent", "send_message", "list_agents", "report_findings", "skill", "enter_worktree", "exit_worktree",
	"record_artifact", "task_stop", "get_goal", "update_goal", "ask_user_question", "enter_plan_mode",
	"exit_plan_mode", "workflow", "tool_search", "tool_call",
}

// qwenNoContextFile is the only context file name Qwen Code looks for.
const qwenNoContextFile = "AICR-NO-CONTEXT-FILES.md"

// qwenSystemFile holds aicr's system prompt below HOME; QWEN_SYSTEM_MD
// makes Qwen Code use it instead of its own coding-agent prompt.
const qwenSystemFile = ".qwen/aicr-system.md"

func (qwenCode) Configure(s Setup) (Invocation, error) {
	if len(s.MCPCommand) == 0 {
		return Invocation{}, errors.New("qwen-code: no MCP server command")
	}
	if s.UserFile == "" {
		return Invocation{}, errors.New("qwen-code: no user prompt file")
	}
	if strings.ContainsAny(s.UserFile, " \t\n") {
		// An @reference ends at whitespace: the model would get the
		// prompt's path cut short and no change to review.
		return Invocation{}, fmt.Errorf("qwen-code: the prompt file path %q contains whitespace, which Qwen Code's @file reference cannot carry; use a run directory without spaces", s.UserFile)
	}
	if s.AgentDir != "" && !strings.HasPrefix(s.UserFile, strings.TrimSuffix(s.AgentDir, "/")+"/") {
		// Qwen Code reads @files only inside its workspace (the agent dir).
		return Invocation{}, fmt.Errorf("qwen-code: the prompt file %s is outside the agent dir %s, where Qwen Code cannot read it", s.UserFile, s.AgentDir)
	}
	aicrTools := make([]string, 0, len(review.ToolNames))
	for _, t := range review.ToolNames {
		aicrTools = append(aicrTools, qwenMangle(t))
	}
	// One retry: the ladder retries passes itself, and a 401 must not sit
	// in Qwen Code's backoff.
	gen := map[string]any{"maxRetries": 1}
	if s.LLM.ContextWindow > 0 {
		gen["contextWindowSize"] = s.LLM.ContextWindow
	}
	if s.LLM.MaxOutputTokens > 0 {
		gen["samplingParams"] = map[string]any{"max_tokens": s.LLM.MaxOutputTokens}
	}
	settings := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "openai"}},
		"model": map[string]any{
			"name": s.LLM.Model, "generationConfig": gen,
			// The workspace listing would be the agent dir's, of no use
			// to a review and paid for in tokens.
			"skipStartupContext": true,
		},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false},
		// Auto-memory runs an extra model request after the turn as a
		// sub-agent with read, shell and write tools.
		"memory": map[string]any{"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
		"tools": map[string]any{
			"toolSearch": map[string]any{"enabled": false},
			// "default" refuses, headless, every call that would need a
			// confirmation; the aicr server is trusted below, so its
			// calls need none. The default "auto" asks the model itself
			// (a classifier request) whether a call may run.
			"approvalMode": "default",
			"core":         aicrTools,
			// The prompt file is read whole: Qwen Code otherwise cuts an
			// @file at 1000 lines, and aicr already fitted it to the
			// context window.
			"truncateToolOutputLines":     -1,
			"truncateToolOutputThreshold": -1,
		},
		"permissions": map[string]any{"deny": qwenDenied},
		// Qwen Code would load AGENTS.md and QWEN.md from the agent dir
		// into its system prompt, outside aicr's prompt (and its budget):
		// the instruction layers are already in QWEN_SYSTEM_MD. No file
		// of this name is ever written.
		"context": map[string]any{"fileName": []string{qwenNoContextFile}},
		// The skill tool is denied; without this every request would
		// still list Qwen Code's bundled skills to the model.
		"skills": map[string]any{"disabledLevels": []string{"bundled", "user", "project", "extension"}},
		"mcpServers": map[string]any{"aicr": map[string]any{
			"command": s.MCPCommand[0], "args": s.MCPCommand[1:], "trust": true,
		}},
	}
	if s.LLM.MaxTurns > 0 {
		// [agent.llm] max_turns: a headless run counts each model round
		// trip against it (0 would stop before the first).
		settings["model"].(map[string]any)["maxSessionTurns"] = s.LLM.MaxTurns
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return Invocation{}, fmt.Errorf("qwen-code: settings: %w", err)
	}
	// The user prompt goes as an @file reference: Qwen Code's @-parser
	// rewrites every "@@" hunk header of a prompt given inline (on argv
	// or stdin), while a referenced file is inlined intact.
	prompt := "Review the change as the instructions say. The change, its diff and your task: @" + s.UserFile
	return Invocation{
		Files: map[string][]byte{".qwen/settings.json": b, qwenSystemFile: []byte(s.System)},
		Args:  []string{prompt, "--output-format", "stream-json"},
		Env: []string{
			"OPENAI_BASE_URL=" + s.LLM.BaseURL, "OPENAI_MODEL=" + s.LLM.Model,
			"QWEN_SYSTEM_MD=" + path.Join(s.Home.HOME, qwenSystemFile),
			"QWEN_USAGE_STATISTICS_ENABLED=false", "QWEN_DISABLE_AUTO_TITLE=1",
		},
		KeyAs: []string{"OPENAI_API_KEY"},
	}, nil
}

// qwenEvent is one line of `qwen -o stream-json`, which follows Claude
// Code's stream-json: system/init, assistant and user messages, result.
type qwenEvent struct {
	Type       string   `json:"type"`
	Subtype    string   `json:"subtype"`
	Model      string   `json:"model"`
	Tools      []string `json:"tools"`
	MCPServers []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"mcp_servers"`
	Message struct {
		Model   string `json:"model"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			ToolUseID string          `json:"tool_use_id"`
			IsError   bool            `json:"is_error"`
			Content   json.RawMessage `json:"content"`
		} `json:"content"`
		Usage qwenUsage `json:"usage"`
	} `json:"message"`
	IsError           bool      `json:"is_error"`
	NumTurns          int       `json:"num_turns"`
	Result            string    `json:"result"`
	Usage             qwenUsage `json:"usage"`
	PermissionDenials []struct {
		ToolName string `json:"tool_name"`
	} `json:"permission_denials"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// qwenUsage is the CLI's usage; its input_tokens is the whole prompt
// (Gemini's promptTokenCount), the cached parts included.
type qwenUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}

// split is u's prompt as billed: uncached, read from and written to the
// cache.
func (u qwenUsage) split() (in, read, write int) {
	read = min(u.CacheReadInputTokens, u.InputTokens)
	write = min(u.CacheCreationInputTokens, u.InputTokens-read)
	return u.InputTokens - read - write, read, write
}

// qwenAPIError is how Qwen Code words a refusal of the model API, in the
// assistant text and in the result's error: "[API Error: 401 Incorrect
// API key provided: …]". Transport failures carry no status.
var qwenAPIError = regexp.MustCompile(`^\[API Error: (?:(\d{3}) )?(.*)\]$`)

func (qwenCode) Parse(r io.Reader) (Events, error) {
	var ev Events
	var sawResult bool
	var turns, in, out, read, write int
	callIndex := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), eventCap)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		ev.Lines++
		var e qwenEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			ev.Malformed++
			continue
		}
		switch e.Type {
		case "system":
			if e.Subtype != "init" {
				continue
			}
			ev.Model = e.Model
			ev.MCPFailure = qwenMCPFailure(e)
		case "assistant":
			if e.Message.Model != "" {
				ev.Model = e.Message.Model
			}
			turns++
			i, r, w := e.Message.Usage.split()
			in, read, write = in+i, read+r, write+w
			out += e.Message.Usage.OutputTokens
			for _, c := range e.Message.Content {
				switch c.Type {
				case "text":
					if qwenAPIError.MatchString(strings.TrimSpace(c.Text)) {
						// The CLI's error report, not the model's prose.
						continue
					}
					if t := strings.TrimSpace(c.Text); t != "" {
						ev.FinalText = t
					}
				case "tool_use":
					if strings.HasPrefix(c.Name, qwenToolPrefix) {
						callIndex[c.ID] = len(ev.ToolCalls)
						ev.ToolCalls = append(ev.ToolCalls, ToolCall{Name: c.Name})
					}
				}
			}
		case "user":
			for _, c := range e.Message.Content {
				i, ok := callIndex[c.ToolUseID]
				if c.Type != "tool_result" || !ok || !c.IsError {
					continue
				}
				ev.ToolCalls[i].Failed = true
				ev.ToolCalls[i].Error = qwenClip(qwenContentText(c.Content), 500)
			}
		case "result":
			sawResult = true
			if e.NumTurns > 0 {
				turns = e.NumTurns
			}
			if e.Usage.InputTokens > 0 || e.Usage.OutputTokens > 0 {
				in, read, write = e.Usage.split()
				out = e.Usage.OutputTokens
			}
			for _, d := range e.PermissionDenials {
				// Only a refused aicr tool is a misconfiguration; the
				// CLI's own tools are refused on purpose.
				if strings.HasPrefix(d.ToolName, qwenToolPrefix) {
					ev.PermissionDenials = append(ev.PermissionDenials, d.ToolName)
				}
			}
			if e.IsError || e.Subtype != "success" {
				ev.Failed, ev.Reason = true, e.Subtype
				msg := e.Subtype
				if e.Error != nil && e.Error.Message != "" {
					msg = e.Error.Message
				}
				qwenExplainError(&ev, msg)
			}
		}
	}
	ev.Turns, ev.InputTokens, ev.OutputTokens = turns, in, out
	ev.CacheReadTokens, ev.CacheWriteTokens = read, write
	if err := sc.Err(); err != nil {
		return ev, fmt.Errorf("qwen-code event stream: %w", err)
	}
	if !sawResult && ev.Lines > 0 {
		return ev, errors.New("qwen-code event stream ended without a result event")
	}
	return ev, nil
}

// qwenMCPFailure says why the aicr server was not usable: Qwen Code
// reports a server that did not start as "disconnected" and carries on
// with its own tools.
func qwenMCPFailure(e qwenEvent) string {
	for _, s := range e.MCPServers {
		if s.Name == "aicr" && s.Status != "connected" {
			return s.Status
		}
	}
	for _, s := range e.MCPServers {
		if s.Name == "aicr" {
			for _, t := range e.Tools {
				if strings.HasPrefix(t, qwenToolPrefix) {
					return ""
				}
			}
			return "connected, but none of its tools were offered to the model"
		}
	}
	return "not configured"
}

// qwenExplainError reads the status and the overflow signal out of the
// CLI's error text.
func qwenExplainError(ev *Events, msg string) {
	msg = strings.TrimSpace(msg)
	text := msg
	if m := qwenAPIError.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			ev.APIStatus, _ = strconv.Atoi(m[1])
		}
		text = m[2]
	}
	ev.APIError = qwenClip(text, 500)
	if qwenOverflow(ev.APIStatus, text) {
		ev.ContextOverflow = true
	}
}

// qwenOverflow recognises "prompt too long": the CLI's own refusal to
// send a prompt over contextWindowSize (no status), or the server's
// message in the wordings of OpenAI, vLLM, Ollama and llama.cpp, which
// the CLI passes through (400; 413 or 422 from some gateways).
func qwenOverflow(status int, msg string) bool {
	if status != 0 && status != 400 && status != 413 && status != 422 {
		return false
	}
	m := strings.ToLower(msg)
	for _, s := range []string{"context_length_exceeded", "maximum context length", "context length", "context window",
		"prompt is too long", "too many tokens", "exceeds the context",
		// Qwen Code's own check before sending, against
		// contextWindowSize: "Context is too large to send safely after
		// automatic compression. Estimated prompt tokens: …".
		"context is too large"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// qwenContentText is a tool result's content: a string, or text blocks.
func qwenContentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		parts := make([]string, 0, len(blocks))
		for _, b := range blocks {
			parts = append(parts, b.Text)
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

func qwenClip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
