package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/review"
)

// geminiCLI is Gemini CLI (@google/gemini-cli). It speaks only the Gemini
// API; aicr's tools reach the model as mcp_aicr_<tool> with
// --tool-names underscore. 0.53.0 is the oldest release that passes the
// whole suite: 0.52.0 and older (0.51.0, 0.47.0 tried) send the model a
// ~2 KB prompt when a large one comes on stdin.
type geminiCLI struct{}

// geminiServer is the name of aicr's MCP server in Gemini CLI's
// settings; the model sees its tools as mcp_<server>_<tool>.
const geminiServer = "aicr"

// geminiSystemFile holds the pass's system prompt below HOME;
// GEMINI_SYSTEM_MD makes it replace Gemini CLI's own, which describes
// shell and file-editing tools the review does not have.
const geminiSystemFile = ".gemini/system.md"

func (geminiCLI) Spec() Spec {
	return Spec{
		Kind: KindGeminiCLI, Package: "@google/gemini-cli", Version: "0.61.0", MinVersion: "0.53.0",
		Bin: "node_modules/.bin/gemini", APIs: []string{llm.APIGemini}, ToolNames: review.ToolNamingUnderscore,
		Mangle: func(tool string) string {
			return "mcp_" + geminiServer + "_" + strings.ReplaceAll(tool, ".", "_")
		},
		Capabilities: bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true,
			IsolatedHome: true, ContextCompaction: "delegated",
			ModelMetadata: map[string]string{"context_window": "not_applicable", "max_output_tokens": "injected", "prices": "not_applicable"}},
		Limits: "Gemini API only (base_url is the server root); [agent.llm] context_window has no setting in the CLI, which assumes " +
			"1M tokens for a model it does not know and ends a run it thinks would overflow without a signal; " +
			"a missing MCP server shows only on stderr (nothing recorded, the ladder repairs)",
	}
}

func (geminiCLI) Configure(s Setup) (Invocation, error) {
	if s.LLM.API != llm.APIGemini {
		return Invocation{}, fmt.Errorf("gemini-cli speaks the Gemini API only; set [agent.llm] api = %q (got %q)", llm.APIGemini, s.LLM.API)
	}
	if len(s.MCPCommand) == 0 {
		return Invocation{}, errors.New("gemini-cli: no MCP server command")
	}
	settings := map[string]any{
		"security": map[string]any{
			"auth": map[string]any{"selectedType": "gemini-api-key"},
			// Gemini CLI drops variables named like secrets from what its
			// children (the MCP server) inherit; the key's variable is
			// named here in case its name does not look like one.
			"environmentVariableRedaction": map[string]any{"enabled": true, "blocked": []string{s.KeyEnv, "GEMINI_API_KEY"}},
		},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false, "logPrompts": false},
		"general": map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false,
			"checkpointing": map[string]any{"enabled": false}},
		// The core list is an allowlist: only built-in tools it names are
		// registered (it names none), and the policy engine denies every
		// tool it does not name, so the aicr tools must be in it.
		"tools":  map[string]any{"core": geminiCoreTools(s.SeenName)},
		"skills": map[string]any{"enabled": false},
		"model":  map[string]any{"maxSessionTurns": s.LLM.MaxTurns},
		// max_output_tokens reaches the request through an override of
		// the configured model's generation settings.
		"modelConfigs": map[string]any{"customOverrides": []any{map[string]any{
			"match":       map[string]any{"model": s.LLM.Model},
			"modelConfig": map[string]any{"generateContentConfig": map[string]any{"maxOutputTokens": s.LLM.MaxOutputTokens}},
		}}},
		// Without trust, headless runs leave the server's tools out of
		// the request altogether.
		"mcpServers": map[string]any{geminiServer: map[string]any{
			"command": s.MCPCommand[0], "args": s.MCPCommand[1:], "trust": true,
		}},
	}
	settingsJSON, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return Invocation{}, err
	}
	// Gemini CLI adds /v1beta/models/... to the server root itself; a
	// base_url copied with the version would double it.
	base := strings.TrimRight(s.LLM.BaseURL, "/")
	for _, version := range []string{"/v1beta", "/v1"} {
		base = strings.TrimSuffix(base, version)
	}
	return Invocation{
		Files: map[string][]byte{
			".gemini/settings.json": settingsJSON,
			geminiSystemFile:        []byte(s.System),
		},
		// The prompt goes on stdin (read up to 8 MiB): an argument is
		// limited to 128 KiB, and a large diff is longer.
		Args: []string{"-m", s.LLM.Model, "-o", "stream-json"},
		Env: []string{
			"GOOGLE_GEMINI_BASE_URL=" + base,
			"GEMINI_CLI_TRUST_WORKSPACE=true",
			"GEMINI_SYSTEM_MD=" + path.Join(s.Home.HOME, geminiSystemFile),
			// On an API error Gemini CLI writes a report holding the whole
			// request (the prompt, the diff) to the temp dir: it stays in
			// the run's HOME, not in the host's /tmp.
			"TMPDIR=" + s.Home.XDGCacheHome,
		},
		KeyAs: []string{"GEMINI_API_KEY"},
		Stdin: s.User,
	}, nil
}

// geminiCoreTools are the names the model may call: aicr's tools as
// Gemini CLI names them.
func geminiCoreTools(seen func(string) string) []string {
	if seen == nil {
		seen = geminiCLI{}.Spec().Mangle
	}
	names := make([]string, 0, len(review.ToolNames))
	for _, t := range review.ToolNames {
		names = append(names, seen(t))
	}
	return names
}

