package main

import (
	"context"
	"fmt"
	"github.com/aicr-dev/aicr/vcs"
	"io"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/triggers"
)

func newCmdAudit(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Inspect the audit trail: runs, problems, dispatches",
	}
	cmd.AddCommand(newCmdAuditList(f, nil), newCmdAuditShow(f, nil), newCmdAuditRejected(f, nil), newCmdAuditExport(f, nil))
	return cmd
}

// AuditListOptions are the inputs of `aicr audit list`.
type AuditListOptions struct {
	Factory *Factory
	Limit   int
	Repo    string
	Status  string
	// Revision is a revision or changelist number (--rev).
	Revision string
	Format   string
}

func newCmdAuditList(f *Factory, runF func(context.Context, *AuditListOptions) error) *cobra.Command {
	opts := &AuditListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List review runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.Status != "" && !audit.RunStatus(opts.Status).Listable() {
				return usageErrorf("--status must be one the list shows: %s; got %q", listStatuses, opts.Status)
			}
			if opts.Revision != "" {
				rev, err := triggers.CanonicalRevision(opts.Revision)
				if err != nil {
					return usageErrorf("--rev: %v", err)
				}
				opts.Revision = rev
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return auditListRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().IntVar(&opts.Limit, "limit", 20, "show at most N runs")
	addFormatFlag(cmd, &opts.Format)
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "only runs of this repo")
	cmd.Flags().StringVar(&opts.Status, "status", "", "only runs with this status as the list shows it ("+listStatuses+")")
	cmd.Flags().StringVar(&opts.Revision, "rev", "", "only runs of this revision or changelist number (every run of it: manual re-reviews too)")
	return cmd
}

// listStatuses are the statuses `audit list` shows, each a --status value.
const listStatuses = "queued, retrying, held, running, succeeded, failed, skipped"

func auditListRun(ctx context.Context, opts *AuditListOptions) error {
	store, err := opts.Factory.ReadOnlyStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	runs, err := store.ListRuns(ctx, audit.ListOptions{Limit: opts.Limit, Repo: opts.Repo, Status: audit.RunStatus(opts.Status), Revision: opts.Revision})
	if err != nil {
		return err
	}
	if runs == nil {
		runs = []audit.RunSummary{}
	}
	return newExporter(opts.Factory.IOStreams, opts.Format).Write(runs, func(w io.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		// The reason is last and never cut: the useful part of an error
		// (svn's "wrong password", the model's answer) is often at its end.
		fmt.Fprintln(tw, "RUN\tREPO\tREV\tAUTHOR\tSTATUS\tPROBLEMS\tSOURCE\tQUEUED\tDURATION\tREASON")
		for _, r := range runs {
			reason := r.SkipReason
			if reason == "" {
				reason = oneLine(r.Error)
			}
			status := r.Label()
			switch status {
			case audit.RunRetrying:
				reason = fmt.Sprintf("attempt %d, next %s: %s", r.Attempts, r.NotBefore.Local().Format(time.DateTime), reason)
			case audit.RunHeld:
				reason = "repo paused (aicr repo resume " + r.Repo + ")"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.ID, r.Repo, r.Revision, dash(oneLine(r.User)), status, r.ProblemCount, r.Source, r.QueuedAt.Local().Format(time.DateTime), duration(r.StartedAt, r.FinishedAt), dash(reason))
		}
		return tw.Flush()
	})
}

// AuditShowOptions are the inputs of `aicr audit show`.
type AuditShowOptions struct {
	Factory *Factory
	RunID   int64
	Format  string
}

