package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/admin"
)

func newCmdRun(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Act on review runs in the queue (list them with aicr audit list)",
	}
	cmd.AddCommand(newCmdRunRetry(f, nil), newCmdRunCancel(f, nil))
	return cmd
}

// RunRetryOptions are the inputs of `aicr run retry`.
type RunRetryOptions struct {
	Factory *Factory
	// RunID is one run to queue again; zero with Failed.
	RunID int64
	// Failed queues every run that failed since Since (of Repo, if set).
	Failed bool
	Since  time.Time
	Repo   string
	Format string
	// DryRun prints the plan (run_retry without confirm) and changes nothing.
	DryRun bool
}

func newCmdRunRetry(f *Factory, runF func(context.Context, *RunRetryOptions) error) *cobra.Command {
	opts := &RunRetryOptions{Factory: f}
	var since string
	cmd := &cobra.Command{
		Use:   "retry [RUN_ID | --failed --since T]",
		Short: "Queue failed runs again",
		Long: `Queue a failed run again, keeping its id: the daemon picks it up like a new
event. With --failed, every failed run that finished since T (a duration such as
24h, or an RFC 3339 time) is queued again; --repo narrows it to one repo.
Runs that are retrying on their own show as "retrying" in aicr audit list.
--dry-run prints the plan only. Same as the admin MCP tool run_retry.
Run it as the data_dir's owner.`,
		Example: "  aicr run retry 42\n  aicr run retry --failed --since 24h --repo main",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			switch {
			case opts.Failed && len(args) > 0:
				return usageErrorf("give a RUN_ID or --failed, not both")
			case !opts.Failed && len(args) != 1:
				return usageErrorf("give one RUN_ID, or --failed --since T (see aicr audit list --status failed)")
			case opts.Failed && since == "":
				return usageErrorf("--failed needs --since (e.g. --since 24h)")
			}
			if opts.Failed {
				t, err := parseSince(since, f.Now())
				if err != nil {
					return err
				}
				opts.Since = t
			} else {
				id, err := parseID(args[0], "run", "aicr audit list")
				if err != nil {
					return err
				}
				opts.RunID = id
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRetryRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().BoolVar(&opts.Failed, "failed", false, "queue every failed run (with --since) again")
	cmd.Flags().StringVar(&since, "since", "", "with --failed: runs that failed within this duration (24h) or since this RFC 3339 time")
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "with --failed: only runs of this repo")
	addDryRunFlag(cmd, &opts.DryRun)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// runRetryOutput is `aicr run retry --format json`: the admin tool
// run_retry's result (plan, applied, and the ids queued again).
type runRetryOutput = admin.RunRetryOutput

func runRetryRun(ctx context.Context, opts *RunRetryOptions) error {
	in := admin.RunRetryInput{RunID: opts.RunID, Repo: opts.Repo, TwoPhase: admin.TwoPhase{Confirm: !opts.DryRun}}
	if opts.Failed {
		// The time was checked and resolved by the flag parsing.
		in.FailedSince = opts.Since.UTC().Format(time.RFC3339Nano)
	}
	res, err := adminFor(opts.Factory, "").RunRetry(ctx, in)
	if err != nil {
		return cliError(newExporter(opts.Factory.IOStreams, opts.Format), err)
	}
	out := newExporter(opts.Factory.IOStreams, opts.Format)
	if opts.DryRun {
		return out.Write(res, func(w io.Writer) error { return printOutcome(w, res.Outcome) })
	}
	err = out.Write(res, func(w io.Writer) error {
		if !opts.Failed {
			return nil
		}
		for _, id := range res.Queued {
			fmt.Fprintln(w, id)
		}
		return nil
	})
	if opts.Failed {
		out.Status("queued %d failed runs again", len(res.Queued))
	} else if !out.JSON() {
		out.Status("run %d queued again", opts.RunID)
	}
	return err
}

func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, usageErrorf("--since %q: want a duration (24h) or an RFC 3339 time (2026-01-02T15:04:05Z)", s)
}
