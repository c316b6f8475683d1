package review

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/aicr-dev/aicr/vcs"
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
var ErrNoChange = errors.New("no change file")

// maxStoredArgumentBytes bounds the raw arguments kept with a rejection so
// a runaway agent cannot grow the state file without limit.
const maxStoredArgumentBytes = 8 << 10

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
	// Version is reported to clients as the server version.
	Version string
}

func (o ServerOptions) withDefaults() ServerOptions {
	if o.StatePath == "" {
		o.StatePath = StateFileName
	}
	if o.ChangePath == "" {
		o.ChangePath = filepath.Join(filepath.Dir(o.StatePath), "..", "change.json")
	}
	if o.SrcDir == "" {
		o.SrcDir = filepath.Join(filepath.Dir(o.ChangePath), "src")
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	o.Limits = o.Limits.WithDefaults()
	return o
}

// NewServer returns an MCP server exposing the five aicr tools. It loads
// the change, loads an existing state file (so a server restarted in the
// middle of a pass keeps what was recorded) or writes an empty one (so the
// orchestrator can tell "the agent connected and reported nothing" from
// "the agent never started the server").
func NewServer(opts ServerOptions) (*server.MCPServer, error) {
	opts = opts.withDefaults()
	change, err := loadChange(opts.ChangePath)
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
	h := &toolHandler{
		statePath: opts.StatePath,
		state:     st,
		v:         NewValidator(change, opts.SrcDir, opts.Limits),
	}
	s := server.NewMCPServer("aicr", opts.Version,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		server.WithInstructions(serverInstructions),
	)
	s.AddTool(reportProblemTool(h.v.Limits()), h.handle(ToolReportProblem, h.reportProblem))
	s.AddTool(publishSummaryTool(), h.handle(ToolPublishSummary, h.publishSummary))
	s.AddTool(skipTool(), h.handle(ToolSkip, h.skip))
	s.AddTool(requestTool(ToolFetchMoreContext, fetchMoreContextDescription), h.handle(ToolFetchMoreContext, h.fetchMoreContext))
	s.AddTool(requestTool(ToolTryBlame, tryBlameDescription), h.handle(ToolTryBlame, h.tryBlame))
	return s, nil
}

// Serve runs the tool server over stdio until in reaches EOF or ctx ends.
// This is what `aicr mcp serve` runs, with os.Stdin and os.Stdout.
func Serve(ctx context.Context, opts ServerOptions, in io.Reader, out io.Writer) error {
	s, err := NewServer(opts)
	if err != nil {
		return err
	}
	stdio := server.NewStdioServer(s)
	// stdout carries the protocol; diagnostics must go to stderr.
	stdio.SetErrorLogger(log.New(os.Stderr, "aicr mcp: ", log.LstdFlags))
	if err := stdio.Listen(ctx, in, out); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve mcp: %w", err)
	}
	return nil
}

func loadChange(path string) (*vcs.Change, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load change %s: %w", path, ErrNoChange)
	}
	if err != nil {
		return nil, fmt.Errorf("load change: %w", err)
	}
	var c vcs.Change
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("decode change %s: %w", path, err)
	}
	return &c, nil
}

// toolHandler serialises every call: each one reads and rewrites the whole
// state file, and the stdio server runs calls on a worker pool.
type toolHandler struct {
	mu        sync.Mutex
	statePath string
	state     *State
	v         *Validator
}

// toolFunc records one validated item in st and returns the text the agent
// sees, or the envelope of why the call was refused.
type toolFunc func(args json.RawMessage, st *State) (string, *ToolError)