func newCmdAuditShow(f *Factory, runF func(context.Context, *AuditShowOptions) error) *cobra.Command {
	opts := &AuditShowOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show one run with its events, problems and dispatches",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			id, err := parseID(args[0], "run", "aicr audit list")
			if err != nil {
				return err
			}
			opts.RunID = id
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return auditShowRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// auditShowRun is the admin tool run_inspect: --format json prints its
// result, or its envelope.
func auditShowRun(ctx context.Context, opts *AuditShowOptions) error {
	out := newExporter(opts.Factory.IOStreams, opts.Format)
	d, err := adminFor(opts.Factory, "").RunInspect(ctx, admin.RunInput{RunID: opts.RunID})
	if err != nil {
		return cliError(out, err)
	}
	return out.Write(d, func(w io.Writer) error {
		printRunDetail(w, d)
		return nil
	})
}

// parseID reads a positive row id named noun; list says where to find one.
func parseID(arg, noun, list string) (int64, error) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil || id < 1 {
		return 0, usageErrorf("%s id %q is not a number (see %s)", noun, arg, list)
	}
	return id, nil
}

func printRunDetail(w io.Writer, d *audit.RunDetail) {
	fmt.Fprintf(w, "run %d: %s %s %s by %s — %s", d.ID, d.VCS, d.Repo, vcs.RevisionText(vcs.Kind(d.VCS), d.Revision), dash(oneLine(d.User)), d.Status)
	if d.SkipReason != "" {
		fmt.Fprintf(w, " (%s)", d.SkipReason)
	}
	fmt.Fprintln(w)
	if d.Retrying() {
		fmt.Fprintf(w, "retrying, next at %s, attempt %d, last error: %s", d.NotBefore.Local().Format(time.DateTime), d.Attempts, hangingIndent(d.Error))
	} else if d.Error != "" {
		fmt.Fprintf(w, "error: %s", hangingIndent(d.Error))
	}
	if d.Status == audit.RunQueued && d.RepoPaused {
		fmt.Fprintf(w, "held: repo %s is paused (aicr queue status; aicr repo resume %s)\n", d.Repo, d.Repo)
	}
	if d.DryRun {
		fmt.Fprintln(w, "dry run: published to no channel")
	}
	fmt.Fprintf(w, "queued %s, attempts %d, duration %s\n", d.QueuedAt.Local().Format(time.DateTime), d.Attempts, duration(d.StartedAt, d.FinishedAt))
	if !d.RunDirPrunedAt.IsZero() {
		// The path no longer exists: say what happened to it.
		fmt.Fprintf(w, "run dir pruned on %s ([retention] run_dirs)\n", d.RunDirPrunedAt.Local().Format(time.DateTime))
	} else if d.RunDir != "" {
		fmt.Fprintf(w, "run dir: %s\n", d.RunDir)
		if !d.SourcesDroppedAt.IsZero() {
			fmt.Fprintf(w, "sources (src/, diff.patch, agent/) removed on %s once delivered ([retention] keep_sources)\n", d.SourcesDroppedAt.Local().Format(time.DateTime))
		}
	}
	printRunBudget(w, d.Budget)
	if a := d.Agent; a != nil {
		fmt.Fprintf(w, "agent: %s", a.Agent)
		if a.Model != "" {
			fmt.Fprintf(w, " (model %s)", im.Sanitize(a.Model))
		}
		fmt.Fprintf(w, ", passes %d, turns %d\n", a.Passes, a.Turns)
		printAgentTokens(w, a)
	}
	fmt.Fprintf(w, "\nevents (%d):\n", len(d.Events))
	for _, e := range d.Events {
		dup := ""
		if e.DuplicateOf != 0 {
			dup = fmt.Sprintf(" duplicate of %d", e.DuplicateOf)
		}
		fmt.Fprintf(w, "  #%d %s %s%s\n", e.ID, e.Source, e.ReceivedAt.Local().Format(time.DateTime), dup)
	}
	fmt.Fprintf(w, "\nproblems (%d):\n", len(d.Problems))
	for _, p := range d.Problems {
		fmt.Fprintf(w, "  %s [%s] %s: %s\n", im.ProblemLocation(p), p.Severity, p.Category, im.Sanitize(p.Message))
	}
	for _, s := range d.Summaries {
		fmt.Fprintf(w, "\nsummary %s\n%s\n", s.Title, im.Sanitize(s.Markdown))
	}
	fmt.Fprintf(w, "\ndispatches (%d):\n", len(d.Dispatches))
	for _, di := range d.Dispatches {
		fmt.Fprintf(w, "  %s: %s (attempts %d)%s\n", di.Channel, di.Status, di.Attempts, prefixed(" — ", di.LastError))
	}
	printEgress(w, d.Egress)
}

