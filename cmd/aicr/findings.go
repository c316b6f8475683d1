package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/findings"
)

func newCmdFindings(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "findings",
		Short: "List, inspect, dismiss and reopen findings; see their precision",
		Long: `A finding is one problem as it lives across commits: reported by a review,
seen again by later ones, resolved by the change that fixed it, or dismissed by
a person (false positive, won't fix, accepted risk). A dismissed finding is
never reported again in its repo. Every verb is also an admin MCP tool
(findings_list, findings_show, findings_stats, findings_dismiss,
findings_reopen) with the same --format json output.`,
	}
	cmd.AddCommand(newCmdFindingsList(f, nil), newCmdFindingsShow(f, nil), newCmdFindingsDismiss(f, nil),
		newCmdFindingsReopen(f, nil), newCmdFindingsStats(f, nil))
	return cmd
}

// FindingsListOptions are the inputs of `aicr findings list`.
type FindingsListOptions struct {
	Factory *Factory
	Input   admin.FindingsListInput
	Format  string
}

func newCmdFindingsList(f *Factory, runF func(context.Context, *FindingsListOptions) error) *cobra.Command {
	opts := &FindingsListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List findings, newest first",
		Example: `  aicr findings list --repo main --state active
  aicr findings list --path src/net/ --severity high --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.Input.Limit < 1 {
				return usageErrorf("--limit must be at least 1, got %d", opts.Input.Limit)
			}
			if s := opts.Input.State; s != "" && s != admin.StateActive && !findings.State(s).Valid() {
				return usageErrorf("--state must be open, reopened, resolved, dismissed or active, got %q", s)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return findingsListRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	fl := cmd.Flags()
	fl.StringVar(&opts.Input.Repo, "repo", "", "only findings of this repo")
	fl.StringVar(&opts.Input.Path, "path", "", "only findings in this file or under this directory (src/net/)")
	fl.StringVar(&opts.Input.State, "state", "", "open, reopened, resolved, dismissed, or active (open or reopened)")
	fl.StringVar(&opts.Input.Severity, "severity", "", "only findings at least this severe (info, low, medium, high, critical)")
	fl.StringVar(&opts.Input.Author, "author", "", "only findings first reported in a change by this author")
	fl.StringVar(&opts.Input.Category, "category", "", "only findings of this category")
	fl.Int64Var(&opts.Input.RunID, "run", 0, "only findings this run reported or resolved")
	fl.IntVar(&opts.Input.Limit, "limit", admin.DefaultFindingsLimit, "show at most N findings")
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func findingsListRun(ctx context.Context, opts *FindingsListOptions) error {
	out := newExporter(opts.Factory.IOStreams, opts.Format)
	res, err := adminFor(opts.Factory, "").FindingsList(ctx, opts.Input)
	if err != nil {
		return cliError(out, err)
	}
	if out.JSON() {
		return writeJSON(opts.Factory.IOStreams.Out, res.Findings)
	}
	if len(res.Findings) == 0 {
		out.Status("no findings match")
		return nil
	}
	tw := newTable(opts.Factory.IOStreams.Out)
	fmt.Fprintln(tw, "ID\tSTATE\tSEVERITY\tREPO\tLOCATION\tCATEGORY\tSINCE\tREVIEWS\tMESSAGE")
	for _, f := range res.Findings {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", f.ID, f.State, f.Severity, oneLine(f.Repo), oneLine(location(f)),
			dash(oneLine(f.Category)), dash(oneLine(f.FirstRevision)), f.Sightings, clip(oneLine(f.Message), 100))
	}
	return tw.Flush()
}

// table is where a list goes: aligned columns on a terminal, plain
// tab-separated lines for a script.
type table struct {
	w     io.Writer
	align *tabwriter.Writer
}

func newTable(out io.Writer) *table {
	t := &table{w: termSafe(out)}
	if f, ok := out.(*os.File); ok && isTerminal(f) {
		t.align = tabwriter.NewWriter(t.w, 0, 0, 2, ' ', 0)
		t.w = t.align
	}
	return t
}

func (t *table) Write(p []byte) (int, error) { return t.w.Write(p) }

func (t *table) Flush() error {
	if t.align == nil {
		return nil
	}
	return t.align.Flush()
}

// clip cuts s to at most n runes, on a rune boundary.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func location(f findings.Finding) string {
	loc := f.Path
	if f.Line > 0 {
		loc += ":" + strconv.Itoa(f.Line)
		if f.EndLine > f.Line {
			loc += "-" + strconv.Itoa(f.EndLine)
		}
	}
	return loc
}

// FindingsShowOptions are the inputs of `aicr findings show`.
type FindingsShowOptions struct {
	Factory *Factory
	ID      int64
	Format  string
}

func newCmdFindingsShow(f *Factory, runF func(context.Context, *FindingsShowOptions) error) *cobra.Command {
	opts := &FindingsShowOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one finding and its history",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			id, err := parseID(args[0], "finding", "aicr findings list")
			if err != nil {
				return err
			}
			opts.ID = id
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return findingsShowRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func findingsShowRun(ctx context.Context, opts *FindingsShowOptions) error {
	out := newExporter(opts.Factory.IOStreams, opts.Format)
	d, err := adminFor(opts.Factory, "").FindingsShow(ctx, admin.FindingInput{FindingID: opts.ID})
	if err != nil {
		return cliError(out, err)
	}
	return out.Write(d, func(w io.Writer) error {
		printFinding(w, d)
		return nil
	})
}

func printFinding(w io.Writer, d admin.FindingDetail) {
	f := d.Finding
	fmt.Fprintf(w, "finding %d: %s — %s [%s] %s\n", f.ID, f.State, oneLine(f.Repo), f.Severity, dash(oneLine(f.Category)))
	fmt.Fprintf(w, "%s\n", oneLine(location(f)))
	fmt.Fprintf(w, "  %s", hangingIndent(f.Message))
	if f.Suggestion != "" {
		fmt.Fprintf(w, "  suggestion: %s", hangingIndent(f.Suggestion))
	}
	fmt.Fprintf(w, "first seen: revision %s%s (run %d) at %s%s\n", oneLine(f.FirstRevision), prefixed(" by ", oneLine(f.FirstAuthor)),
		f.FirstRunID, localTime(f.FirstSeenAt), prefixed(", ", agentModel(f)))
	fmt.Fprintf(w, "last seen: revision %s (run %d) at %s; reported by %d review(s)\n", oneLine(f.LastRevision), f.LastRunID, localTime(f.LastSeenAt), f.Sightings)
	if f.ResolvedRunID != 0 || f.ResolvedRevision != "" {
		fmt.Fprintf(w, "resolved: revision %s%s (run %d) at %s\n", oneLine(f.ResolvedRevision), prefixed(" by ", oneLine(f.ResolvedAuthor)), f.ResolvedRunID, localTime(f.ResolvedAt))
	}
	if f.ActedBy != "" {
		what := "reopened"
		if f.State == findings.StateDismissed {
			what = "dismissed (" + string(f.Dismissal) + ")"
		}
		fmt.Fprintf(w, "%s by %s via %s at %s%s\n", what, oneLine(f.ActedBy), f.ActedVia, localTime(f.ActedAt), prefixed(": ", oneLine(f.Note)))
	}
	if f.Useful > 0 {
		fmt.Fprintf(w, "useful: %d vote(s)\n", f.Useful)
	}
	fmt.Fprintf(w, "\nhistory (%d):\n", len(d.History))
	for _, e := range d.History {
		fmt.Fprintf(w, "  %s %-9s via %s%s%s%s%s%s%s\n", localTime(e.At), e.Kind, e.Via, prefixed(" by ", oneLine(e.Actor)),
			runRef(e.RunID), prefixed(" revision ", oneLine(e.Revision)), prefixed(" as ", string(e.Action)),
			prefixed(" to ", oneLine(e.Path)), prefixed(": ", oneLine(e.Note)))
	}
}

func agentModel(f findings.Finding) string {
	if f.Agent == "" {
		return ""
	}
	s := "agent " + oneLine(f.Agent)
	if f.Model != "" {
		s += " (" + oneLine(f.Model) + ")"
	}
	return s
}

func runRef(id int64) string {
	if id == 0 {
		return ""
	}
	return " run " + strconv.FormatInt(id, 10)
}

func localTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

// FindingsActOptions are the inputs of `aicr findings dismiss` and
// `aicr findings reopen`.
type FindingsActOptions struct {
	Factory *Factory
	ID      int64
	Reason  string
	Note    string
	DryRun  bool
	Format  string
}

func newCmdFindingsDismiss(f *Factory, runF func(context.Context, *FindingsActOptions) error) *cobra.Command {
	opts := &FindingsActOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "dismiss ID --reason false_positive|wont_fix|accepted_risk",
		Short: "Dismiss a finding: it is never reported again in its repo",
		Long: `Dismiss a finding as a false positive, won't fix or accepted risk. It is not
reported again in its repo, and reviews of its paths tell the model the team
dismissed it. The dismissal is recorded with who ($SUDO_USER, else you), when and
the note, and is undone with aicr findings reopen. Same as the admin MCP tool
findings_dismiss. Run it as the data_dir's owner.`,
		Example: "  aicr findings dismiss 42 --reason false_positive --note 'the buffer is bounded by the caller'\n  aicr findings dismiss 42 --reason wont_fix --dry-run",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if !findings.Action(opts.Reason).Dismisses() {
				return usageErrorf("--reason must be %s, got %q", admin.DismissalNames(), opts.Reason)
			}
			id, err := parseID(args[0], "finding", "aicr findings list")
			if err != nil {
				return err
			}
			opts.ID = id
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return findingsActRun(cmd.Context(), opts, func(a *admin.Admin) (admin.FindingActOutput, error) {
				return a.FindingsDismiss(cmd.Context(), admin.FindingsDismissInput{FindingID: opts.ID, Reason: opts.Reason, Note: opts.Note,
					TwoPhase: admin.TwoPhase{Confirm: !opts.DryRun}})
			})
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why: "+admin.DismissalNames())
	_ = cmd.MarkFlagRequired("reason")
	cmd.Flags().StringVar(&opts.Note, "note", "", "a note kept in the finding's history")
	addDryRunFlag(cmd, &opts.DryRun)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func newCmdFindingsReopen(f *Factory, runF func(context.Context, *FindingsActOptions) error) *cobra.Command {
	opts := &FindingsActOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "reopen ID",
		Short: "Reopen a dismissed or resolved finding: it is reported again",
		Long: `Take back a dismissal (or a resolution): the finding is reopened and later
reviews report it again. Recorded with who, when and the note. Same as the
admin MCP tool findings_reopen. Run it as the data_dir's owner.`,
		Example: "  aicr findings reopen 42 --note 'dismissed by mistake'",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			id, err := parseID(args[0], "finding", "aicr findings list")
			if err != nil {
				return err
			}
			opts.ID = id
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return findingsActRun(cmd.Context(), opts, func(a *admin.Admin) (admin.FindingActOutput, error) {
				return a.FindingsReopen(cmd.Context(), admin.FindingsReopenInput{FindingID: opts.ID, Note: opts.Note,
					TwoPhase: admin.TwoPhase{Confirm: !opts.DryRun}})
			})
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Note, "note", "", "a note kept in the finding's history")
	addDryRunFlag(cmd, &opts.DryRun)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func findingsActRun(_ context.Context, opts *FindingsActOptions, do func(*admin.Admin) (admin.FindingActOutput, error)) error {
	out := newExporter(opts.Factory.IOStreams, opts.Format)
	res, err := do(adminFor(opts.Factory, ""))
	if err != nil {
		return cliError(out, err)
	}
	return out.Write(res, func(w io.Writer) error { return printOutcome(w, res.Outcome) })
}

// FindingsStatsOptions are the inputs of `aicr findings stats`.
type FindingsStatsOptions struct {
	Factory *Factory
	Input   admin.FindingsStatsInput
	Format  string
}

func newCmdFindingsStats(f *Factory, runF func(context.Context, *FindingsStatsOptions) error) *cobra.Command {
	opts := &FindingsStatsOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Precision per category, rule, agent and model",
		Long: `How the findings fared, per category, rule, agent and model: reported, voted
useful, dismissed (and of those, as false positives), resolved by a later
change, still open, and the precision: the share of reported findings not
dismissed as false positives. Same as the admin MCP tool findings_stats.`,
		Example: "  aicr findings stats --repo main --since 720h",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return findingsStatsRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Input.Repo, "repo", "", "only findings of this repo")
	cmd.Flags().StringVar(&opts.Input.Since, "since", "", "only findings first reported within this duration (720h) or since this RFC 3339 time")
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

func findingsStatsRun(ctx context.Context, opts *FindingsStatsOptions) error {
	out := newExporter(opts.Factory.IOStreams, opts.Format)
	res, err := adminFor(opts.Factory, "").FindingsStats(ctx, opts.Input)
	if err != nil {
		return cliError(out, err)
	}
	if out.JSON() {
		return writeJSON(opts.Factory.IOStreams.Out, res.Stats)
	}
	if len(res.Stats) == 0 {
		out.Status("no findings reported yet")
		return nil
	}
	tw := newTable(opts.Factory.IOStreams.Out)
	fmt.Fprintln(tw, "GROUP\tVALUE\tREPORTED\tUSEFUL\tDISMISSED\tFALSE POSITIVE\tRESOLVED\tOPEN\tPRECISION")
	for _, s := range res.Stats {
		precision := "-"
		if s.Precision != nil {
			precision = strconv.FormatFloat(*s.Precision*100, 'f', 0, 64) + "%"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", s.Group, dash(oneLine(s.Value)), s.Reported, s.Useful, s.Dismissed,
			s.FalsePositive, s.Resolved, s.Open, precision)
	}
	return tw.Flush()
}
