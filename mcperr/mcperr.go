// Package mcperr is the one error envelope of every aicr MCP server (the
// review tools agents report through, the admin tools, the review session
// tools): a refused or failed tool call is a result with isError true
// whose structured content, and text, is {"code", "message", "remedy"}.
// A client (or a model) reads the code to decide, the message to
// understand and the remedy to act; a JSON-RPC error is kept for protocol
// failures only.
package mcperr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Reserved codes. A server may add codes of its own domain (the review
// tools' LINE_NOT_IN_DIFF), but never gives one of these another meaning.
const (
	// NotFound: the run, dispatch, repo or session named does not exist.
	NotFound = "NOT_FOUND"
	// InvalidInput: the arguments do not fit the tool's input schema or
	// its rules (a bad status, a negative limit, a line off the diff).
	InvalidInput = "INVALID_INPUT"
	// ConfirmationRequired: a mutation was confirmed against a plan that
	// no longer matches the current state; nothing was written.
	ConfirmationRequired = "CONFIRMATION_REQUIRED"
	// PolicyBlocked: aicr's rules do not allow this action on this object
	// in its state, or the server was started read-only.
	PolicyBlocked = "POLICY_BLOCKED"
	// SessionInvalid: the review session id is unknown, ended or expired.
	SessionInvalid = "SESSION_INVALID"
	// RoundStillRunning: a review round is still running; wait for it.
	RoundStillRunning = "ROUND_STILL_RUNNING"
	// ConfigInvalid: the config file does not load or does not validate.
	ConfigInvalid = "CONFIG_INVALID"
	// ReviewerNotFound: the agent or model asked for is not configured.
	ReviewerNotFound = "REVIEWER_NOT_FOUND"
	// Internal: aicr failed (database, disk); the message says where.
	Internal = "INTERNAL"
)

// Reserved lists every reserved code, for tests and documentation.
var Reserved = []string{NotFound, InvalidInput, ConfirmationRequired, PolicyBlocked, SessionInvalid,
	RoundStillRunning, ConfigInvalid, ReviewerNotFound, Internal}

// Error is the envelope. It is also a Go error, so a tool's logic can
// return it through ordinary error paths and the transport turns it into
// the isError result.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Remedy  string `json:"remedy"`
	// CLI is the remedy in the command line's words (aicr audit list
	// where Remedy says runs_list), for the CLI verbs that share a tool's
	// logic; empty when Remedy names no tool. It never travels.
	CLI string `json:"-"`
	// cause keeps the Go error behind the envelope for callers in this
	// process (errors.Is); it never travels.
	cause error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Unwrap is the error the envelope was made from, if any.
func (e *Error) Unwrap() error { return e.cause }

// Wrap builds an envelope whose message is err's text and which unwraps
// to err.
func Wrap(code, remedy string, err error) *Error {
	return &Error{Code: code, Message: err.Error(), Remedy: remedy, cause: err}
}

// New builds an envelope; the message is formatted, the remedy is not.
func New(code, remedy, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Remedy: remedy}
}

// OnCLI sets the remedy the CLI shows instead of Remedy, and returns e.
func (e *Error) OnCLI(remedy string) *Error {
	e.CLI = remedy
	return e
}

// CLIRemedy is the remedy for a person at the command line.
func (e *Error) CLIRemedy() string {
	if e.CLI != "" {
		return e.CLI
	}
	return e.Remedy
}

// JSON is the envelope as the one-line JSON text clients that only show
// text to a model receive.
func (e *Error) JSON() string {
	b, _ := json.Marshal(e)
	return string(b)
}

// Result is the tool result carrying e: isError, the envelope as
// structured content and, for clients that only read text, as JSON text.
func Result(e *Error) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(e.JSON())},
		StructuredContent: e,
		IsError:           true,
	}
}

// From is err's envelope: err itself when it is (or wraps) one, else
// INTERNAL with err's text, so an unexpected failure still reaches the
// client as a readable result instead of a protocol error.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Wrap(Internal, "this is aicr failing, not the call: check the server's stderr and the aicr logs, then retry", err)
}

// Middleware makes every tool of a server answer with the envelope: a
// handler's Go error or panic becomes an INTERNAL (or the wrapped
// envelope's) isError result instead of a JSON-RPC error.
func Middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = Result(&Error{Code: Internal, Message: fmt.Sprintf("tool %s panicked: %v", req.Params.Name, p),
					Remedy: "this is a bug in aicr: report it with the server's stderr"}), nil
			}
		}()
		res, err = next(ctx, req)
		if err != nil {
			return Result(From(err)), nil
		}
		return res, nil
	}
}

// schemaOptions: a raw JSON value (an event's payload) is any JSON, and
// times are RFC 3339 strings.
var schemaOptions = &jsonschema.ForOptions{
	IgnoreInvalidTypes: true,
	TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
		reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
	},
}

// SchemaFor is T's JSON schema, as a tool's input or result schema; a
// pointer is described by what it points to (a tool's nil result is an
// error).
func SchemaFor[T any]() (json.RawMessage, error) {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s, err := jsonschema.ForType(t, schemaOptions)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// OutputSchema is the output schema of a tool whose result is Out: Out
// or the envelope. Clients (the official TypeScript SDK among them)
// validate structuredContent against it even on an isError result, and
// the envelope travels as structuredContent.
func OutputSchema[Out any]() (json.RawMessage, error) {
	result, err := SchemaFor[Out]()
	if err != nil {
		return nil, err
	}
	envelope, err := SchemaFor[Error]()
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"type": "object", "anyOf": []json.RawMessage{result, envelope}})
}
