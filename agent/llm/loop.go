package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/review"
)

// toolExecutor runs one tool call; review.ToolSession is the real one.
type toolExecutor interface {
	Call(ctx context.Context, name string, args json.RawMessage) (text string, isError bool)
	Err() error
}

// toolSet is the five aicr tools under the names a provider accepts
// (function names may not contain dots), and the way back.
type toolSet struct {
	tools []Tool
	// offered maps the canonical name to the name the model sees.
	offered map[string]string
	// canonical maps the name the model sees back.
	canonical map[string]string
}

func newToolSet(specs []review.ToolSpec) toolSet {
	ts := toolSet{offered: map[string]string{}, canonical: map[string]string{}}
	for _, s := range specs {
		name := review.UnderscoreToolName(s.Name)
		ts.tools = append(ts.tools, Tool{Name: name, Description: s.Description, Schema: s.Schema})
		ts.offered[s.Name] = name
		ts.canonical[name] = s.Name
	}
	return ts
}

// resolve maps a called name back to the canonical tool. A name the model
// invented is passed on as it is: the executor refuses it with an envelope
// the model can learn from.
func (ts toolSet) resolve(name string) string {
	if c, ok := ts.canonical[name]; ok {
		return c
	}
	if c, ok := review.CanonicalToolName(name); ok {
		return c
	}
	return name
}

// loop is one pass's conversation: ask, execute the calls, answer them,
// until the model stops calling tools, ends the review, or runs out of
// turns.
type loop struct {
	model           Model
	exec            toolExecutor
	tools           toolSet
	maxTurns        int
	maxOutputTokens int
	log             *slog.Logger
	// guard, when set, is asked before every turn whether to send it
	// (guard.go: the per-review caps and the context window).
	guard turnGuard
}

// run drives the conversation. The returned Stats are valid with an error
// too: a pass that failed half way still cost what it cost.
func (l *loop) run(ctx context.Context, system string, user Message) (pass.Stats, error) {
	stats := pass.Stats{Agent: Kind}
	msgs := []Message{user}
	// final is the latest assistant prose: the ladder normalizes the
	// model's closing words ("no problems found"), not its running notes.
	var final string
	// empty counts the answers in a row that had no choices.
	empty := 0
	for turn := 1; ; turn++ {
		if turn > l.maxTurns {
			reason := fmt.Sprintf("aicr stopped the pass after %d model turns (agent.llm.max_turns) while the model was still calling tools", l.maxTurns)
			l.log.Warn("llm pass stopped at max_turns", "turns", l.maxTurns)
			stats.Text = joinProse(final, reason)
			return stats, nil
		}
		req := Request{System: system, Messages: msgs, Tools: l.tools.tools, MaxOutputTokens: l.maxOutputTokens}
		if l.guard != nil {
			if stop, why := l.guard(stats, req); stop != "" {
				l.log.Warn("llm pass stopped before its next turn", "stop", stop, "turns", stats.Turns)
				stats.Stop, stats.Text = stop, joinProse(final, why)
				return stats, nil
			}
		}
		resp, err := l.model.Turn(ctx, req)
		if errors.Is(err, ErrEmptyAnswer) && empty < maxEmptyAnswers && ctx.Err() == nil {
			// A gateway or an overloaded server answered with nothing;
			// asking again is cheap, failing the pass for it is not.
			empty++
			l.log.Warn("llm turn answered with no choices; asking again", "turn", turn, "attempt", empty)
			turn--
			continue
		}
		empty = 0
		if err != nil {
			stats.Text = final
			if cause := context.Cause(ctx); cause != nil {
				return stats, fmt.Errorf("model turn %d: %w (%w)", turn, cause, err)
			}
			return stats, fmt.Errorf("model turn %d: %w", turn, err)
		}
		stats.Turns++
		stats.InputTokens += resp.Usage.Input
		stats.OutputTokens += resp.Usage.Output
		stats.CacheReadTokens += resp.Usage.CacheRead
		stats.CacheWriteTokens += resp.Usage.CacheWrite
		stats.TurnUsage = append(stats.TurnUsage, pass.TurnUsage{Input: resp.Usage.Input, CacheRead: resp.Usage.CacheRead,
			CacheWrite: resp.Usage.CacheWrite, Output: resp.Usage.Output})
		if stats.Model == "" {
			stats.Model = resp.Model
		}
		text, calls := resp.Text, resp.ToolCalls
		if len(calls) == 0 {
			text, calls = l.textCalls(turn, text)
		}
		if t := strings.TrimSpace(text); t != "" {
			final = t
		}
		calls = withCallIDs(calls, turn)
		l.log.Debug("llm turn", "turn", turn, "tool_calls", len(calls), "stop", resp.StopReason,
			"input_tokens", resp.Usage.Input, "cache_read_tokens", resp.Usage.CacheRead,
			"cache_write_tokens", resp.Usage.CacheWrite, "output_tokens", resp.Usage.Output)
		if len(calls) == 0 {
			stats.Text = final
			if isLengthStop(resp.StopReason) {
				stats.Text = joinProse(final, fmt.Sprintf("aicr: the model's answer was cut at agent.llm.max_output_tokens = %d", l.maxOutputTokens))
			}
			return stats, nil
		}
		// The history carries only arguments that are a JSON object: vLLM
		// parses them to render the next prompt and refuses the request
		// otherwise. A call whose arguments cannot be read is replayed
		// as {} and answered with the refusal, which says what was wrong.
		sent := make([]json.RawMessage, len(calls))
		for i, c := range calls {
			sent[i] = c.Arguments
			args, ok := review.CallArguments(c.Arguments)
			if !ok {
				args = json.RawMessage("{}")
			} else {
				sent[i] = args
			}
			calls[i].Arguments = args
		}
		msgs = append(msgs, Message{Role: RoleAssistant, Text: text, ToolCalls: calls})
		ended := false
		for i, c := range calls {
			tool := l.tools.resolve(c.Name)
			text, isErr := l.exec.Call(ctx, tool, sent[i])
			if err := l.exec.Err(); err != nil {
				stats.Text = final
				return stats, err
			}
			if isErr {
				l.log.Info("llm tool call refused", "turn", turn, "tool", tool, "envelope", text)
			} else if tool == review.ToolPublishSummary || tool == review.ToolSkip {
				ended = true
			}
			msgs = append(msgs, Message{Role: RoleTool, ToolResult: &ToolResult{CallID: c.ID, Name: c.Name, Content: text, IsError: isErr}})
		}
		if ended {
			// A recorded summary or skip is the pass's result; answering
			// the calls would only buy another round trip.
			stats.Text = final
			return stats, nil
		}
	}
}

