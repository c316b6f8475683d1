package review

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aicr-dev/aicr/redact"
	"github.com/aicr-dev/aicr/vcs"
)

// ToolCall is one call of an aicr tool, as the stdout fallback parser
// recovers it from an agent's output. Name may be any spelling
// CanonicalToolName accepts.
type ToolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// CallOutcome is what one call did: Text is the confirmation an agent
// would have seen, Err the envelope of a refused call (also recorded in
// State.Rejected).
type CallOutcome struct {
	Tool string     `json:"tool"`
	Text string     `json:"text,omitempty"`
	Err  *ToolError `json:"error,omitempty"`
}

// ApplyCalls records calls into st exactly as the MCP server would have:
// the same decoder, the same Validator, the same duplicate and limit rules,
// and refused calls land in st.Rejected. It is how output recovered by
// ParseAgentOutput reaches the state, so the stdout fallback cannot
// publish anything the server would have refused. The caller saves st.
func ApplyCalls(v *Validator, st *State, calls []ToolCall) []CallOutcome {
	out := make([]CallOutcome, 0, len(calls))
	for _, c := range calls {
		tool, ok := CanonicalToolName(c.Name)
		if !ok {
			tool = c.Name
		}
		text, terr := applyCall(v, st, tool, c.Arguments)
		out = append(out, CallOutcome{Tool: tool, Text: text, Err: terr})
	}
	return out
}

// applyCall runs one tool call against st and records a refusal in
// st.Rejected (up to the validator's MaxRejected; past that it is only
// counted). tool must be canonical; anything else is refused.
func applyCall(v *Validator, st *State, tool string, raw json.RawMessage) (string, *ToolError) {
	fn, ok := toolFuncs[tool]
	var text string
	var terr *ToolError
	switch {
	case !ok:
		terr = toolErr(CodeInvalidInput, "use one of: "+strings.Join(ToolNames, ", "), "unknown tool %q", tool)
	case !utf8.Valid(raw):
		// Go's decoder would quietly turn the bad bytes into U+FFFD; the
		// agent should learn that what it sent was not text.
		terr = toolErr(CodeInvalidInput, "send arguments as UTF-8 text; leave out or describe binary content instead of quoting it",
			"arguments are not valid UTF-8 (first invalid byte at offset %d)", invalidUTF8Offset(raw))
	default:
		text, terr = fn(v, raw, st)
	}
	if terr != nil {
		st.RejectedTotal++
		if len(st.Rejected) < v.limits.MaxRejected {
			st.Rejected = append(st.Rejected, Rejection{
				Tool:      tool,
				Arguments: storedArguments(raw),
				ToolError: *terr,
			})
		}
	}
	return text, terr
}

func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// toolFunc records one validated item in st and returns the text the agent
// sees, or the envelope of why the call was refused.
type toolFunc func(v *Validator, args json.RawMessage, st *State) (string, *ToolError)

var toolFuncs = map[string]toolFunc{
	ToolReportProblem:    reportProblem,
	ToolPublishSummary:   publishSummary,
	ToolSkip:             skip,
	ToolFetchMoreContext: fetchMoreContext,
	ToolTryBlame:         tryBlame,
}

// maxStoredArgumentBytes bounds the raw arguments kept with a rejection:
// enough to see what went wrong, small enough that MaxRejected of them
// keep the state file small.
const maxStoredArgumentBytes = 1 << 10

// storedArguments is what a rejection keeps of the arguments, with the
// credentials the agent quoted blanked (redact.Text): the JSON as
// sent when it is valid UTF-8 JSON, else a JSON string of it with invalid
// bytes replaced, and past maxStoredArgumentBytes a
// {truncated, bytes, prefix} object. The result is always valid JSON in
// valid UTF-8, so strict readers (Python, Node) accept the state file.
func storedArguments(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	if red := redact.Text(string(raw)); red != string(raw) {
		raw = json.RawMessage(red)
	}
	if len(raw) > maxStoredArgumentBytes {
		b, _ := json.Marshal(map[string]any{
			"truncated": true,
			"bytes":     len(raw),
			"prefix":    string(bytes.ToValidUTF8(raw[:maxStoredArgumentBytes], []byte("\uFFFD"))),
		})
		return b
	}
	if !utf8.Valid(raw) || !json.Valid(raw) {
		b, _ := json.Marshal(string(bytes.ToValidUTF8(raw, []byte("\uFFFD"))))
		return b
	}
	if surrogateEscape.Match(raw) {
		// "\ud800" is valid JSON text but no character; strict readers
		// (serde, Go's own re-encoding) refuse or replace it. Re-encoding
		// through Go turns lone surrogates into U+FFFD.
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&v) == nil {
			if b, err := json.Marshal(v); err == nil {
				return b
			}
		}
	}
	return raw
}

