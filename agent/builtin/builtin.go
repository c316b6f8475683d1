// Package builtin is the review agent that needs no LLM: it scans the
// added lines of a change for hard-coded credentials and merge-conflict
// markers and reports them through the aicr review tools, with the same
// validation, limits and state file as an LLM agent's calls, so the whole
// pipeline can run offline.
//
// The tools run in process (review.ToolSession, the handler `aicr mcp
// serve` wraps): the agent is Go in the aicr process, so spawning a server
// to talk JSON-RPC to itself only cost a process per review (41% of the
// pipeline's CPU when it did). The MCP contract itself is covered by the
// review package's and `aicr mcp serve`'s MCP-client tests.
package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// Kind is the config name of this agent.
const Kind = "builtin"

// Skip reasons the builtin agent reports: the review package's, so the
// words have one owner.
const (
	SkipLGTM             = review.SkipReasonLGTM
	SkipNoReviewableCode = review.SkipReasonNoReviewableCode
)

// Options configure the builtin agent.
type Options struct {
	// Limits bound what one pass may record; zero fields keep the
	// review package's defaults.
	Limits review.Limits
	// Logger receives progress and rejected tool calls; nil discards.
	Logger *slog.Logger
}

// Agent is the builtin reviewer.
type Agent struct {
	limits review.Limits
	log    *slog.Logger
}

// New returns a builtin agent.
func New(opts Options) (*Agent, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Agent{limits: opts.Limits, log: log}, nil
}

// IgnoresRepoFiles is true: the checks are the same in every repository,
// so the repository's instructions, AGENTS.md and skills need not be
// fetched for this agent.
func (a *Agent) IgnoresRepoFiles() bool { return true }

// Review scans the added lines of the run's change and reports what it
// finds through the review tools into run.StatePath(). A tool call the
// tools reject is logged and the review goes on, except that once they
// answer LIMIT_EXCEEDED no further problem is sent: the rest are counted
// in the summary instead. An error means the review as a whole could not
// be done.
//
// Only the first pass does anything: the builtin checks ask for no
// context and always record a structured result, so a follow-up or repair
// pass has nothing to add and returns at once.
func (a *Agent) Review(ctx context.Context, run rundir.Layout, p pass.Pass) (pass.Stats, error) {
	stats := pass.Stats{Agent: Kind}
	if p.Kind != pass.Review && p.Kind != "" {
		return stats, nil
	}
	return stats, a.review(ctx, run)
}

func (a *Agent) review(ctx context.Context, run rundir.Layout) (err error) {
	change, err := run.ReadChange()
	if err != nil {
		return err
	}
	lang, err := outputLanguage(run)
	if err != nil {
		return err
	}
	res, err := scanChange(ctx, lang, change, run.SrcDir(), a.log)
	if err != nil {
		return err
	}

	tools, err := review.NewToolSession(review.ServerOptions{StatePath: run.StatePath(), ChangePath: run.ChangePath(),
		SrcDir: run.SrcDir(), Limits: a.limits})
	if err != nil {
		return fmt.Errorf("review tools: %w", err)
	}
	// Close flushes what the session holds back (the refusal count past
	// the rejected cap) on every way out; its failure is the review's.
	defer func() {
		if cerr := tools.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("review tools: %w", cerr)
		}
	}()
	sess := &session{tools: tools, log: a.log}

	tally := reportTally{}
	for i, f := range res.findings {
		terr, err := sess.call(ctx, review.ToolReportProblem, map[string]any{
			"file":       f.File,
			"line":       f.Line,
			"severity":   string(f.Severity),
			"category":   f.Category,
			"message":    f.Message,
			"suggestion": f.Suggestion,
		})
		if err != nil {
			return err
		}
		if terr == nil {
			continue
		}
		if terr.Code == review.CodeLimitExceeded {
			// Every later call would be refused the same way; sending
			// them only grows the state file.
			tally.overLimit = len(res.findings) - i
			a.log.Warn("builtin agent: problem limit reached; not reporting the rest",
				"reported", i-tally.rejected, "not_reported", tally.overLimit)
			break
		}
		tally.rejected++
	}

	switch {
	case res.files == 0:
		_, err = sess.call(ctx, review.ToolSkip, map[string]any{"reason": SkipNoReviewableCode})
	case len(res.findings) == 0:
		_, err = sess.call(ctx, review.ToolSkip, map[string]any{"reason": SkipLGTM})
	default:
		_, err = sess.call(ctx, review.ToolPublishSummary, map[string]any{
			"title":    lang.T(im.KeyBuiltinTitle),
			"markdown": summaryMarkdown(lang, res, tally),
		})
	}
	return err
}