// maxEmptyAnswers bounds how often one turn is asked again after an
// answer with no choices before the pass fails (transient, so the run is
// retried later).
const maxEmptyAnswers = 2

// textCalls reads the tool calls a model wrote into its text (a server
// without a tool-call parser passes them through as prose), so they are
// executed in this turn. The calls get the names the model was offered.
func (l *loop) textCalls(turn int, text string) (string, []ToolCall) {
	found, prose, problem := review.TextToolCalls(text)
	if len(found) == 0 {
		if problem != "" {
			l.log.Info("llm answer has unreadable tool calls in its text", "turn", turn, "problem", problem)
		}
		return text, nil
	}
	calls := make([]ToolCall, len(found))
	for i, c := range found {
		name := c.Name
		if offered, ok := l.tools.offered[name]; ok {
			name = offered
		}
		calls[i] = ToolCall{Name: name, Arguments: c.Arguments}
	}
	l.log.Info("llm tool calls read from the answer's text (the server has no tool-call parser)",
		"turn", turn, "calls", len(calls), "unreadable", problem)
	return prose, calls
}

// withCallIDs gives every call an id: some OpenAI-compatible servers
// leave it out, and each tool result must name the call it answers.
func withCallIDs(calls []ToolCall, turn int) []ToolCall {
	out := make([]ToolCall, len(calls))
	for i, c := range calls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("aicr_call_%d_%d", turn, i+1)
		}
		out[i] = c
	}
	return out
}

func isLengthStop(reason string) bool {
	switch reason {
	case "length", "max_tokens", "max_output_tokens", "incomplete":
		return true
	}
	return false
}

// joinProse adds aicr's note on why a pass stopped after the model's prose.
func joinProse(prose, note string) string {
	if prose == "" {
		return note
	}
	return prose + "\n\n" + note
}
