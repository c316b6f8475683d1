package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/budget"
)

func newCmdQueue(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "See the review queue",
	}
	cmd.AddCommand(newCmdQueueStatus(f, nil))
	return cmd
}

// QueueStatusOptions are the inputs of `aicr queue status`.
type QueueStatusOptions struct {
	Factory *Factory
	Format  string
}

func newCmdQueueStatus(f *Factory, runF func(context.Context, *QueueStatusOptions) error) *cobra.Command {
	opts := &QueueStatusOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "The queue by repo: queued, retrying, running and held runs; paused repos; budgets",
		Long: `Show the review queue by repo: runs waiting (queued, of which retrying after a
transient failure), running, the oldest waiting run, and the repos paused with
aicr repo pause (their queued runs are held); then each [[budget]]: what its
period has spent of its limit, what remains, when the period ends and what a
review does once it is spent. Same as the admin MCP tool queue_status.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return queueStatusRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func queueStatusRun(ctx context.Context, opts *QueueStatusOptions) error {
	f := opts.Factory
	q, err := adminFor(f, "").QueueStatus(ctx, admin.NoInput{})
	if err != nil {
		return cliError(newExporter(f.IOStreams, opts.Format), err)
	}
	now := f.Now()
	return newExporter(f.IOStreams, opts.Format).Write(q, func(w io.Writer) error {
		fmt.Fprintf(w, "queued %d (retrying %d, held %d), running %d, oldest queued %s\n", q.Queued, q.Retrying, q.Held, q.Running, age(q.OldestQueuedAt, now))
		if len(q.Repos) > 0 {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "\nREPO\tQUEUED\tRETRYING\tRUNNING\tOLDEST\tPAUSED")
			for _, r := range q.Repos {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", r.Repo, r.Queued, r.Retrying, r.Running, age(r.OldestQueuedAt, now), pausedText(r.Paused))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		return writeBudgets(w, q.Budgets)
	})
}

// writeBudgets is the table of the budgets' spend in their periods.
func writeBudgets(w io.Writer, bs []budget.Status) error {
	if len(bs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nBUDGET\tREPOS\tSTATE\tSPENT\tLIMIT\tREMAINING\tPERIOD ENDS\tTHEN")
	for _, b := range bs {
		repos := strings.Join(b.Repos, ",")
		if repos == "" {
			repos = "all"
		}
		then := b.Action
		if b.FallbackModel != "" {
			then += " (" + b.FallbackModel + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Name, repos, b.State,
			budgetFigures(b, b.SpentUSD, b.SpentTokens), budgetFigures(b, b.LimitUSD, b.LimitTokens),
			budgetFigures(b, b.RemainingUSD, b.RemainingTokens), b.PeriodEnd.Format("2006-01-02 15:04 MST"), then)
	}
	return tw.Flush()
}

// budgetFigures shows the figures of the limits b has: "$1.20",
// "80000 tokens", or both.
func budgetFigures(b budget.Status, usd float64, tokens int64) string {
	var parts []string
	if b.LimitUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", usd))
	}
	if b.LimitTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", tokens))
	}
	return strings.Join(parts, ", ")
}

func age(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

func pausedText(p *audit.RepoPause) string {
	if p == nil {
		return "-"
	}
	s := "since " + p.PausedAt.Local().Format(time.DateTime) + prefixed(" by ", p.PausedBy)
	return s + prefixed(": ", oneLine(p.Reason))
}
