package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/aicr-dev/aicr/mcperr"
)

// Tool names of `aicr mcp admin`.
const (
	ToolRunsList        = "runs_list"
	ToolRunInspect      = "run_inspect"
	ToolDispatchList    = "dispatch_list"
	ToolQueueStatus     = "queue_status"
	ToolDoctor          = "doctor"
	ToolConfigCheck     = "config_check"
	ToolRunRetry        = "run_retry"
	ToolDispatchRetry   = "dispatch_retry"
	ToolRunCancel       = "run_cancel"
	ToolRepoPause       = "repo_pause"
	ToolRepoResume      = "repo_resume"
	ToolPrune           = "prune"
	ToolFindingsList    = "findings_list"
	ToolFindingsShow    = "findings_show"
	ToolFindingsStats   = "findings_stats"
	ToolFindingsDismiss = "findings_dismiss"
	ToolFindingsReopen  = "findings_reopen"
)

// NoInput is the input of a tool that takes no arguments.
type NoInput struct{}

const instructions = `aicr admin tools: query and repair an aicr installation (the review queue, runs, deliveries to chat channels, repos).
Read-only tools: runs_list, run_inspect, dispatch_list, queue_status, doctor, config_check, findings_list, findings_show, findings_stats.
Mutating tools (run_retry, dispatch_retry, run_cancel, repo_pause, repo_resume, prune, findings_dismiss, findings_reopen) are two-phase: called without
confirm they return the plan and write nothing; show the plan to the user, then call again with confirm: true and the
plan's plan_id to apply it. Failures are {code, message, remedy}: act on the remedy.`

