package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/review"
)

// claudeCode is Claude Code (`claude -p`), speaking Anthropic Messages.
//
// Its stream-json output is one JSON object a line: system/init (tools,
// MCP server status), assistant and user messages (tool_use and
// tool_result blocks), system/api_retry while the API refuses, and a
// final result carrying the totals, the permission denials and the
// API's status.
type claudeCode struct{}

// claudeServer is the MCP server's name in Claude Code's config; it is
// the middle of every tool name the model sees.
const claudeServer = "aicr"

// claudeMaxRetries bounds Claude Code's own retries of a refused API
// request. Its default (10, with backoff) spends about three minutes on a
// wrong key before giving up; the ladder already retries a failed pass.
const claudeMaxRetries = 2

// claudeMinCompactWindow is the smallest CLAUDE_CODE_AUTO_COMPACT_WINDOW
// Claude Code accepts.
const claudeMinCompactWindow = 100_000

func (claudeCode) Spec() Spec {
	return Spec{
		Kind: KindClaudeCode, Package: "@anthropic-ai/claude-code", Version: "2.1.328", MinVersion: "2.1.310",
		Bin: "node_modules/.bin/claude", APIs: []string{llm.APIAnthropic}, ToolNames: review.ToolNamingDotted,
		Mangle: claudeMangle,
		Capabilities: bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true,
			IsolatedHome: true, ContextCompaction: "delegated",
			ModelMetadata: map[string]string{"context_window": "injected", "max_output_tokens": "injected", "prices": "not_applicable"}},
		Limits: "Speaks only Anthropic Messages (api = \"anthropic\"; ANTHROPIC_BASE_URL is base_url without /v1). " +
			"Each request carries a mid-conversation role \"system\" message (its environment notes, the MCP server's instructions): " +
			"the Anthropic API takes it; a server that accepts only user/assistant answers 400 and Claude Code " +
			"resends it folded into the user turn (one wasted request per pass; before 2.1.310 the pass failed). " +
			"No built-in tool is offered (--tools \"\"); only the five aicr tools, approved by name (dontAsk mode). " +
			"Compaction window only from 100k tokens up; a smaller context_window ends in the server's " +
			"prompt-too-long and the ladder's clipped retry. headers_file is not passed on. " +
			"Run natively it also reads /etc/claude-code (managed settings, CLAUDE.md) and CLAUDE.md/AGENTS.md " +
			"of the working directory's parents. For a model name it does not know it sends what Claude's newest models " +
			"take (adaptive thinking, effort, context_management); the server must accept or ignore those fields. " +
			"Reports a made-up cost for such models (not recorded).",
	}
}

