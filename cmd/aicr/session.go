package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/session"
)

func newCmdSession(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Review a change before it is submitted, in rounds (the review_* MCP tools as verbs)",
		Long: `A review session reviews a target with the configured agent in the background,
in rounds: begin starts round 1, wait waits for the round, reply starts the next
round with your answer (the target is read again), end ends the session. Each
verb does exactly what the MCP tool of the same name in 'aicr mcp review' does;
--format json prints the tool's result.

Targets: svn-wc:<path> (local modifications of a working copy, new files
included), p4-shelf:<change>, svn-rev:<n>, p4-change:<n>, patch:<file>.`,
	}
	cmd.AddCommand(newCmdSessionBegin(f), newCmdSessionWait(f), newCmdSessionReply(f), newCmdSessionEnd(f), newCmdSessionRunRound(f))
	return cmd
}

// sessionService is the Service the verbs and the MCP server share: the
// config's store, and each round in a detached `aicr session run-round`.
func sessionService(ctx context.Context, f *Factory, log *slog.Logger) (*session.Service, func(), error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, &mcperr.Error{Code: mcperr.ConfigInvalid, Message: err.Error(), Remedy: "fix the config file named in the message"}
	}
	store, err := f.Store(ctx)
	if err != nil {
		return nil, nil, &mcperr.Error{Code: mcperr.Internal, Message: err.Error(), Remedy: "run as the data_dir's owner, with a data_dir it can write"}
	}
	bin := cfg.Daemon.AicrBinary
	if bin == "" {
		if bin, err = f.Executable(); err != nil {
			store.Close()
			return nil, nil, &mcperr.Error{Code: mcperr.Internal, Message: "find the aicr binary: " + err.Error(), Remedy: "set [daemon] aicr_binary"}
		}
	}
	svc := &session.Service{Config: cfg, Store: store, Logger: log,
		Start: session.DetachedStarter(bin, cfg.Path, cfg.Daemon.DataDir)}
	return svc, func() { store.Close() }, nil
}

// sessionVerb runs one verb: the tool's result on success, the error
// envelope on failure (on stdout with --format json, like the tool).
func sessionVerb(ctx context.Context, f *Factory, format string, call func(context.Context, *session.Service) (any, error), text func(io.Writer, any)) error {
	out := newExporter(f.IOStreams, format)
	svc, closeFn, err := sessionService(ctx, f, f.VerbLogger(slog.LevelWarn))
	var res any
	if err == nil {
		defer closeFn()
		res, err = call(ctx, svc)
	}
	if err != nil {
		var env *mcperr.Error
		if !errors.As(err, &env) {
			env = &mcperr.Error{Code: mcperr.Internal, Message: err.Error(), Remedy: "see the message"}
		}
		if out.JSON() {
			_ = writeJSON(f.IOStreams.Out, env)
		}
		if env.Code == mcperr.InvalidInput || env.Code == mcperr.ConfigInvalid {
			if out.JSON() {
				return errSilentUsage
			}
			return usageErrorf("%s (%s): %s", env.Message, env.Code, env.Remedy)
		}
		if out.JSON() {
			return errSilentFailure
		}
		return fmt.Errorf("%s (%s): %s", env.Message, env.Code, env.Remedy)
	}
	if err := out.Write(res, func(w io.Writer) error {
		text(w, res)
		return nil
	}); err != nil {
		return err
	}
	if e, ok := res.(session.Ended); ok && e.PublishError != "" {
		// Ended, but not published as asked: the tool sets isError.
		return errSilentFailure
	}
	return nil
}

func printStarted(w io.Writer, v any) {
	s := v.(session.Started)
	fmt.Fprintf(w, "%s round %d: %s (aicr session wait %s)\n", s.SessionID, s.Round, s.Status, s.SessionID)
}

func newCmdSessionBegin(f *Factory) *cobra.Command {
	var (
		in     session.BeginInput
		format string
	)
	cmd := &cobra.Command{
		Use:     "begin TARGET",
		Short:   "Start a review session and its round 1 in the background (review_begin)",
		Example: "  aicr session begin svn-wc:. --input 'adds retry to the uploader'\n  aicr session begin p4-shelf:12345 --repo depot --format json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			in.Target = args[0]
			return sessionVerb(cmd.Context(), f, format, func(ctx context.Context, s *session.Service) (any, error) {
				return s.Begin(ctx, in)
			}, printStarted)
		},
	}
	addConfigFlag(cmd, f)
	fl := cmd.Flags()
	fl.StringVar(&in.Repo, "repo", "", "[[repo]] the target belongs to (needed for svn-rev, p4-change and p4-shelf when several are configured, and to publish)")
	fl.StringVar(&in.Input, "input", "", "notes for the reviewer: what the change is for")
	fl.StringVar(&in.Agent, "agent", "", "agent kind for this session instead of [agent] kind")
	fl.StringVar(&in.Model, "model", "", "model for this session instead of [agent.llm] model")
	fl.IntVar(&in.TimeoutSeconds, "timeout-seconds", 0, "bound on each round's review (0: the agent's own limits)")
	addFormatFlag(cmd, &format)
	return cmd
}

