package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/rundir"
)

// Tool names, exactly as agents see them.
const (
	ToolReportProblem    = "aicr.report_problem"
	ToolPublishSummary   = "aicr.publish_summary"
	ToolSkip             = "aicr.skip"
	ToolFetchMoreContext = "aicr.fetch_more_context"
	ToolTryBlame         = "aicr.try_blame"
)

// ToolNames lists the five tools the server registers.
var ToolNames = []string{ToolReportProblem, ToolPublishSummary, ToolSkip, ToolFetchMoreContext, ToolTryBlame}

// ErrNoChange: the server cannot validate anything without the change.
var ErrNoChange = rundir.ErrNoChange

// ServerOptions configure the MCP tool server.
type ServerOptions struct {
	// StatePath is the state file; default StateFileName in the working
	// directory.
	StatePath string
	// ChangePath is change.json; default ../change.json relative to the
	// state file's directory (the run directory layout).
	ChangePath string
	// SrcDir holds the new file contents; default src/ next to change.json.
	SrcDir string
	Limits Limits
	// ToolNames selects dotted names (default), underscore aliases or both.
	ToolNames ToolNaming
	// Version is reported to clients as the server version.
	Version string
}

func (o ServerOptions) withDefaults() ServerOptions {
	if o.StatePath == "" {
		o.StatePath = StateFileName
	}
	if o.ChangePath == "" {
		o.ChangePath = rundir.FromStatePath(o.StatePath).ChangePath()
	}
	if o.SrcDir == "" {
		o.SrcDir = rundir.New(filepath.Dir(o.ChangePath)).SrcDir()
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.ToolNames == "" {
		o.ToolNames = ToolNamingDotted
	}
	o.Limits = o.Limits.WithDefaults()
	return o
}

// NewServer returns an MCP server exposing the five aicr tools. It loads
// the change, loads an existing state file (so a server restarted in the
// middle of a pass keeps what was recorded) or writes an empty one (so the
// orchestrator can tell "the agent connected and reported nothing" from
// "the agent never started the server"). Serve and ServeHTTP also write
// the refusals counted past the rejected cap when they stop; a caller of
// NewServer that needs them on disk uses Serve or ServeHTTP.
func NewServer(opts ServerOptions) (*server.MCPServer, error) {
	s, _, err := newServer(opts)
	return s, err
}

func newServer(opts ServerOptions) (*server.MCPServer, *toolHandler, error) {
	opts = opts.withDefaults()
	naming, err := ParseToolNaming(string(opts.ToolNames))
	if err != nil {
		return nil, nil, err
	}
	h, err := newToolHandler(opts)
	if err != nil {
		return nil, nil, err
	}
	s := server.NewMCPServer("aicr", opts.Version,
		server.WithToolCapabilities(false),
		// A panic or a Go error becomes the INTERNAL envelope, never a
		// JSON-RPC error an agent CLI might not show its model.
		server.WithToolHandlerMiddleware(mcperr.Middleware),
		server.WithInstructions(serverInstructions),
	)
	for _, tool := range toolDefinitions(h.v.Limits()) {
		canonical := tool.Name
		for _, name := range naming.exposedNames(canonical) {
			tool.Name = name
			s.AddTool(tool, h.handle(canonical))
		}
	}
	return s, h, nil
}

// newToolHandler loads the change and the state file (or writes an empty
// one) for opts, which must have its defaults applied. Both MCP transports
// and the in-process ToolSession execute calls through it, so there is
// one implementation of validation, limits and state writes.
func newToolHandler(opts ServerOptions) (*toolHandler, error) {
	change, err := rundir.ReadChange(opts.ChangePath)
	if err != nil {
		return nil, err
	}
	st, err := LoadState(opts.StatePath)
	switch {
	case errors.Is(err, ErrNoState):
		st = NewState()
		if err := SaveState(opts.StatePath, st); err != nil {
			return nil, fmt.Errorf("init state: %w", err)
		}
	case err != nil:
		return nil, err
	}
	return &toolHandler{
		statePath: opts.StatePath,
		state:     st,
		v:         NewValidator(change, opts.SrcDir, opts.Limits),
	}, nil
}

// toolDefinitions returns the five tools under their canonical names.
func toolDefinitions(l Limits) []mcp.Tool {
	return []mcp.Tool{
		reportProblemTool(l),
		publishSummaryTool(),
		skipTool(),
		requestTool(ToolFetchMoreContext, fetchMoreContextDescription),
		requestTool(ToolTryBlame, tryBlameDescription),
	}
}

// Serve runs the tool server over stdio until in reaches EOF or ctx ends.
// This is what `aicr mcp serve` runs, with os.Stdin and os.Stdout.
func Serve(ctx context.Context, opts ServerOptions, in io.Reader, out io.Writer) (err error) {
	s, h, err := newServer(opts)
	if err != nil {
		return err
	}
	defer func() {
		if ferr := h.flush(); ferr != nil && err == nil {
			err = ferr
		}
	}()
	stdio := server.NewStdioServer(s)
	// stdout carries the protocol; diagnostics must go to stderr.
	stdio.SetErrorLogger(log.New(os.Stderr, "aicr mcp: ", log.LstdFlags))
	if err := stdio.Listen(ctx, mcperr.LimitLines(in, mcperr.MaxLineBytes), out); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve mcp: %w", err)
	}
	return nil
}

