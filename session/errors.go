package session

import (
	"encoding/json"
	"fmt"
)

// The reserved error codes of aicr's MCP servers (issue 16 item 3). The
// envelope package of the admin branch is their one owner once merged;
// these are the same strings, so a client sees no difference.
const (
	CodeNotFound          = "NOT_FOUND"
	CodeInvalidInput      = "INVALID_INPUT"
	CodeSessionInvalid    = "SESSION_INVALID"
	CodeRoundStillRunning = "ROUND_STILL_RUNNING"
	CodeConfigInvalid     = "CONFIG_INVALID"
	CodeReviewerNotFound  = "REVIEWER_NOT_FOUND"
	CodeInternal          = "INTERNAL"
)

// Error is a refusal with the envelope every aicr MCP tool answers with:
// what went wrong and what to do about it. The CLI prints Message and
// Remedy; the MCP server sends it as structured content with isError.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Remedy  string `json:"remedy"`
}

func (e *Error) Error() string {
	if e.Remedy == "" {
		return e.Message
	}
	return e.Message + ": " + e.Remedy
}

// JSON is the envelope as text, for clients that only show text.
func (e *Error) JSON() string {
	data, _ := json.Marshal(e)
	return string(data)
}

func errorf(code, remedy, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Remedy: remedy}
}

func invalidInput(remedy, format string, args ...any) *Error {
	return errorf(CodeInvalidInput, remedy, format, args...)
}
