package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/delivery"
)

func newCmdDispatch(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dispatch",
		Short: "See and re-drive deliveries of reports to channels",
	}
	cmd.AddCommand(newCmdDispatchList(f, nil), newCmdDispatchShow(f, nil), newCmdDispatchRetry(f, nil))
	return cmd
}

// DispatchListOptions are the inputs of `aicr dispatch list`.
type DispatchListOptions struct {
	Factory *Factory
	Status  string
	Channel string
	Limit   int
	Format  string
}

func newCmdDispatchList(f *Factory, runF func(context.Context, *DispatchListOptions) error) *cobra.Command {
	opts := &DispatchListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List deliveries, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.Status != "" && !delivery.Status(opts.Status).Valid() {
				return usageErrorf("--status must be pending, sent, suppressed, failed, dead or unknown, got %q", opts.Status)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dispatchListRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Status, "status", "", "only deliveries with this status (pending, sent, suppressed, failed, dead, unknown)")
	cmd.Flags().StringVar(&opts.Channel, "channel", "", "only deliveries to this channel")
	cmd.Flags().IntVar(&opts.Limit, "limit", admin.DefaultDispatchLimit, "show at most N deliveries")
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// dispatchView is one delivery as --format json prints it: the row plus
// its attempts (the admin tool dispatch_list's entries).
type dispatchView = admin.DispatchView

func viewDispatch(ctx context.Context, store *audit.Store, d delivery.Dispatch) (dispatchView, error) {
	return admin.ViewDispatch(ctx, store, d)
}

func dispatchListRun(ctx context.Context, opts *DispatchListOptions) error {
	// Read-only: a listing never creates aicr.db (run as root, it would
	// belong to root and the daemon could not open it). --format json
	// prints the admin tool dispatch_list's dispatches.
	res, err := adminFor(opts.Factory, "").DispatchList(ctx, admin.DispatchListInput{Status: opts.Status, Channel: opts.Channel, Limit: opts.Limit})
	if err != nil {
		return cliError(newExporter(opts.Factory.IOStreams, opts.Format), err)
	}
	out := newExporter(opts.Factory.IOStreams, opts.Format)
	if out.JSON() {
		return writeJSON(opts.Factory.IOStreams.Out, res.Dispatches)
	}
	tw := tabwriter.NewWriter(termSafe(opts.Factory.IOStreams.Out), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRUN\tCHANNEL\tSTATUS\tATTEMPTS\tNEXT\tUPDATED\tLAST ERROR")
	for _, d := range res.Dispatches {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", d.ID, dispatchRun(d.Dispatch), d.Channel, d.Status, d.Attempts, nextAttempt(d.Dispatch),
			d.UpdatedAt.Local().Format(time.DateTime), dash(oneLine(d.LastError)))
	}
	return tw.Flush()
}

// dispatchRun is the RUN column: "-" for a digest, which belongs to no
// run.
func dispatchRun(d delivery.Dispatch) string {
	if d.RunID == 0 {
		return "-"
	}
	return strconv.FormatInt(d.RunID, 10)
}

// dispatchSubject says what a dispatch delivers: a run's report, one of
// its notices (slot "resolution"), or a digest (its slot, no run).
func dispatchSubject(d delivery.Dispatch) string {
	switch {
	case d.RunID == 0:
		return d.Slot
	case d.Slot != "":
		return fmt.Sprintf("run %d %s", d.RunID, d.Slot)
	}
	return fmt.Sprintf("run %d", d.RunID)
}

func nextAttempt(d delivery.Dispatch) string {
	if d.Status == delivery.StatusPending && !d.NextAttemptAt.IsZero() {
		return d.NextAttemptAt.Local().Format(time.DateTime)
	}
	return "-"
}

// DispatchShowOptions are the inputs of `aicr dispatch show`.
type DispatchShowOptions struct {
	Factory *Factory
	ID      int64
	Format  string
}

func newCmdDispatchShow(f *Factory, runF func(context.Context, *DispatchShowOptions) error) *cobra.Command {
	opts := &DispatchShowOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one delivery with every attempt and the platform's answers",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			id, err := parseID(args[0], "dispatch", "aicr dispatch list")
			if err != nil {
				return err
			}
			opts.ID = id
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dispatchShowRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func dispatchShowRun(ctx context.Context, opts *DispatchShowOptions) error {
	store, err := opts.Factory.ReadOnlyStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	d, err := store.GetDispatch(ctx, opts.ID)
	if errors.Is(err, audit.ErrNotFound) {
		return fmt.Errorf("no dispatch %d in %s (see aicr dispatch list)", opts.ID, store.Path())
	}
	if err != nil {
		return err
	}
	v, err := viewDispatch(ctx, store, d)
	if err != nil {
		return err
	}
	return newExporter(opts.Factory.IOStreams, opts.Format).Write(v, func(w io.Writer) error {
		printDispatch(w, v)
		return nil
	})
}

// partsNote tells how much of a split report went out. The parts count
// is kept for reports sent in several messages only, so a sent dispatch
// with none recorded went out whole, as one message.
func partsNote(d delivery.Dispatch) string {
	switch {
	case d.PartsDelivered > 0:
		return " (" + partsCount(d.PartsDelivered) + " delivered)"
	case d.Status == delivery.StatusSent:
		return " (delivered as one message)"
	}
	return ""
}

func printDispatch(w io.Writer, v dispatchView) {
	fmt.Fprintf(w, "dispatch %d: %s to %s (%s) — %s\n", v.ID, dispatchSubject(v.Dispatch), v.Channel, v.Purpose, v.Status)
	if v.LastError != "" {
		fmt.Fprintf(w, "last error: %s\n", v.LastError)
	}
	fmt.Fprintf(w, "created %s, updated %s, next attempt %s\n", v.CreatedAt.Local().Format(time.DateTime), v.UpdatedAt.Local().Format(time.DateTime), nextAttempt(v.Dispatch))
	// Parts are recorded as the platform accepts each one, so this is
	// what is there even while an attempt is under way or was killed.
	switch {
	case v.MessageID != "":
		fmt.Fprintf(w, "message id: %s%s\n", v.MessageID, partsNote(v.Dispatch))
	case v.PartsDelivered > 0:
		fmt.Fprintf(w, "%s delivered\n", partsCount(v.PartsDelivered))
	case v.Status == delivery.StatusSent:
		fmt.Fprintln(w, "delivered as one message")
	}
	fmt.Fprintf(w, "\nattempts (%d):\n", len(v.AttemptLog))
	for _, a := range v.AttemptLog {
		fmt.Fprintf(w, "  #%d %s %s", a.Attempt, a.StartedAt.Local().Format(time.DateTime), a.Outcome)
		if a.Reason != "" {
			fmt.Fprintf(w, " (%s)", a.Reason)
		}
		if a.StatusCode != 0 {
			fmt.Fprintf(w, " status %d", a.StatusCode)
		}
		if a.PlatformCode != "" {
			fmt.Fprintf(w, " code %s", a.PlatformCode)
		}
		fmt.Fprintf(w, "%s%s\n", prefixed(" — ", firstLine(a.Error, 200)), prefixed(" answer: ", firstLine(a.Response, 200)))
	}
}

func partsCount(n int) string {
	if n == 1 {
		return "1 part"
	}
	return fmt.Sprintf("%d parts", n)
}

// DispatchRetryOptions are the inputs of `aicr dispatch retry`.
type DispatchRetryOptions struct {
	Factory *Factory
	ID      int64
	// Queue only puts the delivery back to pending for the daemon;
	// otherwise this process makes the first attempt itself.
	Queue  bool
	Format string
	// DryRun prints the plan (dispatch_retry without confirm).
	DryRun bool
}

func newCmdDispatchRetry(f *Factory, runF func(context.Context, *DispatchRetryOptions) error) *cobra.Command {
	opts := &DispatchRetryOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "retry ID",
		Short: "Re-drive a failed, dead or unknown-outcome delivery",
		Long: `Put a failed, dead or unknown-outcome delivery back to pending with a fresh
give-up window (and attempt budget) and
make one attempt now, from this process, through the same dispatcher the
daemon uses (the attempt is recorded). If that attempt fails in a retryable
way, the daemon's re-drive job continues. --queue leaves the attempt to the
daemon (the admin MCP tool dispatch_retry does the same as --queue);
--dry-run prints the plan only. Run it as the data_dir's owner.`,
		Example: `  aicr dispatch list --status dead
  aicr dispatch retry 42`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			id, err := parseID(args[0], "dispatch", "aicr dispatch list")
			if err != nil {
				return err
			}
			opts.ID = id
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return dispatchRetryRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().BoolVar(&opts.Queue, "queue", false, "only re-queue; let the daemon send it")
	addDryRunFlag(cmd, &opts.DryRun)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// dispatchRetryOutput is `aicr dispatch retry --format json`: the admin
// tool dispatch_retry's result (plan, applied, the row after the retry,
// and whether it was only queued); without --queue, the row after this
// process's attempt.
type dispatchRetryOutput = admin.DispatchRetryOutput

func dispatchRetryRun(ctx context.Context, opts *DispatchRetryOptions) error {
	f := opts.Factory
	res, err := adminFor(f, "").DispatchRetry(ctx, admin.DispatchRetryInput{DispatchID: opts.ID, TwoPhase: admin.TwoPhase{Confirm: !opts.DryRun}})
	if err != nil {
		return cliError(newExporter(f.IOStreams, opts.Format), err)
	}
	out := newExporter(f.IOStreams, opts.Format)
	if opts.DryRun {
		return out.Write(res, func(w io.Writer) error { return printOutcome(w, res.Outcome) })
	}
	d := *res.Dispatch
	queued := func(why string) error {
		return out.Write(res, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "dispatch %d (%s, %s): %s\n", d.ID, dispatchSubject(d), d.Channel, why)
			return err
		})
	}
	if opts.Queue {
		return queued("queued for the daemon")
	}
	// Writes the audit trail and, through a file channel, files: as the
	// data_dir's owner only (the admin call above checked it).
	store, err := f.Store(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	parts, err := daemon.Build(cfg, daemon.Deps{Store: store, Logger: f.VerbLogger(slog.LevelWarn), Stdout: out.reportStream(), Now: f.Now}, daemon.BuildOptions{})
	if err != nil {
		return err
	}
	// A dispatch an older aicr planned has no report yet (no daemon of
	// this one has started since): it gets it before it is sent.
	if _, err := daemon.FillDispatchReports(ctx, cfg, store, f.VerbLogger(slog.LevelWarn)); err != nil {
		return err
	}
	after, err := parts.Dispatcher.AttemptNow(ctx, d.ID)
	if errors.Is(err, delivery.ErrNotClaimable) {
		return queued("queued (the daemon has it, or an earlier delivery to the channel is waiting for a retry)")
	}
	if err != nil {
		return err
	}
	res.Dispatch, res.Queued = &after, false
	err = out.Write(res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "dispatch %d (%s, %s): %s%s\n", after.ID, dispatchSubject(after), after.Channel, after.Status, prefixed(" — ", after.LastError))
		return err
	})
	if err != nil {
		return err
	}
	if after.Status.Undelivered() {
		return errSilentFailure
	}
	return nil
}