// printEgress lists the sandbox proxy's decisions; the host and reason
// come from the agent's requests, so they are sanitized like model text.
func printEgress(w io.Writer, events []audit.EgressEvent) {
	if len(events) == 0 {
		return
	}
	refused := 0
	for _, e := range events {
		if !e.Allowed {
			refused++
		}
	}
	fmt.Fprintf(w, "\negress (%d, %d refused):\n", len(events), refused)
	for _, e := range events {
		verdict := "allowed"
		if !e.Allowed {
			verdict = "REFUSED"
		}
		fmt.Fprintf(w, "  %s %s %s — %s\n", e.At.Local().Format(time.DateTime), verdict,
			oneLine(net.JoinHostPort(e.Host, strconv.Itoa(e.Port))), oneLine(e.Reason))
	}
}

// oneLine keeps agent-supplied text from forging extra lines.
func oneLine(s string) string {
	return strings.Join(strings.Fields(im.Sanitize(s)), " ")
}

func duration(start, end time.Time) string {
	if start.IsZero() || end.IsZero() {
		return "-"
	}
	return end.Sub(start).Round(time.Millisecond).String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// hangingIndent prints a (possibly multi-line) text in full, its later
// lines indented under the first: an error is never cut before its useful
// end (svn's and the agent CLIs' stderr put it last).
func hangingIndent(s string) string {
	lines := strings.Split(strings.TrimRight(im.Sanitize(s), "\n"), "\n")
	return strings.Join(lines, "\n  ") + "\n"
}

func firstLine(s string, max int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// printAgentTokens shows what the agent spent as the provider bills it:
// the prompt split into uncached input, cache reads and cache writes,
// the output, the cost, and each model turn of each attempt and pass.
func printAgentTokens(w io.Writer, a *audit.AgentStats) {
	fmt.Fprintf(w, "tokens: %d uncached input, %d cache read, %d cache write, %d output", a.InputTokens, a.CacheReadTokens, a.CacheWriteTokens, a.OutputTokens)
	if p := a.PromptTokens(); p > 0 && a.CacheReadTokens > 0 {
		fmt.Fprintf(w, " (%d%% of the prompt read from cache)", a.CacheReadTokens*100/p)
	}
	fmt.Fprintln(w)
	if a.CostUSD != nil {
		fmt.Fprintf(w, "cost: $%.6f\n", *a.CostUSD)
	} else {
		fmt.Fprintln(w, "cost: unknown ([agent.llm] price_per_mtok_in and price_per_mtok_out are not set)")
	}
	if a.Stopped != "" {
		fmt.Fprintf(w, "partial review: %s\n", a.Stopped)
	}
	if len(a.PerTurn) == 0 {
		return
	}
	fmt.Fprintln(w, "turns (attempt.pass.turn: uncached / cache read / cache write / output):")
	for _, t := range a.PerTurn {
		turn := strconv.Itoa(t.Turn)
		if t.Turn == 0 {
			turn = "all" // an agent that reports only the pass's totals
		}
		fmt.Fprintf(w, "  %d.%d.%s: %d / %d / %d / %d\n", t.Attempt, t.Pass, turn, t.InputTokens, t.CacheReadTokens, t.CacheWriteTokens, t.OutputTokens)
	}
}

// printRunBudget says which spent [[budget]] changed how the run was
// reviewed, in the words of its report.
func printRunBudget(w io.Writer, b *im.BudgetNotice) {
	if b == nil {
		return
	}
	fmt.Fprintf(w, "budget: %s spent, action %s: %s\n", im.Sanitize(b.Name), b.Action, im.LangEnglish.BudgetSentence(*b))
}
