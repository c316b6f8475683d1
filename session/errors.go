package session

import "github.com/aicr-dev/aicr/mcperr"

// Error is the envelope every aicr MCP tool answers with (mcperr): what
// went wrong and what to do about it. The CLI verbs print Message and
// Remedy; the MCP server sends it as structured content with isError.
type Error = mcperr.Error

// The reserved codes a session can answer with; mcperr owns them.
const (
	CodeNotFound          = mcperr.NotFound
	CodeInvalidInput      = mcperr.InvalidInput
	CodeSessionInvalid    = mcperr.SessionInvalid
	CodeRoundStillRunning = mcperr.RoundStillRunning
	CodeConfigInvalid     = mcperr.ConfigInvalid
	CodeReviewerNotFound  = mcperr.ReviewerNotFound
	CodeInternal          = mcperr.Internal
)

func errorf(code, remedy, format string, args ...any) *Error {
	return mcperr.New(code, remedy, format, args...)
}

func invalidInput(remedy, format string, args ...any) *Error {
	return errorf(CodeInvalidInput, remedy, format, args...)
}
