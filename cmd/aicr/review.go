package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

func newCmdReview(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "review",
		Short: "Review one change now, in the foreground",
	}
	cmd.AddCommand(
		newCmdReviewVCS(f, svnReview, nil),
		newCmdReviewVCS(f, p4Review, nil),
	)
	return cmd
}

var (
	svnReview = reviewKind{kind: vcs.KindSVN, title: "SVN revision", flag: "rev", noun: "revision",
		example: "  aicr review svn --repo main --rev 42 --dry-run --format json"}
	p4Review = reviewKind{kind: vcs.KindP4, title: "Perforce changelist", flag: "change", noun: "changelist",
		example: "  aicr review p4 --repo depot --change 12345 --dry-run --format json"}
)

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

// ReviewOptions are the inputs of `aicr review svn` and `aicr review p4`.
type ReviewOptions struct {
	Factory  *Factory
	Kind     vcs.Kind
	Repo     string
	Revision int64
	DryRun   bool
	Format   string
}

func newCmdReviewVCS(f *Factory, k reviewKind, runF func(context.Context, *ReviewOptions) error) *cobra.Command {
	opts := &ReviewOptions{Factory: f, Kind: k.kind}
	cmd := &cobra.Command{
		Use:   fmt.Sprintf("%s --repo NAME --%s N", k.kind, k.flag),
		Short: fmt.Sprintf("Review one %s through the daemon's pipeline", k.title),
		Long: fmt.Sprintf(`Review one %s in the foreground through the same pipeline as the
daemon: fetch, agent review, validation, channels and the audit trail (the run
is recorded with source "manual"). --dry-run publishes to no channel. Run it as
the data_dir's owner.`, k.title),
		Example: k.example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.Revision < 1 {
				return usageErrorf("--%s must be a positive %s number", k.flag, k.noun)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return reviewRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "repo name from the config (required)")
	cmd.Flags().Int64Var(&opts.Revision, k.flag, 0, k.noun+" to review (required)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "review and record, but publish to no channel")
	addFormatFlag(cmd, &opts.Format)
	_ = cmd.MarkFlagRequired("repo")
	_ = cmd.MarkFlagRequired(k.flag)
	return cmd
}

// reviewRun reviews one change in this process, as a daemon worker would.
//
// The orchestration (enqueue a claimed manual run, hold its lease, process
// it) stays here while package daemon is being restructured around one
// composition root; it belongs there as one call (a foreground
// "review this change" on the built pipeline) once that lands.
func reviewRun(ctx context.Context, opts *ReviewOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	repo, ok := cfg.Repo(opts.Repo)
	if !ok {
		return usageErrorf("--repo %q: no such [[repo]] in %s; configured: %s", opts.Repo, cfg.Path, strings.Join(cfg.RepoNames(), ", "))
	}
	if repo.Kind != opts.Kind {
		return usageErrorf("--repo %q is a %s repo: use aicr review %s", opts.Repo, repo.Kind, repo.Kind)
	}
	// The run leaves runs/N and may create aicr.db: as the owner only.
	store, err := f.Store(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	out := newExporter(f.IOStreams, opts.Format)
	log := f.VerbLogger(slog.LevelWarn)
	// A dry run builds no channels: nothing it does can reach one.
	parts, err := daemon.Build(cfg, daemon.Deps{Store: store, Logger: log, Stdout: out.reportStream(), Now: f.Now}, daemon.BuildOptions{NoChannels: opts.DryRun})
	if err != nil {
		return err
	}
	pipe := parts.Pipeline
	now := f.Now().UTC()
	ev := triggers.Event{V: triggers.ProtocolVersion, VCS: string(opts.Kind), Repo: opts.Repo, Revision: strconv.FormatInt(opts.Revision, 10), Source: triggers.SourceManual, SentAt: now}
	// Marked as a dry run in the database, so a daemon never resumes it
	// (and publishes) if this process dies.
	run, err := store.EnqueueClaimedWith(ctx, ev, now, audit.ClaimOptions{DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	// Renewed while this process works, so a daemon starting meanwhile
	// leaves the run (and its run dir) alone.
	release := daemon.HoldLease(ctx, store, run.ID, log)
	rep, err := pipe.Process(ctx, run, daemon.ProcessOptions{DryRun: opts.DryRun, Foreground: true})
	release()
	if err != nil {
		return err
	}
	result := reviewOutput{RunID: rep.RunID, Repo: rep.Repo, Revision: rep.Revision, Status: rep.Status, SkipReason: rep.SkipReason, Error: rep.Error, DryRun: opts.DryRun, Result: rep.Result, Dispatches: rep.Dispatches}
	err = out.Write(result, func(w io.Writer) error {
		if rep.Change != nil && !sentToConsole(cfg, rep.Dispatches) {
			fmt.Fprint(w, im.RenderText(im.Message{RunID: rep.RunID, Change: rep.Change, Result: rep.Result}))
		}
		out.Status("run %d: %s%s (aicr audit show %d)", rep.RunID, rep.Status, prefixed(" — ", rep.SkipReason+rep.Error), rep.RunID)
		return nil
	})
	if err != nil {
		return err
	}
	if rep.Status == audit.RunFailed {
		return errSilentFailure
	}
	return nil
}

// sentToConsole reports whether a console channel already printed the
// report on stdout, so the command does not print it twice.
func sentToConsole(cfg *config.Config, notes []daemon.DispatchNote) bool {
	for _, n := range notes {
		for _, ch := range cfg.Channels {
			if ch.Name == n.Channel && ch.Kind == "console" && n.Status == delivery.StatusSent {
				return true
			}
		}
	}
	return false
}
