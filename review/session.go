package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// ToolSpec is one aicr tool as a model API offers it: the canonical name,
// the description and the JSON schema of the arguments, exactly as
// `aicr mcp serve` lists them to MCP clients.
type ToolSpec struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// ToolSession executes aicr tool calls in process, for agents that talk
// to a model directly instead of through an MCP client. It shares the MCP
// server's handler, so validation, limits, the state file and the error
// envelope are the same whichever way a call arrives.
type ToolSession struct {
	h     *toolHandler
	specs []ToolSpec

	mu  sync.Mutex
	err error
}

// NewToolSession loads the change and the state file named by opts (or
// writes an empty one), as NewServer does. opts.ToolNames and
// opts.Version are ignored: Tools lists the canonical names and Call
// accepts every spelling CanonicalToolName knows.
func NewToolSession(opts ServerOptions) (*ToolSession, error) {
	opts = opts.withDefaults()
	h, err := newToolHandler(opts)
	if err != nil {
		return nil, err
	}
	defs := toolDefinitions(h.v.Limits())
	specs := make([]ToolSpec, 0, len(defs))
	for _, d := range defs {
		schema, err := json.Marshal(d.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %s schema: %w", d.Name, err)
		}
		specs = append(specs, ToolSpec{Name: d.Name, Description: d.Description, Schema: schema})
	}
	return &ToolSession{h: h, specs: specs}, nil
}

// Tools lists the five tools under their canonical names.
func (s *ToolSession) Tools() []ToolSpec {
	return append([]ToolSpec(nil), s.specs...)
}

// ErrSessionFailed wraps the state-file failure that stopped a session.
var ErrSessionFailed = errors.New("review tool session failed")

// codeSessionFailed answers calls after the state file could not be
// written; the caller is expected to stop at Err before a model sees it.
// It is the reserved INTERNAL code: the failure is aicr's, not the call's.
const codeSessionFailed = CodeInternal

// Call executes one call. text is the tool's confirmation, or with
// isError the JSON envelope {code, message, remedy} the model should act
// on. A call refused for its content is recorded in the state file's
// rejections exactly as over MCP. When the state file cannot be written
// the call is undone, every later call is refused, and Err says why.
func (s *ToolSession) Call(ctx context.Context, name string, args json.RawMessage) (text string, isError bool) {
	if err := s.Err(); err != nil {
		return envelope(&ToolError{Code: codeSessionFailed, Message: err.Error(),
			Remedy: "stop; the review cannot record anything more"}), true
	}
	if err := ctx.Err(); err != nil {
		return envelope(&ToolError{Code: codeSessionFailed, Message: "the review pass ended: " + err.Error(),
			Remedy: "stop"}), true
	}
	tool, ok := CanonicalToolName(name)
	if !ok {
		tool = name
	}
	text, terr, err := s.h.call(tool, args)
	if err != nil {
		s.mu.Lock()
		if s.err == nil {
			s.err = fmt.Errorf("%w: %w", ErrSessionFailed, err)
		}
		s.mu.Unlock()
		return envelope(&ToolError{Code: codeSessionFailed, Message: "the result could not be recorded",
			Remedy: "stop; the review cannot record anything more"}), true
	}
	if terr != nil {
		return envelope(terr), true
	}
	return text, false
}

// Err is the state-file failure that stopped the session, or nil.
func (s *ToolSession) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close writes what is not yet on disk (a refusal count past the
// rejected cap) and returns the session's failure, if any.
func (s *ToolSession) Close() error {
	ferr := s.h.flush()
	if err := s.Err(); err != nil {
		return err
	}
	return ferr
}

func envelope(terr *ToolError) string { return terr.JSON() }
