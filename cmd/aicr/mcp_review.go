package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/session"
)

// The review session tools of `aicr mcp review`.
const (
	toolReviewBegin = "review_begin"
	toolReviewWait  = "review_wait"
	toolReviewReply = "review_reply"
	toolReviewEnd   = "review_end"
)

func newCmdMCPReview(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "review",
		Short: "Serve the review session tools (review_begin, review_wait, review_reply, review_end) over stdio",
		Long: `Serve four MCP tools over stdin/stdout (newline-delimited JSON-RPC 2.0; stdout
carries the protocol only, diagnostics go to stderr) that run review sessions
for a developer's coding agent: review_begin, review_wait, review_reply and
review_end. Each does exactly what 'aicr session begin|wait|reply|end' does.

Session state lives in the audit database of the config's data_dir and each
round runs in a detached process, so a session survives this server: a
review_wait from a restarted server continues it. review_wait's default wait
is $` + session.WaitDefaultEnv + ` seconds (50 when unset).

A broken config does not stop the server: every call answers CONFIG_INVALID
with the reason, so the agent can tell the developer.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return mcpReviewRun(cmd.Context(), f)
		},
	}
	addConfigFlag(cmd, f)
	return cmd
}

// reviewTools holds the Service, opened at the first call so a config
// fixed while the server runs is picked up by the next call.
type reviewTools struct {
	f   *Factory
	log *slog.Logger

	mu      sync.Mutex
	svc     *session.Service
	closeFn func()
}

func (t *reviewTools) service(ctx context.Context) (*session.Service, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.svc != nil {
		return t.svc, nil
	}
	svc, closeFn, err := sessionService(ctx, t.f, t.log)
	if err != nil {
		// Load the config afresh at the next call.
		t.f.loaded = false
		return nil, err
	}
	t.svc, t.closeFn = svc, closeFn
	return svc, nil
}

func (t *reviewTools) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closeFn != nil {
		t.closeFn()
	}
}

func mcpReviewRun(ctx context.Context, f *Factory) error {
	ios := f.IOStreams
	tools := &reviewTools{f: f, log: slog.New(slog.NewTextHandler(ios.ErrOut, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	defer tools.close()
	s, err := newReviewServer(tools)
	if err != nil {
		return err
	}
	stdio := server.NewStdioServer(s)
	stdio.SetErrorLogger(log.New(ios.ErrOut, "aicr mcp review: ", log.LstdFlags))
	if err := stdio.Listen(ctx, mcperr.LimitLines(ios.In, mcperr.MaxLineBytes), ios.Out); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve mcp: %w", err)
	}
	return nil
}

// newReviewServer is `aicr mcp review`'s server: the four session tools,
// each with its input and output schema, and every failure (a panic
// included) an mcperr envelope rather than a JSON-RPC error.
func newReviewServer(tools *reviewTools) (*server.MCPServer, error) {
	s := server.NewMCPServer("aicr-review", version,
		server.WithToolCapabilities(false),
		server.WithToolHandlerMiddleware(mcperr.Middleware),
		server.WithInstructions(reviewInstructions))
	begin, err := withOutputSchema[session.Started](reviewBeginTool())
	if err != nil {
		return nil, err
	}
	wait, err := withOutputSchema[session.Waited](reviewWaitTool())
	if err != nil {
		return nil, err
	}
	reply, err := withOutputSchema[session.Started](reviewReplyTool())
	if err != nil {
		return nil, err
	}
	end, err := withOutputSchema[session.Ended](reviewEndTool())
	if err != nil {
		return nil, err
	}
	s.AddTool(begin, handleSession(tools, func(ctx context.Context, svc *session.Service, in session.BeginInput) (any, error) {
		return svc.Begin(ctx, in)
	}))
	s.AddTool(wait, handleSession(tools, func(ctx context.Context, svc *session.Service, in session.WaitInput) (any, error) {
		return svc.Wait(ctx, in)
	}))
	s.AddTool(reply, handleSession(tools, func(ctx context.Context, svc *session.Service, in session.ReplyInput) (any, error) {
		return svc.Reply(ctx, in)
	}))
	s.AddTool(end, handleSession(tools, func(ctx context.Context, svc *session.Service, in session.EndInput) (any, error) {
		return svc.End(ctx, in)
	}))
	return s, nil
}

// withOutputSchema declares the tool's result type, or the envelope.
func withOutputSchema[Out any](t mcp.Tool) (mcp.Tool, error) {
	out, err := mcperr.OutputSchema[Out]()
	if err != nil {
		return t, fmt.Errorf("tool %s: output schema: %w", t.Name, err)
	}
	mcp.WithRawOutputSchema(out)(&t)
	return t, nil
}

// handleSession decodes a call's arguments strictly into In and answers
// with the result as structured content and as JSON text, or with the
// error envelope.
func handleSession[In any](tools *reviewTools, call func(context.Context, *session.Service, In) (any, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw := req.Params.RawArguments
		if len(raw) == 0 {
			var err error
			if raw, err = json.Marshal(req.Params.Arguments); err != nil || string(raw) == "null" {
				raw = []byte("{}")
			}
		}
		var in In
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return sessionErrorResult(&mcperr.Error{Code: mcperr.InvalidInput, Message: "arguments: " + err.Error(), //nolint:nilerr // the error is the answer: MCP carries it to the agent as the tool's error envelope
				Remedy: "pass only the parameters the tool's input schema lists, with their types"}), nil
		}
		svc, err := tools.service(ctx)
		if err != nil {
			return sessionErrorResult(err), nil
		}
		res, err := call(ctx, svc, in)
		if err != nil {
			return sessionErrorResult(err), nil
		}
		text, _ := json.Marshal(res)
		out := mcp.NewToolResultStructured(res, string(text))
		if e, ok := res.(session.Ended); ok && e.PublishError != "" {
			// Ended, but the publication asked for did not happen.
			out.IsError = true
		}
		return out, nil
	}
}

func sessionErrorResult(err error) *mcp.CallToolResult { return mcperr.Result(mcperr.From(err)) }

const reviewInstructions = `aicr reviews a change before (or after) it is submitted, in rounds.
Call review_begin with the target, then review_wait until next is not "running".
next "respond": fix the valid problems and rebut the others, then review_reply with what you did.
next "done": call review_end. next "stopped": the round failed (next_reason says why); review_reply starts a new round.
Errors answer {code, message, remedy}: do what the remedy says.`

func reviewBeginTool() mcp.Tool {
	return mcp.NewTool(toolReviewBegin,
		mcp.WithDescription("Start a review session and its round 1 in the background. Returns {session_id, round, status: \"running\"}; then call review_wait."),
		mcp.WithString("target", mcp.Required(), mcp.Description("What to review: svn-wc:<path> (local modifications of an svn working copy, new files included), p4-shelf:<change>, svn-rev:<n>, p4-change:<n> or patch:<file>.")),
		mcp.WithString("repo", mcp.Description("The configured repo the target belongs to; needed for svn-rev, p4-change and p4-shelf when several are configured, and to publish at the end.")),
		mcp.WithString("input", mcp.Description("Notes for the reviewer: what the change is for, what to look at.")),
		mcp.WithString("agent", mcp.Description("Agent kind for this session instead of the configured one (builtin, llm, an agent CLI).")),
		mcp.WithString("model", mcp.Description("Model for this session instead of the configured one.")),
		mcp.WithInteger("timeout_seconds", mcp.Min(1), mcp.Description("Bound on each round's review; omit for the agent's own limits.")),
		mcp.WithSchemaAdditionalProperties(false),
	)
}

func reviewWaitTool() mcp.Tool {
	return mcp.NewTool(toolReviewWait,
		mcp.WithDescription("Wait for the session's current round, returning early when it ends. Returns status (running, completed, failed, timeout), elapsed_seconds, the problems and summary when completed, and next + next_reason: running/reviewer_running (call again), respond/open_problems (fix or rebut, then review_reply), done/no_problems (review_end), stopped/<reason>."),
		mcp.WithString("session_id", mcp.Required(), mcp.Description("The session_id review_begin returned.")),
		mcp.WithInteger("max_wait_seconds", mcp.Min(0), mcp.Description("How long this call waits (default from the server's "+session.WaitDefaultEnv+", else 50).")),
		mcp.WithSchemaAdditionalProperties(false),
	)
}

func reviewReplyTool() mcp.Tool {
	return mcp.NewTool(toolReviewReply,
		mcp.WithDescription("Start the next round with your reply (rebuttals of false positives, \"fixed, look again\"). The round re-reads the target and sees the previous findings. ROUND_STILL_RUNNING while a round runs: call review_wait first."),
		mcp.WithString("session_id", mcp.Required(), mcp.Description("The session.")),
		mcp.WithString("input", mcp.Required(), mcp.Description("Your reply to the last round.")),
		mcp.WithSchemaAdditionalProperties(false),
	)
}

func reviewEndTool() mcp.Tool {
	return mcp.NewTool(toolReviewEnd,
		mcp.WithDescription("End the session (a running round is stopped). Returns {status: \"ended\", finalized, verdict}: finalized when the last round completed; verdict approved (no problems) or changes_requested."),
		mcp.WithString("session_id", mcp.Required(), mcp.Description("The session.")),
		mcp.WithBoolean("publish", mcp.Description("Send the final round to the repo's channels (needs a completed round and a repo).")),
		mcp.WithSchemaAdditionalProperties(false),
	)
}