func (h *toolHandler) handle(tool string, fn toolFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw, err := rawArguments(req)
		if err != nil {
			return nil, fmt.Errorf("read arguments: %w", err)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		// Items are only ever appended and Skip is replaced, never mutated,
		// so a shallow copy is enough to undo a call whose save failed.
		before := *h.state
		text, terr := fn(raw, h.state)
		if terr != nil {
			h.state.Rejected = append(h.state.Rejected, Rejection{
				Tool:      tool,
				Arguments: storedArguments(raw),
				ToolError: *terr,
			})
		}
		if err := SaveState(h.statePath, h.state); err != nil {
			*h.state = before
			return nil, err
		}
		if terr != nil {
			env, _ := json.Marshal(terr)
			return mcp.NewToolResultError(string(env)), nil
		}
		return mcp.NewToolResultText(text), nil
	}
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

func storedArguments(raw json.RawMessage) json.RawMessage {
	if !json.Valid(raw) {
		b, _ := json.Marshal(string(raw))
		raw = b
	}
	if len(raw) <= maxStoredArgumentBytes {
		return raw
	}
	b, _ := json.Marshal(map[string]any{
		"truncated": true,
		"bytes":     len(raw),
		"prefix":    string(bytes.ToValidUTF8(raw[:maxStoredArgumentBytes], nil)),
	})
	return b
}

// decodeArgs decodes strictly: an argument the tool does not declare (an
// attribution field, a typo) is refused rather than silently dropped.
func decodeArgs(raw json.RawMessage, dst any, accepted ...string) *ToolError {
	remedy := "accepted arguments: " + strings.Join(accepted, ", ")
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return toolErr(CodeInvalidInput, remedy, "argument %s has the wrong type: got %s, want %s",
			typeErr.Field, typeErr.Value, jsonTypeName(typeErr.Type.String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return toolErr(CodeInvalidInput, remedy, "unknown argument %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return toolErr(CodeInvalidInput, remedy, "arguments must be a JSON object: %v", err)
}

func jsonTypeName(goType string) string {
	switch goType {
	case "int":
		return "integer"
	case "string":
		return "string"
	}
	return "object"
}

type problemArgs struct {
	File        string `json:"file"`
	Line        int    `json:"line"`
	EndLine     int    `json:"end_line"`
	Severity    string `json:"severity"`
	Category    string `json:"category"`
	Message     string `json:"message"`
	Suggestion  string `json:"suggestion"`
	Fingerprint string `json:"fingerprint"`
}

func (h *toolHandler) reportProblem(raw json.RawMessage, st *State) (string, *ToolError) {
	var a problemArgs
	if terr := decodeArgs(raw, &a, "file", "line", "end_line", "severity", "category", "message", "suggestion", "fingerprint"); terr != nil {
		return "", terr
	}
	p, terr := h.v.Problem(Problem{
		File: a.File, Line: a.Line, EndLine: a.EndLine, Severity: Severity(a.Severity),
		Category: a.Category, Message: a.Message, Suggestion: a.Suggestion, Fingerprint: a.Fingerprint,
	}, st)
	if terr != nil {
		return "", terr
	}
	if i := st.ProblemIndex(p.Fingerprint); i >= 0 {
		return fmt.Sprintf("duplicate of problem %d (fingerprint %s); not recorded again", i+1, p.Fingerprint), nil
	}
	st.Problems = append(st.Problems, p)
	return fmt.Sprintf("recorded problem %d (fingerprint %s)", len(st.Problems), p.Fingerprint), nil
}

type summaryArgs struct {
	Title    string `json:"title"`
	Markdown string `json:"markdown"`
}

func (h *toolHandler) publishSummary(raw json.RawMessage, st *State) (string, *ToolError) {
	var a summaryArgs
	if terr := decodeArgs(raw, &a, "title", "markdown"); terr != nil {
		return "", terr
	}
	s, terr := h.v.Summary(Summary(a), st)
	if terr != nil {
		return "", terr
	}
	st.Summaries = append(st.Summaries, s)
	return fmt.Sprintf("recorded summary %d", len(st.Summaries)), nil
}

type skipArgs struct {
	Reason string `json:"reason"`
}

func (h *toolHandler) skip(raw json.RawMessage, st *State) (string, *ToolError) {
	var a skipArgs
	if terr := decodeArgs(raw, &a, "reason"); terr != nil {
		return "", terr
	}
	s, terr := h.v.Skip(Skip(a))
	if terr != nil {
		return "", terr
	}
	st.Skip = &s
	return fmt.Sprintf("recorded skip (reason: %s)", s.Reason), nil
}

type rangeArgs struct {
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
}

type requestArgs struct {
	Path   string     `json:"path"`
	Range  *rangeArgs `json:"range"`
	Reason string     `json:"reason"`
}

func (a requestArgs) lineRange() *vcs.LineRange {
	if a.Range == nil {
		return nil
	}
	return &vcs.LineRange{Start: a.Range.StartLine, End: a.Range.EndLine}
}

func (h *toolHandler) fetchMoreContext(raw json.RawMessage, st *State) (string, *ToolError) {
	var a requestArgs
	if terr := decodeArgs(raw, &a, "path", "range", "reason"); terr != nil {
		return "", terr
	}
	r, terr := h.v.ContextRequest(ContextRequest{Path: a.Path, Range: a.lineRange(), Reason: a.Reason}, st)
	if terr != nil {
		return "", terr
	}
	if containsRequest(st.ContextRequests, r.Path, r.Range) {
		return fmt.Sprintf("context for %s was already requested", r.Path), nil
	}
	st.ContextRequests = append(st.ContextRequests, r)
	return fmt.Sprintf("recorded context request %d for %s; it will be provided in a follow-up pass", len(st.ContextRequests), r.Path), nil
}

func (h *toolHandler) tryBlame(raw json.RawMessage, st *State) (string, *ToolError) {
	var a requestArgs
	if terr := decodeArgs(raw, &a, "path", "range", "reason"); terr != nil {
		return "", terr
	}
	r, terr := h.v.AttributionRequest(AttributionRequest{Path: a.Path, Range: a.lineRange(), Reason: a.Reason}, st)
	if terr != nil {
		return "", terr
	}
	if containsAttribution(st.AttributionRequests, r.Path, r.Range) {
		return fmt.Sprintf("attribution for %s was already requested", r.Path), nil
	}
	st.AttributionRequests = append(st.AttributionRequests, r)
	return fmt.Sprintf("recorded attribution request %d for %s; it will be provided in a follow-up pass", len(st.AttributionRequests), r.Path), nil
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
