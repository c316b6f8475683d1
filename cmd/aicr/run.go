package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/audit"
)

func newCmdRun(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Act on review runs in the queue (list them with aicr audit list)",
	}
	cmd.AddCommand(newCmdRunRetry(f, nil))
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
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// runRetryOutput is `aicr run retry --format json`: the ids queued again.
type runRetryOutput struct {
	Queued []int64 `json:"queued"`
}

func runRetryRun(ctx context.Context, opts *RunRetryOptions) error {
	store, err := opts.Factory.Store(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	out := newExporter(opts.Factory.IOStreams, opts.Format)
	if opts.Failed {
		ids, err := store.RetryFailed(ctx, opts.Since, opts.Repo)
		if err != nil {
			return err
		}
		if ids == nil {
			ids = []int64{}
		}
		err = out.Write(runRetryOutput{Queued: ids}, func(w io.Writer) error {
			for _, id := range ids {
				fmt.Fprintln(w, id)
			}
			return nil
		})
		out.Status("queued %d failed runs again", len(ids))
		return err
	}
	switch err := store.RetryRun(ctx, opts.RunID); {
	case errors.Is(err, audit.ErrNotFound):
		return fmt.Errorf("no run %d in %s (see aicr audit list)", opts.RunID, store.Path())
	case err != nil:
		return err
	}
	if out.JSON() {
		return writeJSON(opts.Factory.IOStreams.Out, runRetryOutput{Queued: []int64{opts.RunID}})
	}
	out.Status("run %d queued again", opts.RunID)
	return nil
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