var surrogateEscape = regexp.MustCompile(`\\u[dD][89a-fA-F][0-9a-fA-F]{2}`)

// clientAddedArgs are arguments an MCP client adds to every tool call on
// its own, whatever the tool's schema says. They carry nothing for aicr,
// and refusing them would refuse every call that client makes: Gemini
// CLI adds a boolean wait_for_previous (its scheduling hint) to each MCP
// tool's schema and passes it through when the model sets it.
var clientAddedArgs = []string{"wait_for_previous"}

// decodeArgs is the tool-input decoder. It decodes strictly: an argument
// the tool does not declare (an attribution field, a typo) is refused
// rather than silently dropped, and so is anything after the object.
// Only the known client-added arguments are dropped before decoding.
func decodeArgs(raw json.RawMessage, dst any, accepted ...string) *ToolError {
	remedy := "accepted arguments: " + strings.Join(accepted, ", ")
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	raw = withoutClientArgs(raw, accepted)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		if len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
			return toolErr(CodeInvalidInput, remedy, "arguments must be one JSON object; found more after it")
		}
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

// withoutClientArgs returns raw without the client-added arguments the
// tool does not itself accept. Anything that is not a single JSON object
// is returned unchanged, so the strict decoder still reports it.
func withoutClientArgs(raw json.RawMessage, accepted []string) json.RawMessage {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if dec.Decode(&fields) != nil || fields == nil || len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return raw
	}
	dropped := false
	for _, name := range clientAddedArgs {
		if _, ok := fields[name]; ok && !slices.Contains(accepted, name) {
			delete(fields, name)
			dropped = true
		}
	}
	if !dropped {
		return raw
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return raw
	}
	return b
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

func reportProblem(v *Validator, raw json.RawMessage, st *State) (string, *ToolError) {
	var a problemArgs
	if terr := decodeArgs(raw, &a, "file", "line", "end_line", "severity", "category", "message", "suggestion", "fingerprint"); terr != nil {
		return "", terr
	}
	p, terr := v.Problem(Problem{
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

func publishSummary(v *Validator, raw json.RawMessage, st *State) (string, *ToolError) {
	var a summaryArgs
	if terr := decodeArgs(raw, &a, "title", "markdown"); terr != nil {
		return "", terr
	}
	s, terr := v.Summary(Summary(a), st)
	if terr != nil {
		return "", terr
	}
	st.Summaries = append(st.Summaries, s)
	return fmt.Sprintf("recorded summary %d", len(st.Summaries)), nil
}

type skipArgs struct {
	Reason string `json:"reason"`
}

func skip(v *Validator, raw json.RawMessage, st *State) (string, *ToolError) {
	var a skipArgs
	if terr := decodeArgs(raw, &a, "reason"); terr != nil {
		return "", terr
	}
	s, terr := v.Skip(Skip(a))
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

func fetchMoreContext(v *Validator, raw json.RawMessage, st *State) (string, *ToolError) {
	var a requestArgs
	if terr := decodeArgs(raw, &a, "path", "range", "reason"); terr != nil {
		return "", terr
	}
	r, terr := v.ContextRequest(ContextRequest{Path: a.Path, Range: a.lineRange(), Reason: a.Reason}, st)
	if terr != nil {
		return "", terr
	}
	if containsRequest(st.ContextRequests, r.Path, r.Range) {
		return fmt.Sprintf("context for %s was already requested", r.Path), nil
	}
	st.ContextRequests = append(st.ContextRequests, r)
	return fmt.Sprintf("recorded context request %d for %s; it will be provided in a follow-up pass", len(st.ContextRequests), r.Path), nil
}

func tryBlame(v *Validator, raw json.RawMessage, st *State) (string, *ToolError) {
	var a requestArgs
	if terr := decodeArgs(raw, &a, "path", "range", "reason"); terr != nil {
		return "", terr
	}
	r, terr := v.AttributionRequest(AttributionRequest{Path: a.Path, Range: a.lineRange(), Reason: a.Reason}, st)
	if terr != nil {
		return "", terr
	}
	if containsAttribution(st.AttributionRequests, r.Path, r.Range) {
		return fmt.Sprintf("attribution for %s was already requested", r.Path), nil
	}
	st.AttributionRequests = append(st.AttributionRequests, r)
	return fmt.Sprintf("recorded attribution request %d for %s; it will be provided in a follow-up pass", len(st.AttributionRequests), r.Path), nil
}
