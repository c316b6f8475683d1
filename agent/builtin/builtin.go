// Package builtin is the review agent that needs no LLM: it scans the
// added lines of a change for hard-coded credentials and merge-conflict
// markers and reports them through the aicr MCP tools, exactly as an LLM
// agent would, so the whole pipeline can run offline.
package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/childenv"
	"github.com/aicr-dev/aicr/internal/tailbuf"
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

var (
	// ErrNoMCPCommand: the agent was not told how to start `aicr mcp serve`.
	ErrNoMCPCommand = errors.New("no mcp command configured")
	// ErrMissingTools: the MCP server does not offer the aicr tools.
	ErrMissingTools = errors.New("mcp server lacks aicr tools")
)

// Options configure the builtin agent.
type Options struct {
	// MCPCommand starts the aicr MCP tool server, e.g.
	// {"/usr/local/bin/aicr", "mcp", "serve"}; Review appends
	// --state <run.StatePath()> --change <run.ChangePath()> and the limits.
	MCPCommand []string
	// Limits are passed to the server as flags (Limits.ServeArgs); zero
	// fields keep the server's defaults.
	Limits review.Limits
	// Logger receives progress and rejected tool calls; nil discards.
	Logger *slog.Logger
	// Env is added to the MCP server's environment, which is otherwise
	// only childenv.Build's allowlist: the daemon's own environment
	// (trigger secret, channel credentials read through *_env) never
	// reaches the child.
	Env []string
}

// Agent is the builtin reviewer.
type Agent struct {
	cmd    []string
	limits review.Limits
	log    *slog.Logger
	env    []string
}

// New returns a builtin agent.
func New(opts Options) (*Agent, error) {
	if len(opts.MCPCommand) == 0 || opts.MCPCommand[0] == "" {
		return nil, fmt.Errorf("builtin agent: %w", ErrNoMCPCommand)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Agent{cmd: append([]string(nil), opts.MCPCommand...), limits: opts.Limits, log: log, env: append([]string(nil), opts.Env...)}, nil
}

// Review scans the added lines of the run's change and reports what it
// finds through the MCP server into run.StatePath(). A tool call the server
// rejects is logged and the review goes on, except that once the server
// answers LIMIT_EXCEEDED no further problem is sent: the rest are counted
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

func (a *Agent) review(ctx context.Context, run rundir.Layout) error {
	change, err := run.ReadChange()
	if err != nil {
		return err
	}
	res, err := scanChange(ctx, change, run.SrcDir(), a.log)
	if err != nil {
		return err
	}

	sess, err := a.connect(ctx, run)
	if err != nil {
		return err
	}
	defer sess.close()

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
			"title":    "Builtin checks",
			"markdown": summaryMarkdown(res, tally),
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
func scanChange(ctx context.Context, change *vcs.Change, srcDir string, log *slog.Logger) (scanResult, error) {
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
				res.findings = append(res.findings, scanLine(fc.Path, n, strings.TrimSuffix(lines[n-1], "\r"))...)
			}
		}
	}
	return res, nil
}

func summaryMarkdown(res scanResult, tally reportTally) string {
	counts := map[string]int{}
	for _, f := range res.findings {
		counts[f.Kind]++
	}
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	fmt.Fprintf(&b, "Scanned %d added %s in %d %s for hard-coded credentials and merge-conflict markers.\n\n",
		res.lines, plural(res.lines, "line", "lines"), res.files, plural(res.files, "file", "files"))
	for _, k := range kinds {
		fmt.Fprintf(&b, "- %s: %d\n", k, counts[k])
	}
	if tally.rejected > 0 {
		fmt.Fprintf(&b, "\n%d %s could not be recorded.\n", tally.rejected, plural(tally.rejected, "finding", "findings"))
	}
	if tally.overLimit > 0 {
		fmt.Fprintf(&b, "\n%d more %s not reported: the review reached its limit of problems ([agent] max_problems).\n",
			tally.overLimit, plural(tally.overLimit, "finding", "findings"))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// session is a connection to a spawned `aicr mcp serve`.
type session struct {
	c      *client.Client
	stderr *tailbuf.Buffer
	log    *slog.Logger
}

func (a *Agent) connect(ctx context.Context, run rundir.Layout) (*session, error) {
	args := append(append([]string(nil), a.cmd[1:]...), "--state", run.StatePath(), "--change", run.ChangePath())
	args = append(args, a.limits.ServeArgs()...)
	stderr := tailbuf.New(4 << 10)
	// The command is built here so the child dies with ctx and runs in
	// the agent directory, like an agent CLI would start it. Its stderr
	// goes straight to the buffer: exec's own copy completes before Wait
	// returns, so after close the buffer holds everything the server said.
	cmdFunc := func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, command, args...)
		cmd.Env = childenv.Build(nil, append(append([]string{"HOME=" + run.AgentDir()}, a.env...), env...)...)
		cmd.Stderr = stderr
		cmd.Dir = run.AgentDir()
		return cmd, nil
	}
	c, err := client.NewStdioMCPClientWithOptions(a.cmd[0], nil, args,
		transport.WithCommandFunc(cmdFunc),
		transport.WithCommandLogger(a.log),
	)
	if err != nil {
		return nil, fmt.Errorf("start mcp server: %w", err)
	}
	s := &session{c: c, stderr: stderr, log: a.log}

	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "aicr-builtin", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		s.close() // first, so stderr is complete
		return nil, fmt.Errorf("initialize mcp server: %w%s", err, stderrSuffix(stderr))
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("list mcp tools: %w%s", err, stderrSuffix(stderr))
	}
	have := map[string]bool{}
	for _, t := range list.Tools {
		have[t.Name] = true
	}
	var missing []string
	for _, name := range review.ToolNames {
		if !have[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		s.close()
		return nil, fmt.Errorf("list mcp tools: %w: missing %s", ErrMissingTools, strings.Join(missing, ", "))
	}
	return s, nil
}

// call invokes a tool. terr is the server's envelope when it refused the
// call; err is set only when the server could not be asked at all.
func (s *session) call(ctx context.Context, tool string, args map[string]any) (terr *review.ToolError, err error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("call %s: %w%s", tool, err, stderrSuffix(s.stderr))
	}
	if res.IsError {
		terr = toolError(res)
		s.log.Warn("builtin agent: tool call rejected", "tool", tool, "code", terr.Code, "error", terr.Message)
		return terr, nil
	}
	s.log.Debug("builtin agent: tool call", "tool", tool, "result", resultText(res))
	return nil, nil
}

// toolError reads the envelope from structuredContent, or from the text
// for servers that only send text.
func toolError(res *mcp.CallToolResult) *review.ToolError {
	var env review.ToolError
	if raw, err := json.Marshal(res.StructuredContent); err == nil && json.Unmarshal(raw, &env) == nil && env.Code != "" {
		return &env
	}
	text := resultText(res)
	if json.Unmarshal([]byte(text), &env) == nil && env.Code != "" {
		return &env
	}
	return &review.ToolError{Code: "UNKNOWN", Message: text}
}

func (s *session) close() {
	if err := s.c.Close(); err != nil {
		s.log.Debug("builtin agent: close mcp server", "err", err)
	}
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// stderrSuffix is the end of the MCP server's stderr, for error messages.
func stderrSuffix(t *tailbuf.Buffer) string {
	s := strings.TrimSpace(t.String())
	if s == "" {
		return ""
	}
	return " (server stderr: " + s + ")"
}
