package builtin

import (
	"context"
	"log/slog"

	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
)

// Scan runs the builtin checks over run's change and returns what they
// find as problems, without an MCP server: the ladder's deterministic
// pre-pass for model-backed agents, whose findings it merges with the
// model's so a leaked credential is reported even when the model misses
// it. The problems are not validated yet; the ladder records them through
// the review server's validation.
func Scan(ctx context.Context, run rundir.Layout) ([]review.Problem, error) {
	change, err := run.ReadChange()
	if err != nil {
		return nil, err
	}
	lang, err := outputLanguage(run)
	if err != nil {
		return nil, err
	}
	res, err := scanChange(ctx, lang, change, run.SrcDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	problems := make([]review.Problem, 0, len(res.findings))
	for _, f := range res.findings {
		problems = append(problems, review.Problem{File: f.File, Line: f.Line, Severity: f.Severity,
			Category: f.Category, Message: f.Message, Suggestion: f.Suggestion})
	}
	return problems, nil
}

// outputLanguage is the language the daemon left for the review's text
// (prompt.WriteOutputLanguage): the builtin findings are worded in it,
// like the model's.
func outputLanguage(run rundir.Layout) (im.Language, error) {
	l, err := prompt.ReadOutputLanguage(run.OutputLanguagePath())
	if err != nil {
		return "", err
	}
	return im.Language(l).Norm(), nil
}