// claudeMangle is what Claude Code calls an MCP tool: mcp__<server>__<tool>
// with every character outside [A-Za-z0-9_-] replaced by "_".
func claudeMangle(tool string) string {
	var b strings.Builder
	b.WriteString("mcp__" + claudeServer + "__")
	for _, r := range tool {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// claude*File are HOME-relative files Configure writes.
const (
	claudeMCPFile    = "aicr/claude-mcp.json"
	claudeSystemFile = "aicr/claude-system-prompt.md"
)

func (claudeCode) Configure(s Setup) (Invocation, error) {
	if len(s.MCPCommand) == 0 {
		return Invocation{}, errors.New("claude-code: no MCP server command")
	}
	if s.LLM.Model == "" {
		return Invocation{}, errors.New("claude-code: [agent.llm] model is empty")
	}
	// Claude Code starts its MCP servers with its own environment, the
	// key included; the aicr server needs no key, so it gets none.
	serverEnv := map[string]string{"ANTHROPIC_API_KEY": ""}
	if s.KeyEnv != "" {
		serverEnv[s.KeyEnv] = ""
	}
	mcp, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{claudeServer: map[string]any{
		"type": "stdio", "command": s.MCPCommand[0], "args": s.MCPCommand[1:], "env": serverEnv,
	}}}, "", "  ")
	if err != nil {
		return Invocation{}, err
	}
	allowed := make([]string, 0, len(review.ToolNames))
	for _, t := range review.ToolNames {
		allowed = append(allowed, claudeMangle(t))
	}
	home := s.Home.HOME
	args := []string{"-p", "--output-format", "stream-json", "--verbose",
		"--model", s.LLM.Model,
		"--mcp-config", path.Join(home, claudeMCPFile), "--strict-mcp-config",
		// No built-in tool (Bash, Edit, Read, ...) is offered at all; the
		// aicr tools are the only ones approved, and anything else that
		// would ask is refused, as nobody answers in -p mode.
		"--tools", "",
		"--allowedTools", strings.Join(allowed, ","),
		"--permission-mode", "dontAsk",
		"--system-prompt-file", path.Join(home, claudeSystemFile),
		"--no-session-persistence",
	}
	if s.LLM.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(s.LLM.MaxTurns))
	}
	env := []string{
		"ANTHROPIC_BASE_URL=" + strings.TrimSuffix(strings.TrimSuffix(s.LLM.BaseURL, "/"), "/v1"),
		// Background requests (titles, summaries) would otherwise name a
		// Haiku model the server may not have.
		"ANTHROPIC_DEFAULT_HAIKU_MODEL=" + s.LLM.Model,
		"ANTHROPIC_SMALL_FAST_MODEL=" + s.LLM.Model,
		// Tool search hides MCP tools behind a ToolSearch tool that a
		// model not trained on it never calls: nothing gets reported.
		"ENABLE_TOOL_SEARCH=false",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_AUTO_MEMORY=1",
		"CLAUDE_CODE_MAX_RETRIES=" + strconv.Itoa(claudeMaxRetries),
		// It writes below os.tmpdir() (/tmp/claude-<uid>/...); keep that
		// inside the agent dir, which is writable in the sandbox.
		"CLAUDE_CODE_TMPDIR=" + path.Join(home, "tmp"),
	}
	if s.LLM.MaxOutputTokens > 0 {
		env = append(env, "CLAUDE_CODE_MAX_OUTPUT_TOKENS="+strconv.Itoa(s.LLM.MaxOutputTokens))
	}
	// Claude Code compacts the conversation before it reaches this
	// window. It takes nothing below 100k tokens (it warns and uses 100k):
	// a smaller model runs into the server's prompt-too-long instead,
	// which the ladder answers with a clipped prompt.
	if s.LLM.ContextWindow >= claudeMinCompactWindow {
		env = append(env, "CLAUDE_CODE_AUTO_COMPACT_WINDOW="+strconv.Itoa(s.LLM.ContextWindow))
	}
	return Invocation{
		Files: map[string][]byte{
			claudeMCPFile:    mcp,
			claudeSystemFile: []byte(s.System),
		},
		Args:  args,
		Env:   env,
		KeyAs: []string{"ANTHROPIC_API_KEY"},
		Stdin: s.User,
	}, nil
}

// claudeLine is the envelope of every stream-json line.
type claudeLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
}