// reportTally counts the findings that did not become problems.
type reportTally struct {
	rejected  int // refused for a reason of their own
	overLimit int // not sent: the problem limit was reached
}

// scanResult is what the rules found and how much they looked at.
type scanResult struct {
	findings []finding
	files    int // text files with added lines
	lines    int // added lines scanned
}

// scanChange runs the rules over the added lines only: context lines and
// the rest of the file are not what the change introduced. Files are read
// through review.ReadSource, so a symlink in src/ cannot lead outside it.
func scanChange(ctx context.Context, lang im.Language, change *vcs.Change, srcDir string, log *slog.Logger) (scanResult, error) {
	var res scanResult
	for _, fc := range change.Files {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("scan change: %w", context.Cause(ctx))
		}
		if fc.NodeKind == vcs.NodeDir || fc.Binary || fc.Skipped != "" || len(fc.Added) == 0 {
			continue
		}
		data, err := review.ReadSource(srcDir, fc.Path)
		if err != nil {
			log.Warn("builtin agent: file content unavailable", "file", fc.Path, "err", err)
			continue
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary content the adapter did not flag
		}
		lines := strings.Split(string(data), "\n")
		res.files++
		for _, r := range fc.Added {
			for n := max(r.Start, 1); n <= r.End && n <= len(lines); n++ {
				res.lines++
				res.findings = append(res.findings, scanLineIn(lang, fc.Path, n, strings.TrimSuffix(lines[n-1], "\r"))...)
			}
		}
	}
	return res, nil
}

func summaryMarkdown(lang im.Language, res scanResult, tally reportTally) string {
	counts := map[string]int{}
	for _, f := range res.findings {
		counts[f.Kind]++
	}
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	plural := func(n int, one, many im.Key) string {
		if n == 1 {
			return lang.T(one)
		}
		return lang.T(many, n)
	}
	var b strings.Builder
	b.WriteString(lang.T(im.KeyBuiltinScanned, plural(res.lines, im.KeyBuiltinLines1, im.KeyBuiltinLinesN),
		plural(res.files, im.KeyBuiltinFiles1, im.KeyBuiltinFilesN)) + "\n\n")
	for _, k := range kinds {
		fmt.Fprintf(&b, "- %s: %d\n", k, counts[k])
	}
	if tally.rejected > 0 {
		b.WriteString("\n" + plural(tally.rejected, im.KeyBuiltinRejected1, im.KeyBuiltinRejectedN) + "\n")
	}
	if tally.overLimit > 0 {
		b.WriteString("\n" + plural(tally.overLimit, im.KeyBuiltinOverLimit1, im.KeyBuiltinOverLimitN) + "\n")
	}
	return b.String()
}

// session calls the review tools in process.
type session struct {
	tools *review.ToolSession
	log   *slog.Logger
}

// call invokes a tool. terr is the tools' envelope when they refused the
// call; err is set only when the call could not be made or recorded: the
// pass ended, or the state file could not be written.
func (s *session) call(ctx context.Context, tool string, args map[string]any) (terr *review.ToolError, err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("call %s: %w", tool, context.Cause(ctx))
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", tool, err)
	}
	text, isError := s.tools.Call(ctx, tool, raw)
	if err := s.tools.Err(); err != nil {
		return nil, fmt.Errorf("call %s: %w", tool, err)
	}
	if isError {
		terr = toolError(text)
		s.log.Warn("builtin agent: tool call rejected", "tool", tool, "code", terr.Code, "error", terr.Message)
		return terr, nil
	}
	s.log.Debug("builtin agent: tool call", "tool", tool, "result", text)
	return nil, nil
}

// toolError reads the envelope the tools answer a refusal with.
func toolError(text string) *review.ToolError {
	var env review.ToolError
	if json.Unmarshal([]byte(text), &env) == nil && env.Code != "" {
		return &env
	}
	return &review.ToolError{Code: "UNKNOWN", Message: text}
}