// geminiEvent is one line of Gemini CLI's -o stream-json output.
type geminiEvent struct {
	Type     string          `json:"type"`
	Model    string          `json:"model"`
	Role     string          `json:"role"`
	Content  string          `json:"content"`
	Delta    bool            `json:"delta"`
	ToolName string          `json:"tool_name"`
	ToolID   string          `json:"tool_id"`
	Status   string          `json:"status"`
	Error    *geminiEventErr `json:"error"`
	Stats    *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		// Cached is the part of input_tokens read from the implicit cache.
		Cached int `json:"cached"`
	} `json:"stats"`
}

type geminiEventErr struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Parse reads the stream-json events: init, message (user; assistant as
// deltas), tool_use, tool_result and one result, whose error is the
// model API's refusal or the CLI's own reason to stop (the turn limit, a
// fatal tool error). Its error events (a blocked answer) end no run by
// themselves: a run that recorded nothing after one is for the ladder to
// repair. The stream reports no turn count, so Turns counts the
// model's answers: each run of assistant text or tool calls that follows
// the prompt or a tool result.
func (geminiCLI) Parse(r io.Reader) (Events, error) {
	var ev Events
	prefix := geminiCLI{}.Spec().Mangle("")
	calls := map[string]int{} // tool_id → index in ev.ToolCalls
	names := map[string]string{}
	var text strings.Builder
	inTurn := false
	err := geminiLines(r, func(line []byte) {
		var e geminiEvent
		if json.Unmarshal(line, &e) != nil {
			ev.Malformed++
			return
		}
		ev.Lines++
		switch e.Type {
		case "init":
			ev.Model = e.Model
		case "message":
			if e.Role != "assistant" {
				inTurn = false
				return
			}
			if !inTurn {
				ev.Turns++
				inTurn = true
				text.Reset()
			}
			text.WriteString(e.Content)
		case "tool_use":
			if !inTurn {
				ev.Turns++
				inTurn = true
				text.Reset()
			}
			names[e.ToolID] = e.ToolName
			if strings.HasPrefix(e.ToolName, prefix) {
				calls[e.ToolID] = len(ev.ToolCalls)
				ev.ToolCalls = append(ev.ToolCalls, ToolCall{Name: e.ToolName})
			}
		case "tool_result":
			inTurn = false
			i, ok := calls[e.ToolID]
			if !ok || e.Status == "success" {
				return
			}
			ev.ToolCalls[i].Failed = true
			if e.Error != nil {
				ev.ToolCalls[i].Error = geminiToolError(e.Error.Message)
				switch e.Error.Type {
				case "policy_violation", "permission_denied", "tool_not_registered":
					// The CLI itself would not run an aicr tool.
					ev.PermissionDenials = append(ev.PermissionDenials, names[e.ToolID])
				}
			}
		case "result":
			if e.Stats != nil {
				cached := min(e.Stats.Cached, e.Stats.InputTokens)
				ev.InputTokens, ev.CacheReadTokens, ev.OutputTokens = e.Stats.InputTokens-cached, cached, e.Stats.OutputTokens
			}
			if e.Status != "error" {
				return
			}
			ev.Failed = true
			switch {
			case e.Error == nil:
			case strings.Contains(e.Error.Message, "API Error"):
				ev.APIError, ev.APIStatus, ev.ContextOverflow = geminiAPIError(e.Error.Message)
			case e.Error.Type == "FatalTurnLimitedError":
				// Its message points at settings.json, which aicr writes.
				ev.Reason = "reached the turn limit ([agent.llm] max_turns)"
			default:
				ev.Reason = strings.TrimSpace(e.Error.Type + ": " + e.Error.Message)
			}
		}
	})
	ev.FinalText = strings.TrimSpace(text.String())
	return ev, err
}

// geminiAPIError reads the refusal Gemini CLI reports as
// "[API Error: <google.rpc.Status JSON>]". Google refuses a wrong key
// with 400 INVALID_ARGUMENT and reason API_KEY_INVALID where other APIs
// answer 401, so that reason is reported as 401; a prompt that does not
// fit is a 400 whose message counts the input tokens.
func geminiAPIError(msg string) (text string, status int, overflow bool) {
	text = msg
	body := msg
	if i := strings.Index(body, "{"); i >= 0 {
		body = body[i:]
	}
	if j := strings.LastIndex(body, "}"); j >= 0 {
		body = body[:j+1]
	}
	var st struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
			Details []struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &st) == nil && st.Error.Code != 0 {
		status = st.Error.Code
		text = fmt.Sprintf("%d %s: %s", st.Error.Code, st.Error.Status, st.Error.Message)
		for _, d := range st.Error.Details {
			if d.Reason == "API_KEY_INVALID" {
				status = 401
			}
		}
	}
	lower := strings.ToLower(msg)
	overflow = strings.Contains(lower, "input token count") && strings.Contains(lower, "exceeds the maximum number of tokens")
	return text, status, overflow
}

// geminiToolError is aicr's refusal ("CODE: message") when the CLI's
// message carries the tool's response, else the message itself.
func geminiToolError(msg string) string {
	_, resp, ok := strings.Cut(msg, " with response: ")
	if !ok {
		return msg
	}
	var parts []struct {
		FunctionResponse struct {
			Response struct {
				StructuredContent review.ToolError `json:"structuredContent"`
			} `json:"response"`
		} `json:"functionResponse"`
	}
	if json.Unmarshal([]byte(resp), &parts) != nil || len(parts) == 0 || parts[0].FunctionResponse.Response.StructuredContent.Code == "" {
		return msg
	}
	te := parts[0].FunctionResponse.Response.StructuredContent
	return te.Code + ": " + te.Message
}

// geminiLines calls fn with each non-blank line of r. Lines are read
// whole, however long: the echoed prompt is one line.
func geminiLines(r io.Reader, fn func([]byte)) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			fn(line)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