// countFlushDelay is how long a refusal that only bumps
// State.RejectedTotal may wait before it is written.
const countFlushDelay = time.Second

// toolHandler serialises every call: each one may rewrite the whole state
// file, and both transports run calls concurrently.
//
// A call that changes what the state records (an item, a skip, a kept
// rejection) rewrites the file before it is answered. The number of such
// writes per pass is bounded by the limits, whatever the agent does, so a
// runaway agent costs constant time per call instead of a growing file
// rewritten on every call. A refusal past the rejected cap only bumps
// RejectedTotal; that count is written within countFlushDelay, with the
// next recorded item, and when the server stops.
type toolHandler struct {
	mu        sync.Mutex
	statePath string
	state     *State
	v         *Validator
	// countPending: RejectedTotal in memory is ahead of the file.
	countPending bool
	flushTimer   *time.Timer
}

// handle serves one tool; the call is recorded under its canonical name
// whichever alias the client used.
func (h *toolHandler) handle(tool string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw, err := rawArguments(req)
		if err != nil {
			return mcperr.Result(mcperr.New(CodeInvalidInput, "send the arguments as one JSON object", "read arguments: %v", err)), nil
		}
		text, terr, err := h.call(tool, raw)
		if err != nil {
			// The call was undone: the agent may retry it, but aicr is
			// what failed.
			return mcperr.Result(mcperr.New(CodeInternal, "stop reporting; the review cannot record anything more",
				"the call could not be recorded: %v", err)), nil
		}
		if terr != nil {
			return mcperr.Result(terr), nil
		}
		return mcp.NewToolResultText(text), nil
	}
}

// call executes one call of the canonical tool and writes what it
// changed. terr is the envelope of a refused call; err is a state file
// that could not be written, in which case the call is undone.
func (h *toolHandler) call(tool string, raw json.RawMessage) (text string, terr *ToolError, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Items are only ever appended and Skip is replaced, never mutated,
	// so a shallow copy is enough to undo a call whose save failed.
	before := *h.state
	text, terr = applyCall(h.v, h.state, tool, raw)
	switch {
	case recordsChanged(&before, h.state):
		if err := h.saveLocked(); err != nil {
			*h.state = before
			return "", nil, err
		}
	case h.state.RejectedTotal != before.RejectedTotal:
		h.countPending = true
		if h.flushTimer == nil {
			h.flushTimer = time.AfterFunc(countFlushDelay, h.flushCount)
		}
	}
	return text, terr, nil
}

// recordsChanged reports whether a call changed anything but
// RejectedTotal. Items are only appended and Skip only replaced, so
// lengths and the skip reason tell.
func recordsChanged(a, b *State) bool {
	skipA, skipB := "", ""
	if a.Skip != nil {
		skipA = "\x00" + a.Skip.Reason
	}
	if b.Skip != nil {
		skipB = "\x00" + b.Skip.Reason
	}
	return len(a.Problems) != len(b.Problems) || len(a.Summaries) != len(b.Summaries) ||
		len(a.ContextRequests) != len(b.ContextRequests) || len(a.AttributionRequests) != len(b.AttributionRequests) ||
		len(a.Rejected) != len(b.Rejected) || skipA != skipB
}

func (h *toolHandler) saveLocked() error {
	if err := SaveState(h.statePath, h.state); err != nil {
		return err
	}
	h.countPending = false
	return nil
}

// flushCount writes a pending RejectedTotal from the timer. A failure is
// left pending for flush, which reports it.
func (h *toolHandler) flushCount() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flushTimer = nil
	if h.countPending {
		_ = h.saveLocked()
	}
}

// flush writes anything not yet on disk; the transports call it when
// they stop.
func (h *toolHandler) flush() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.flushTimer != nil {
		h.flushTimer.Stop()
		h.flushTimer = nil
	}
	if !h.countPending {
		return nil
	}
	return h.saveLocked()
}

func rawArguments(req mcp.CallToolRequest) (json.RawMessage, error) {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments, nil
	}
	if req.Params.Arguments == nil {
		return json.RawMessage("{}"), nil
	}
	return json.Marshal(req.Params.Arguments)
}

const serverInstructions = `aicr collects the results of a code review of one committed change.
Report each problem with aicr.report_problem, anchored to a changed line of a changed file
(line numbers of the new version of the file). Publish an overall summary with aicr.publish_summary.
If there is nothing to review, or nothing worth reporting, call aicr.skip instead.
Every tool answers with a short confirmation, or with an error object {code, message, remedy}: fix the call as the remedy says.`

