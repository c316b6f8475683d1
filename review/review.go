// Package review is the contract between a review agent and aicr: the
// findings an agent may report, how they are validated against the change,
// the state file they are collected in and the MCP tool server that
// writes it.
package review

import (
	"encoding/json"

	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// Severity orders problems; the zero value is invalid.
type Severity string

const (
	SeverityInfo     Severity = "info"
	SeverityLow      Severity = "low"
	SeverityMedium   Severity = "medium"
	SeverityHigh     Severity = "high"
	SeverityCritical Severity = "critical"
)

// Severities lists every valid severity from least to most severe.
var Severities = []Severity{SeverityInfo, SeverityLow, SeverityMedium, SeverityHigh, SeverityCritical}

// Rank returns 0..4 for valid severities (info..critical) and -1 otherwise.
func (s Severity) Rank() int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return -1
}

// Valid reports whether s is one of Severities.
func (s Severity) Valid() bool { return s.Rank() >= 0 }

// Problem is one finding anchored to a changed line of a changed file.
type Problem struct {
	File        string   `json:"file"`
	Line        int      `json:"line"`
	EndLine     int      `json:"end_line,omitempty"`
	Severity    Severity `json:"severity"`
	Category    string   `json:"category"`
	Message     string   `json:"message"`
	Suggestion  string   `json:"suggestion,omitempty"`
	Fingerprint string   `json:"fingerprint"`
}

// Summary is free-form Markdown the agent wants published with the report.
type Summary struct {
	Title    string `json:"title,omitempty"`
	Markdown string `json:"markdown"`
}

// Skip records that the agent decided not to review, and why
// (lgtm, no_reviewable_code, no_output_publisher, ...). The pipeline also
// uses it for its own skips (no_problems_suppressed, no_files_in_scope).
type Skip struct {
	Reason string `json:"reason"`
}

// ContextRequest asks the orchestrator for more of a file before a
// follow-up pass.
type ContextRequest struct {
	Path   string         `json:"path"`
	Range  *vcs.LineRange `json:"range,omitempty"`
	Reason string         `json:"reason"`
}

// AttributionRequest asks who last changed some lines (blame).
type AttributionRequest struct {
	Path   string         `json:"path"`
	Range  *vcs.LineRange `json:"range,omitempty"`
	Reason string         `json:"reason"`
}

// Rejection is a tool call that failed validation, kept so operators can
// see what an agent tried and why it was refused.
type Rejection struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	ToolError
}

// ToolError is the one error envelope every aicr MCP tool returns with
// isError; package mcperr owns it.
type ToolError = mcperr.Error

// Tool error codes: mcperr's reserved INVALID_INPUT and INTERNAL, and the
// review tools' own (docs/agent-contract.md).
const (
	CodeInvalidInput    = mcperr.InvalidInput
	CodeInternal        = mcperr.Internal
	CodeLineNotInDiff   = "LINE_NOT_IN_DIFF"
	CodeFileNotInChange = "FILE_NOT_IN_CHANGE"
	CodePathOutOfScope  = "PATH_OUT_OF_SCOPE"
	CodeLimitExceeded   = "LIMIT_EXCEEDED"
)

// StateVersion is the current .aicr-output-state.json format version.
const StateVersion = 1

// StateFileName is the state file's name inside the run's agent
// directory; package rundir owns the run directory's layout.
const StateFileName = rundir.StateFileName

// State is the content of .aicr-output-state.json.
type State struct {
	Version             int                  `json:"version"`
	Problems            []Problem            `json:"problems"`
	Summaries           []Summary            `json:"summaries"`
	Skip                *Skip                `json:"skip"`
	ContextRequests     []ContextRequest     `json:"contextRequests"`
	AttributionRequests []AttributionRequest `json:"attributionRequests"`
	// Rejected keeps the first Limits.MaxRejected refused calls, enough
	// to see what an agent got wrong without letting a runaway agent grow
	// the file without bound.
	Rejected []Rejection `json:"rejected"`
	// RejectedTotal counts every refused call of the pass, including those
	// past the cap that Rejected does not keep, so a pass whose findings
	// were refused never looks clean.
	RejectedTotal int `json:"rejectedTotal"`
}

// RejectedDropped is how many refused calls are counted but not kept.
func (s *State) RejectedDropped() int { return max(0, s.RejectedTotal-len(s.Rejected)) }

// Result is what a review produced and what channels publish.
type Result struct {
	Problems  []Problem `json:"problems"`
	Summaries []Summary `json:"summaries"`
	Skip      *Skip     `json:"skip,omitempty"`
}

// Result extracts the publishable part of a state.
func (s *State) Result() Result {
	r := Result{Problems: s.Problems, Summaries: s.Summaries, Skip: s.Skip}
	if r.Problems == nil {
		r.Problems = []Problem{}
	}
	if r.Summaries == nil {
		r.Summaries = []Summary{}
	}
	return r
}