func newCmdSessionWait(f *Factory) *cobra.Command {
	var (
		format  string
		maxWait int
	)
	cmd := &cobra.Command{
		Use:   "wait SESSION_ID",
		Short: "Wait for the session's round and say what to do next (review_wait)",
		Long: `Wait up to --max-wait-seconds (default $` + session.WaitDefaultEnv + `, else 50) for the
session's last round; returns early when it ends. Prints the round's status,
its problems and summary when completed, and next / next_reason.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			in := session.WaitInput{SessionID: args[0]}
			if cmd.Flags().Changed("max-wait-seconds") {
				in.MaxWaitSeconds = &maxWait
			}
			return sessionVerb(cmd.Context(), f, format, func(ctx context.Context, s *session.Service) (any, error) {
				return s.Wait(ctx, in)
			}, printWaited)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().IntVar(&maxWait, "max-wait-seconds", 0, "how long this call waits (default $"+session.WaitDefaultEnv+", else 50)")
	addFormatFlag(cmd, &format)
	return cmd
}

func printWaited(w io.Writer, v any) {
	r := v.(session.Waited)
	fmt.Fprintf(w, "%s round %d: %s after %ds (%s)\n", r.SessionID, r.Round, r.Status, r.ElapsedSeconds, r.Target)
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  %s:%d [%s] %s: %s\n", p.File, p.Line, p.Severity, p.Category, p.Message)
	}
	if r.Summary != "" {
		fmt.Fprintf(w, "\n%s\n\n", strings.TrimSpace(r.Summary))
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	fmt.Fprintf(w, "next: %s (%s)\n", r.Next, r.NextReason)
}

func newCmdSessionReply(f *Factory) *cobra.Command {
	var (
		format string
		input  string
	)
	cmd := &cobra.Command{
		Use:   "reply SESSION_ID --input TEXT",
		Short: "Start the next round with your reply: rebuttals, or \"fixed, look again\" (review_reply)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			return sessionVerb(cmd.Context(), f, format, func(ctx context.Context, s *session.Service) (any, error) {
				return s.Reply(ctx, session.ReplyInput{SessionID: args[0], Input: input})
			}, printStarted)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&input, "input", "", "your reply to the last round (required)")
	_ = cmd.MarkFlagRequired("input")
	addFormatFlag(cmd, &format)
	return cmd
}

func newCmdSessionEnd(f *Factory) *cobra.Command {
	var (
		format string
		in     session.EndInput
	)
	cmd := &cobra.Command{
		Use:   "end SESSION_ID",
		Short: "End the session; --publish sends the final round to the repo's channels (review_end)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			in.SessionID = args[0]
			return sessionVerb(cmd.Context(), f, format, func(ctx context.Context, s *session.Service) (any, error) {
				return s.End(ctx, in)
			}, func(w io.Writer, v any) {
				e := v.(session.Ended)
				fmt.Fprintf(w, "%s: %s after %d rounds, finalized %v", e.SessionID, e.Status, e.Rounds, e.Finalized)
				if e.Verdict != "" {
					fmt.Fprintf(w, ", verdict %s", e.Verdict)
				}
				fmt.Fprintln(w)
				if e.Published {
					fmt.Fprintf(w, "published as run %d (aicr audit show %d)\n", e.PublishedRunID, e.PublishedRunID)
				}
				if e.PublishError != "" {
					fmt.Fprintf(w, "not published: %s\n", e.PublishError)
				}
			})
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().BoolVar(&in.Publish, "publish", false, "send the final round to the repo's channels")
	addFormatFlag(cmd, &format)
	return cmd
}

// newCmdSessionRunRound is the detached worker each round runs in.
func newCmdSessionRunRound(f *Factory) *cobra.Command {
	var (
		sid   string
		round int
	)
	cmd := &cobra.Command{
		Use:    "run-round --session ID --round N",
		Short:  "Run one round of a review session (started by begin and reply)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := session.ParseID(sid)
			if err != nil {
				return asUsage(err)
			}
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			store, err := f.Store(cmd.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			return runRoundWithLog(cmd.Context(), f, cfg, store, id, round)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&sid, "session", "", "session id (required)")
	cmd.Flags().IntVar(&round, "round", 0, "round number (required)")
	_ = cmd.MarkFlagRequired("session")
	_ = cmd.MarkFlagRequired("round")
	return cmd
}

func runRoundWithLog(ctx context.Context, f *Factory, cfg *config.Config, store *audit.Store, id int64, round int) error {
	log := slog.New(slog.NewTextHandler(f.IOStreams.ErrOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return session.RunRound(ctx, cfg, store, id, round, log)
}