const (
	fetchMoreContextDescription = `Ask for more of a file than the change shows (any file of the repository, e.g. a caller or a definition). ` +
		`The request is fulfilled before a follow-up review pass, not immediately; keep reviewing with what you have. ` +
		`path is relative to the repository root; omit range for the whole file.`
	tryBlameDescription = `Ask who last changed some lines of a file and in which revision (blame), e.g. to judge whether ` +
		`a problem was introduced by this change. The answer arrives in a follow-up review pass, not immediately. ` +
		`path is relative to the repository root; omit range for the whole file.`
)

func reportProblemTool(l Limits) mcp.Tool {
	sev := make([]string, len(Severities))
	for i, s := range Severities {
		sev[i] = string(s)
	}
	return mcp.NewTool(ToolReportProblem,
		mcp.WithDescription(`Report one problem found in the change. The problem must be anchored to a line of the change: `+
			`file is a file changed by this change, and line (and end_line) are line numbers in the NEW version of the file `+
			`that were added or changed, or lie inside a diff hunk. Report each distinct problem once; `+
			`at most `+fmt.Sprint(l.MaxProblems)+` problems per review, so report the most important first. `+
			`Use aicr.skip instead when there is nothing worth reporting.`),
		mcp.WithString("file", mcp.Required(),
			mcp.Description("Path of a changed file, relative to the repository root, with forward slashes.")),
		mcp.WithInteger("line", mcp.Required(), mcp.Min(1),
			mcp.Description("First line of the problem, 1-based, in new-file numbering; must be a changed line or inside a diff hunk.")),
		mcp.WithInteger("end_line", mcp.Min(1),
			mcp.Description("Last line of the problem when it spans several lines; omit for a single line.")),
		mcp.WithString("severity", mcp.Required(), mcp.Enum(sev...),
			mcp.Description("How serious the problem is.")),
		mcp.WithString("category", mcp.Required(),
			mcp.Description("Short kebab-case kind of problem, e.g. hard-coded-credential, sql-injection, null-dereference, race-condition.")),
		mcp.WithString("message", mcp.Required(), mcp.MaxLength(l.MaxMessageBytes),
			mcp.Description("What is wrong and why it matters, in a few sentences. Never repeat secret values.")),
		mcp.WithString("suggestion", mcp.MaxLength(l.MaxMessageBytes),
			mcp.Description("How to fix it.")),
		mcp.WithString("fingerprint",
			mcp.Description("Optional stable identifier of this problem; omit it and aicr derives one from the file, category and anchored line.")),
		mcp.WithSchemaAdditionalProperties(false),
	)
}

func publishSummaryTool() mcp.Tool {
	return mcp.NewTool(ToolPublishSummary,
		mcp.WithDescription(`Publish an overall summary of the review as Markdown: what the change does, what you checked, `+
			`and the most important findings. Problems themselves go through aicr.report_problem.`),
		mcp.WithString("title", mcp.Description("Optional one-line title.")),
		mcp.WithString("markdown", mcp.Required(), mcp.Description("The summary, in Markdown.")),
		mcp.WithSchemaAdditionalProperties(false),
	)
}

func skipTool() mcp.Tool {
	return mcp.NewTool(ToolSkip,
		mcp.WithDescription(`Record that this change needs no review comments. Use reason "no_reviewable_code" when there is `+
			`nothing to review (only deletions, binaries, generated files) and "lgtm" when you reviewed it and found nothing worth reporting.`),
		mcp.WithString("reason", mcp.Required(),
			mcp.Description("Why the review is skipped: lgtm, no_reviewable_code, or a short explanation.")),
		mcp.WithSchemaAdditionalProperties(false),
	)
}

func requestTool(name, description string) mcp.Tool {
	return mcp.NewTool(name,
		mcp.WithDescription(description),
		mcp.WithString("path", mcp.Required(),
			mcp.Description("File path relative to the repository root, with forward slashes; need not be part of the change.")),
		mcp.WithObject("range",
			mcp.Description("Optional line range, 1-based and inclusive."),
			mcp.Properties(map[string]any{
				"start_line": map[string]any{"type": "integer", "minimum": 1},
				"end_line":   map[string]any{"type": "integer", "minimum": 1},
			}),
			objectRequired("start_line", "end_line"),
		),
		mcp.WithString("reason", mcp.Required(), mcp.Description("What you need it for.")),
		mcp.WithSchemaAdditionalProperties(false),
	)
}

// objectRequired marks fields of a nested object property as required;
// mcp.Required only applies to top-level properties.
func objectRequired(fields ...string) mcp.PropertyOption {
	return func(schema map[string]any) {
		schema["required"] = fields
		schema["additionalProperties"] = false
	}
}
