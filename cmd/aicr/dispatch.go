package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/daemon"
)

func newDispatchCmd(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dispatch",
		Short: "See and re-drive deliveries of reports to channels",
	}
	cmd.AddCommand(newDispatchListCmd(ios, nil), newDispatchRetryCmd(ios, nil))
	return cmd
}

// DispatchListOptions are the inputs of `aicr dispatch list`.
type DispatchListOptions struct {
	IO         *IOStreams
	ConfigPath string
	Status     string
	Channel    string
	Limit      int
	Format     string
}

func newDispatchListCmd(ios *IOStreams, runF func(context.Context, *DispatchListOptions) error) *cobra.Command {
	opts := &DispatchListOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List deliveries, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.Status != "" && !audit.DispatchStatus(opts.Status).Valid() {
				return &exitError{code: 2, err: fmt.Errorf("--status must be pending, sent, suppressed, failed, dead or unknown, got %q", opts.Status)}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dispatchListRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, &opts.ConfigPath)
	cmd.Flags().StringVar(&opts.Status, "status", "", "only deliveries with this status (pending, sent, suppressed, failed, dead, unknown)")
	cmd.Flags().StringVar(&opts.Channel, "channel", "", "only deliveries to this channel")
	cmd.Flags().IntVar(&opts.Limit, "limit", 50, "show at most N deliveries")
	cmd.Flags().StringVar(&opts.Format, "format", "text", "text or json")
	return cmd
}

// dispatchView is one delivery as `dispatch list --format json` prints it:
// the row plus its attempts.
type dispatchView struct {
	audit.Dispatch
	AttemptLog []audit.Attempt `json:"attempt_log"`
}

func dispatchListRun(ctx context.Context, opts *DispatchListOptions) error {
	cfg, err := loadConfig(opts.ConfigPath)
	if err != nil {
		return err
	}
	store, err := audit.Open(ctx, daemon.DBPath(cfg))
	if err != nil {
		return err
	}
	defer store.Close()
	list, err := store.ListDispatches(ctx, audit.DispatchFilter{Status: audit.DispatchStatus(opts.Status), Channel: opts.Channel, Limit: opts.Limit})
	if err != nil {
		return err
	}
	if opts.Format == "json" {
		views := make([]dispatchView, 0, len(list))
		for _, d := range list {
			attempts, err := store.DispatchAttempts(ctx, d.ID)
			if err != nil {
				return err
			}
			views = append(views, dispatchView{Dispatch: d, AttemptLog: attempts})
		}
		return writeJSONOut(opts.IO.Out, views)
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRUN\tCHANNEL\tSTATUS\tATTEMPTS\tNEXT\tUPDATED\tLAST ERROR")
	for _, d := range list {
		next := "-"
		if d.Status == audit.DispatchPending && !d.NextAttemptAt.IsZero() {
			next = d.NextAttemptAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\n", d.ID, d.RunID, d.Channel, d.Status, d.Attempts, next,
			d.UpdatedAt.Local().Format(time.DateTime), dash(firstLine(d.LastError, 60)))
	}
	return tw.Flush()
}

// DispatchRetryOptions are the inputs of `aicr dispatch retry`.
type DispatchRetryOptions struct {
	IO         *IOStreams
	ConfigPath string
	ID         int64
	// Queue only puts the delivery back to pending for the daemon;
	// otherwise this process makes the first attempt itself.
	Queue bool
}

func newDispatchRetryCmd(ios *IOStreams, runF func(context.Context, *DispatchRetryOptions) error) *cobra.Command {
	opts := &DispatchRetryOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "retry ID",
		Short: "Re-drive a failed, dead or unknown-outcome delivery",
		Long: `Put a failed, dead or unknown-outcome delivery back to pending with a fresh
give-up window (and attempt budget) and
make one attempt now, from this process, through the same dispatcher the
daemon uses (the attempt is recorded). If that attempt fails in a retryable
way, the daemon's re-drive job continues. --queue leaves the attempt to the
daemon.`,
		Example: `  aicr dispatch list --status dead
  aicr dispatch retry 42`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return &exitError{code: 2, err: fmt.Errorf("dispatch id %q is not a number (see aicr dispatch list)", args[0])}
			}
			opts.ID = id
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dispatchRetryRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, &opts.ConfigPath)
	cmd.Flags().BoolVar(&opts.Queue, "queue", false, "only re-queue; let the daemon send it")
	return cmd
}

func dispatchRetryRun(ctx context.Context, opts *DispatchRetryOptions) error {
	cfg, err := loadConfig(opts.ConfigPath)
	if err != nil {
		return err
	}
	store, err := audit.Open(ctx, daemon.DBPath(cfg))
	if err != nil {
		return err
	}
	defer store.Close()
	d, err := store.RetryDispatch(ctx, opts.ID)
	switch {
	case errors.Is(err, audit.ErrNotFound):
		return &exitError{code: 1, err: fmt.Errorf("no dispatch %d in %s (see aicr dispatch list)", opts.ID, store.Path())}
	case errors.Is(err, audit.ErrNotRetryable):
		return &exitError{code: 1, err: fmt.Errorf("dispatch %d is %s; only failed, dead or unknown deliveries can be retried", opts.ID, d.Status)}
	case err != nil:
		return err
	}
	if opts.Queue {
		fmt.Fprintf(opts.IO.Out, "dispatch %d (run %d, %s): queued for the daemon\n", d.ID, d.RunID, d.Channel)
		return nil
	}
	log := newLogger(opts.IO, parseLevel("warn"))
	parts, err := daemon.Build(cfg, daemon.Deps{Store: store, Logger: log, Stdout: opts.IO.Out}, daemon.BuildOptions{})
	if err != nil {
		return err
	}
	after, err := parts.Dispatcher.AttemptNow(ctx, d.ID)
	if errors.Is(err, audit.ErrNotClaimable) {
		fmt.Fprintf(opts.IO.Out, "dispatch %d (run %d, %s): queued (the daemon has it, or an earlier delivery to the channel is waiting for a retry)\n", d.ID, d.RunID, d.Channel)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "dispatch %d (run %d, %s): %s%s\n", after.ID, after.RunID, after.Channel, after.Status, prefixed(" — ", after.LastError))
	if after.Status.Undelivered() {
		return silentExit(1)
	}
	return nil
}