// claudeSystem is a system event: init (the MCP servers' status),
// api_retry (a refused API request about to be retried),
// permission_denied (a tool call the permission mode refused).
type claudeSystem struct {
	Model      string `json:"model"`
	MCPServers []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"mcp_servers"`
	ErrorStatus int    `json:"error_status"`
	Error       string `json:"error"`
	ToolName    string `json:"tool_name"`
	ToolUseID   string `json:"tool_use_id"`
}

// claudeMessage is an assistant or user event.
type claudeMessage struct {
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// claudeResult is the last event of a run.
type claudeResult struct {
	IsError        bool   `json:"is_error"`
	NumTurns       int    `json:"num_turns"`
	Result         string `json:"result"`
	TerminalReason string `json:"terminal_reason"`
	// Errors are Claude Code's own words for a failed run ("Reached
	// maximum number of turns (8)").
	Errors         []string `json:"errors"`
	APIErrorStatus int      `json:"api_error_status"`
	Usage          struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	ModelUsage   map[string]struct {
		CostBasis string `json:"costBasis"`
	} `json:"modelUsage"`
	PermissionDenials []struct {
		ToolName  string `json:"tool_name"`
		ToolUseID string `json:"tool_use_id"`
	} `json:"permission_denials"`
}

// claudeParser folds stream-json lines into Events.
type claudeParser struct {
	ev     Events
	calls  map[string]int  // tool_use id → index in ev.ToolCalls
	denied map[string]bool // tool_use ids already in ev.PermissionDenials
}

func (claudeCode) Parse(r io.Reader) (Events, error) {
	p := claudeParser{calls: map[string]int{}, denied: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), eventCap)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		p.ev.Lines++
		if err := p.line(line); err != nil {
			p.ev.Malformed++
		}
	}
	if err := sc.Err(); err != nil {
		return p.ev, fmt.Errorf("claude-code event stream: %w", err)
	}
	return p.ev, nil
}

// line reads one event; an error means it was not what its type says.
func (p *claudeParser) line(line []byte) error {
	var head claudeLine
	if err := json.Unmarshal(line, &head); err != nil {
		return err
	}
	switch head.Type {
	case "system":
		var e claudeSystem
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		p.system(head.Subtype, e)
	case "assistant", "user":
		var e claudeMessage
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		var blocks []claudeBlock
		if err := json.Unmarshal(e.Message.Content, &blocks); err != nil {
			// A user message whose content is a plain string (the
			// prompt echoed back) has no blocks.
			var text string
			if json.Unmarshal(e.Message.Content, &text) == nil {
				return nil
			}
			return err
		}
		p.blocks(head.Type, blocks)
	case "result":
		var e claudeResult
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		p.result(head.Subtype, e)
	}
	return nil
}

func (p *claudeParser) system(subtype string, e claudeSystem) {
	switch subtype {
	case "init":
		if e.Model != "" {
			p.ev.Model = e.Model
		}
		for _, s := range e.MCPServers {
			if s.Name == claudeServer && s.Status != "connected" {
				p.ev.MCPFailure = "MCP server " + s.Name + " " + s.Status
			}
		}
	case "api_retry":
		if e.ErrorStatus != 0 {
			p.ev.APIStatus = e.ErrorStatus
		}
		if e.Error != "" {
			p.ev.APIError = e.Error
		}
	case "permission_denied":
		p.deny(e.ToolName, e.ToolUseID)
	}
}

func (p *claudeParser) deny(tool, id string) {
	if tool == "" || (id != "" && p.denied[id]) {
		return
	}
	p.denied[id] = true
	p.ev.PermissionDenials = append(p.ev.PermissionDenials, tool)
}

func (p *claudeParser) blocks(role string, blocks []claudeBlock) {
	for _, b := range blocks {
		switch {
		case role == "assistant" && b.Type == "text" && strings.TrimSpace(b.Text) != "":
			p.ev.FinalText = b.Text
		case role == "assistant" && b.Type == "tool_use" && strings.HasPrefix(b.Name, "mcp__"+claudeServer+"__"):
			p.calls[b.ID] = len(p.ev.ToolCalls)
			p.ev.ToolCalls = append(p.ev.ToolCalls, ToolCall{Name: b.Name})
		case role == "user" && b.Type == "tool_result" && b.IsError:
			if i, ok := p.calls[b.ToolUseID]; ok {
				p.ev.ToolCalls[i].Failed = true
				p.ev.ToolCalls[i].Error = blockText(b.Content)
			}
		}
	}
}

func (p *claudeParser) result(subtype string, e claudeResult) {
	p.ev.Turns = e.NumTurns
	// Anthropic's input_tokens is the uncached part of the prompt.
	p.ev.InputTokens = e.Usage.InputTokens
	p.ev.CacheReadTokens, p.ev.CacheWriteTokens = e.Usage.CacheReadInputTokens, e.Usage.CacheCreationInputTokens
	p.ev.OutputTokens = e.Usage.OutputTokens
	if claudeKnowsPrices(e) {
		p.ev.CostUSD = e.TotalCostUSD
	}
	for _, d := range e.PermissionDenials {
		p.deny(d.ToolName, d.ToolUseID)
	}
	// Claude Code's own name for the API's prompt-too-long refusal that
	// it could not compact its way out of.
	if e.TerminalReason == "prompt_too_long" {
		p.ev.ContextOverflow = true
	}
	// A run the API refused still has subtype "success": is_error says
	// it failed, api_error_status (or terminal_reason) that the API was
	// why, and result is then Claude Code's account of the refusal. Other
	// failures (error_max_turns, error_during_execution) are no API error.
	if e.IsError || strings.HasPrefix(subtype, "error") {
		p.ev.Failed = true
		p.ev.Reason = subtype
		if e.TerminalReason != "" && e.TerminalReason != "completed" {
			p.ev.Reason = e.TerminalReason
		}
		if len(e.Errors) > 0 {
			p.ev.Reason = strings.Join(e.Errors, "; ")
		}
		if e.APIErrorStatus != 0 || e.TerminalReason == "api_error" || e.TerminalReason == "prompt_too_long" {
			if e.APIErrorStatus != 0 {
				p.ev.APIStatus = e.APIErrorStatus
			}
			if msg := strings.TrimSpace(e.Result); msg != "" {
				p.ev.APIError = msg
			}
		}
	} else if strings.TrimSpace(e.Result) != "" {
		p.ev.FinalText = e.Result
	}
}

// claudeKnowsPrices: for a model it has no price list of, Claude Code
// still reports a cost (costBasis "unknown"), made up from a default
// price; that is not a cost to record.
func claudeKnowsPrices(e claudeResult) bool {
	if len(e.ModelUsage) == 0 {
		return false
	}
	for _, u := range e.ModelUsage {
		if u.CostBasis == "" || u.CostBasis == "unknown" {
			return false
		}
	}
	return true
}

// blockText is a tool_result's content: a string or text blocks.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n")
}