// NewServer is the admin MCP server: tools only, each with typed input
// and output schemas, every failure an mcperr envelope.
func NewServer(a *Admin, version string) (*server.MCPServer, error) {
	s := server.NewMCPServer("aicr-admin", version,
		server.WithToolCapabilities(false),
		server.WithToolHandlerMiddleware(mcperr.Middleware),
		server.WithInstructions(instructions),
	)
	errs := []error{
		addTool(s, ToolRunsList, "List review runs, newest first (aicr audit list). A queued run of a paused repo has repo_paused set: it is held.", readOnly, a.RunsList),
		addTool(s, ToolRunInspect, "Everything recorded about one run: its events, problems, summaries, deliveries, agent cost, sandbox egress (aicr audit show).", readOnly, a.RunInspect),
		addTool(s, ToolDispatchList, "List deliveries of reports to channels, newest first, each with its attempts and the platform's answers (aicr dispatch list).", readOnly, a.DispatchList),
		addTool(s, ToolQueueStatus, "The review queue by repo: queued, retrying, running and held runs, the oldest queued run, and paused repos (aicr queue status).", readOnly, a.QueueStatus),
		addTool(s, ToolDoctor, "Check the installation the way it really runs: each SVN hook run as svn would, the daemon, the VCS clients (aicr doctor). Failed checks come with their fix.", readOnly, a.Doctor),
		addTool(s, ToolConfigCheck, "Validate the config file the way the daemon loads it, with the daemon's preflight checks (aicr config check). Problems are in the result (ok false), not an error.", readOnly, a.ConfigCheck),
		addTool(s, ToolRunRetry, "Queue failed runs again, keeping their ids: one by run_id, or every run that failed since failed_since (aicr run retry). Two-phase: without confirm, only the plan.", mutating, a.RunRetry),
		addTool(s, ToolDispatchRetry, "Put a failed, dead or unknown-outcome delivery back to pending with a fresh give-up window; the daemon sends it (aicr dispatch retry --queue). Two-phase.", mutating, a.DispatchRetry),
		addTool(s, ToolRunCancel, "Cancel a queued run (waiting, retrying or held by a paused repo): it ends as skipped, reason cancelled. Running runs are refused (aicr run cancel). Two-phase.", mutating, a.RunCancel),
		addTool(s, ToolRepoPause, "Pause a repo: its events are still recorded and queued, but no review starts until repo_resume; running reviews finish (aicr repo pause). Two-phase.", mutating, a.RepoPause),
		addTool(s, ToolRepoResume, "Resume a paused repo: its held runs are reviewed in queue order (aicr repo resume). Two-phase.", mutating, a.RepoResume),
		addTool(s, ToolPrune, "Remove the run directories (changed files, diff, agent workspace) of runs finished longer ago than older_than or [retention] run_dirs; the audit rows stay (aicr prune). Two-phase.", mutating, a.Prune),
		addTool(s, ToolFindingsList, "List findings (problems as they live across commits: open, reopened, resolved, dismissed), newest first, filtered by repo, path, state, severity, author, category or run (aicr findings list).", readOnly, a.FindingsList),
		addTool(s, ToolFindingsShow, "One finding with its history: first seen (run, revision, author), every review that saw it again, resolutions, dismissals and reopenings with who and from where (aicr findings show).", readOnly, a.FindingsShow),
		addTool(s, ToolFindingsStats, "Precision of the findings per category, rule, agent and model: reported, useful, dismissed (false positive), resolved, open, and the share not dismissed as false positives (aicr findings stats).", readOnly, a.FindingsStats),
		addTool(s, ToolFindingsDismiss, "Dismiss a finding as false_positive, wont_fix or accepted_risk: it is never reported again in its repo; audited and reversible with findings_reopen (aicr findings dismiss). Two-phase.", mutating, a.FindingsDismiss),
		addTool(s, ToolFindingsReopen, "Reopen a dismissed or resolved finding: it is reported again (aicr findings reopen). Two-phase.", mutating, a.FindingsReopen),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

type toolKind int

const (
	readOnly toolKind = iota
	mutating
)

// addTool registers fn with schemas derived from its types. The input is
// decoded strictly: an unknown or mistyped argument is INVALID_INPUT.
func addTool[In, Out any](s *server.MCPServer, name, description string, kind toolKind, fn func(context.Context, In) (Out, error)) error {
	in, err := mcperr.SchemaFor[In]()
	if err != nil {
		return fmt.Errorf("tool %s: input schema: %w", name, err)
	}
	opts := []mcp.ToolOption{
		mcp.WithDescription(description),
		mcp.WithRawInputSchema(in),
		// NewTool presets an object InputSchema; a tool carries one kind.
		func(t *mcp.Tool) { t.InputSchema.Type = "" },
		mcp.WithReadOnlyHintAnnotation(kind == readOnly),
		mcp.WithDestructiveHintAnnotation(kind == mutating),
		mcp.WithIdempotentHintAnnotation(kind == readOnly),
		mcp.WithOpenWorldHintAnnotation(false),
	}
	out, err := mcperr.OutputSchema[Out]()
	if err != nil {
		return fmt.Errorf("tool %s: output schema: %w", name, err)
	}
	opts = append(opts, mcp.WithRawOutputSchema(out))
	tool := mcp.NewTool(name, opts...)
	s.AddTool(tool, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := decodeStrict[In](req)
		if err != nil {
			return mcperr.Result(mcperr.New(mcperr.InvalidInput, "send the arguments the tool's input schema lists, with their types", "%s: %v", name, err)), nil
		}
		res, err := fn(ctx, args)
		if err != nil {
			return mcperr.Result(mcperr.From(err)), nil
		}
		return mcp.NewToolResultStructuredOnly(res), nil
	})
	return nil
}

func decodeStrict[In any](req mcp.CallToolRequest) (In, error) {
	var args In
	raw := req.Params.RawArguments
	if len(raw) == 0 {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return args, err
		}
		raw = b
	}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return args, err
	}
	return args, nil
}

// Serve runs the admin server on in/out until in ends or ctx is done;
// diagnostics go to errOut, stdout carries the protocol only.
func Serve(ctx context.Context, a *Admin, version string, in io.Reader, out, errOut io.Writer) error {
	s, err := NewServer(a, version)
	if err != nil {
		return err
	}
	stdio := server.NewStdioServer(s)
	stdio.SetErrorLogger(log.New(errOut, "aicr mcp admin: ", log.LstdFlags))
	if err := stdio.Listen(ctx, mcperr.LimitLines(in, mcperr.MaxLineBytes), out); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve mcp: %w", err)
	}
	return nil
}
