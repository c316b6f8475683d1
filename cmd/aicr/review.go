package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

func newReviewCmd(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "review",
		Short: "Review one change now, in the foreground",
	}
	cmd.AddCommand(
		newReviewVCSCmd(ios, reviewKind{kind: vcs.KindSVN, title: "SVN revision", flag: "rev", noun: "revision",
			example: "  aicr review svn --repo main --rev 42 --dry-run --format json"}),
		newReviewVCSCmd(ios, reviewKind{kind: vcs.KindP4, title: "Perforce changelist", flag: "change", noun: "changelist",
			example: "  aicr review p4 --repo depot --change 12345 --dry-run --format json"}),
	)
	return cmd
}

// reviewKind is what differs between `aicr review svn` and `aicr review p4`.
type reviewKind struct {
	kind    vcs.Kind
	title   string // "SVN revision"
	flag    string // "rev"
	noun    string // "revision"
	example string
}

// reviewOutput is what --format json prints: the Result at the top level
// so scripts can read .problems directly, with the run it belongs to.
type reviewOutput struct {
	RunID      int64           `json:"run_id"`
	Repo       string          `json:"repo"`
	Revision   string          `json:"revision"`
	Status     audit.RunStatus `json:"status"`
	SkipReason string          `json:"skip_reason,omitempty"`
	Error      string          `json:"error,omitempty"`
	DryRun     bool            `json:"dry_run"`
	review.Result
	Dispatches []daemon.DispatchNote `json:"dispatches,omitempty"`
}

func newReviewVCSCmd(ios *IOStreams, k reviewKind) *cobra.Command {
	var configPath, repoName, format string
	var rev int64
	var dryRun bool
	cmd := &cobra.Command{
		Use:   fmt.Sprintf("%s --repo NAME --%s N", k.kind, k.flag),
		Short: fmt.Sprintf("Review one %s through the daemon's pipeline", k.title),
		Long: fmt.Sprintf(`Review one %s in the foreground through the same pipeline as the
daemon: fetch, agent review, validation, channels and the audit trail (the run
is recorded with source "manual"). --dry-run publishes to no channel.`, k.title),
		Example: k.example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			if rev < 1 {
				return &exitError{code: 2, err: fmt.Errorf("--%s must be a positive %s number", k.flag, k.noun)}
			}
			cfg, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			repo, ok := cfg.Repo(repoName)
			if !ok {
				return &exitError{code: 2, err: fmt.Errorf("--repo %q: no such [[repo]] in %s", repoName, cfg.Path)}
			}
			if repo.Kind != k.kind {
				return &exitError{code: 2, err: fmt.Errorf("--repo %q is a %s repo: use aicr review %s", repoName, repo.Kind, repo.Kind)}
			}
			if err := checkDataDirOwner(cfg.Daemon.DataDir); err != nil {
				return err
			}
			ctx := cmd.Context()
			store, err := audit.Open(ctx, daemon.DBPath(cfg))
			if err != nil {
				return err
			}
			defer store.Close()
			log := newLogger(ios, parseLevel("warn"))
			parts, err := daemon.Build(cfg, daemon.Deps{Store: store, Logger: log, Stdout: ios.Out}, daemon.BuildOptions{NoChannels: dryRun})
			if err != nil {
				return err
			}
			pipe := parts.Pipeline
			now := time.Now().UTC()
			ev := triggers.Event{V: triggers.ProtocolVersion, VCS: string(k.kind), Repo: repoName, Revision: strconv.FormatInt(rev, 10), Source: triggers.SourceManual, SentAt: now}
			// Marked as a dry run in the database, so a daemon never
			// resumes it (and publishes) if this process dies.
			run, err := store.EnqueueClaimedWith(ctx, ev, now, audit.ClaimOptions{DryRun: dryRun})
			if err != nil {
				return err
			}
			// Renewed while this process works, so a daemon starting
			// meanwhile leaves the run (and its run dir) alone.
			release := daemon.HoldLease(ctx, store, run.ID, log)
			rep, err := pipe.Process(ctx, run, daemon.ProcessOptions{DryRun: dryRun, Foreground: true})
			release()
			if err != nil {
				return err
			}
			if format == "json" {
				if err := writeJSONOut(ios.Out, reviewOutput{RunID: rep.RunID, Repo: rep.Repo, Revision: rep.Revision, Status: rep.Status, SkipReason: rep.SkipReason, Error: rep.Error, DryRun: dryRun, Result: rep.Result, Dispatches: rep.Dispatches}); err != nil {
					return err
				}
			} else {
				if rep.Change != nil && !sentToConsole(cfg, rep.Dispatches) {
					fmt.Fprint(ios.Out, im.RenderText(im.Message{RunID: rep.RunID, Change: rep.Change, Result: rep.Result}))
				}
				fmt.Fprintf(ios.ErrOut, "run %d: %s%s (aicr audit show %d)\n", rep.RunID, rep.Status, prefixed(" — ", rep.SkipReason+rep.Error), rep.RunID)
			}
			if rep.Status == audit.RunFailed {
				return silentExit(1)
			}
			return nil
		},
	}
	addConfigFlag(cmd, &configPath)
	cmd.Flags().StringVar(&repoName, "repo", "", "repo name from the config (required)")
	cmd.Flags().Int64Var(&rev, k.flag, 0, k.noun+" to review (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "review and record, but publish to no channel")
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	_ = cmd.MarkFlagRequired("repo")
	_ = cmd.MarkFlagRequired(k.flag)
	return cmd
}

// sentToConsole reports whether a console channel already printed the
// report on stdout, so the command does not print it twice.
func sentToConsole(cfg *daemon.Config, notes []daemon.DispatchNote) bool {
	for _, n := range notes {
		for _, ch := range cfg.Channels {
			if ch.Name == n.Channel && ch.Kind == "console" && n.Status == audit.DispatchSent {
				return true
			}
		}
	}
	return false
}
