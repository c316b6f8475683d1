package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/review"
)

// AuditRejectedOptions are the inputs of `aicr audit rejected`.
type AuditRejectedOptions struct {
	Factory *Factory
	Since   string
	Limit   int
	Format  string
}

func newCmdAuditRejected(f *Factory, runF func(context.Context, *AuditRejectedOptions) error) *cobra.Command {
	opts := &AuditRejectedOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "rejected",
		Short: "List requests and spool files the daemon refused, newest first, with the reason",
		Long: `List what the daemon refused: signed requests with a bad body or an unknown
repo, bad signatures, replays, and spool files it moved to rejected/. Each
shows when, from where, why, and the start of what was sent (at most 64 KiB
is kept; --format json prints it whole).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.Since != "" {
				if _, err := parseTimeFlag("--since", opts.Since, f.Now()); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return auditRejectedRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Since, "since", "", "only those received since: a time (2026-01-31, \"2026-01-31 14:00\") or an age (36h, 7d)")
	cmd.Flags().IntVar(&opts.Limit, "limit", 50, "show at most N")
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// rejectedView is a refused request as printed: the payload as text when
// it is UTF-8, else base64.
type rejectedView struct {
	ID            int64     `json:"id"`
	ReceivedAt    time.Time `json:"received_at"`
	Reason        string    `json:"reason"`
	Remote        string    `json:"remote,omitempty"`
	Payload       string    `json:"payload,omitempty"`
	PayloadBase64 []byte    `json:"payload_base64,omitempty"`
	Truncated     bool      `json:"truncated,omitempty"`
}

func auditRejectedRun(ctx context.Context, opts *AuditRejectedOptions) error {
	var since time.Time
	if opts.Since != "" {
		var err error
		if since, err = parseTimeFlag("--since", opts.Since, opts.Factory.Now()); err != nil {
			return err
		}
	}
	store, err := opts.Factory.ReadOnlyStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	rejected, err := store.ListRejected(ctx, audit.RejectedFilter{Since: since, Limit: opts.Limit})
	if err != nil {
		return err
	}
	views := make([]rejectedView, 0, len(rejected))
	for _, r := range rejected {
		v := rejectedView{ID: r.ID, ReceivedAt: r.ReceivedAt, Reason: r.Reason, Remote: r.Remote, Truncated: r.Truncated}
		if utf8.Valid(r.Payload) {
			v.Payload = string(r.Payload)
		} else {
			v.PayloadBase64 = r.Payload
		}
		views = append(views, v)
	}
	return newExporter(opts.Factory.IOStreams, opts.Format).Write(views, func(w io.Writer) error {
		if len(views) == 0 {
			_, err := fmt.Fprintln(w, "no rejected requests")
			return err
		}
		for _, v := range views {
			fmt.Fprintf(w, "#%d %s from %s\n  reason: %s\n", v.ID, v.ReceivedAt.Local().Format(time.DateTime), dash(oneLine(v.Remote)), oneLine(v.Reason))
			switch {
			case v.Payload != "":
				fmt.Fprintf(w, "  payload: %s\n", firstLine(oneLine(v.Payload), 200))
			case len(v.PayloadBase64) > 0:
				fmt.Fprintf(w, "  payload: %d bytes, not text (see --format json)\n", len(v.PayloadBase64))
			}
		}
		return nil
	})
}

// Export formats.
const (
	exportJSONL = "jsonl"
	exportCSV   = "csv"
)

// AuditExportOptions are the inputs of `aicr audit export`.
type AuditExportOptions struct {
	Factory *Factory
	Since   string
	Until   string
	Format  string
}

func newCmdAuditExport(f *Factory, runF func(context.Context, *AuditExportOptions) error) *cobra.Command {
	opts := &AuditExportOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "export --since T",
		Short: "Write one line per run queued in a time range, as JSON lines or CSV",
		Long: `Write one line per review run queued in [--since, --until), oldest first, to
stdout, streamed from one consistent snapshot (safe while the daemon runs).

jsonl: one JSON object per run: the fields of aicr audit list --format json,
plus "agent" (kind, model, passes, turns, tokens, cost), "problems" (file,
line, severity, category, message) and "dispatches" (channel, status,
attempts, last_error, sent_at).

csv: a header, then per run: run_id, repo, vcs, revision, author, source,
status, skip_reason, error, queued_at, started_at, finished_at, attempts,
problems, critical, high, medium, low, info (problem counts by severity),
dispatches (channel:status pairs joined by ";"), agent, model, input_tokens,
output_tokens, cost_usd. Times are RFC 3339 UTC.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Format != exportJSONL && opts.Format != exportCSV {
				return usageErrorf("--format must be jsonl or csv, got %q", opts.Format)
			}
			if _, _, err := exportRange(opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return auditExportRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&opts.Since, "since", "", "first queue time to include: a time (2026-01-31, \"2026-01-31 14:00\", RFC 3339) or an age (36h, 7d)")
	cmd.Flags().StringVar(&opts.Until, "until", "", "queue time to stop before (same forms as --since); default now")
	cmd.Flags().StringVar(&opts.Format, "format", exportJSONL, "output format: jsonl or csv")
	_ = cmd.MarkFlagRequired("since")
	return cmd
}

func exportRange(opts *AuditExportOptions) (since, until time.Time, err error) {
	now := opts.Factory.Now()
	if since, err = parseTimeFlag("--since", opts.Since, now); err != nil {
		return since, until, err
	}
	if opts.Until != "" {
		if until, err = parseTimeFlag("--until", opts.Until, now); err != nil {
			return since, until, err
		}
		if !until.After(since) {
			return since, until, usageErrorf("--until (%s) must be after --since (%s)", until.Format(time.RFC3339), since.Format(time.RFC3339))
		}
	}
	return since, until, nil
}

var exportCSVHeader = []string{"run_id", "repo", "vcs", "revision", "author", "source", "status", "skip_reason", "error",
	"queued_at", "started_at", "finished_at", "attempts", "problems", "critical", "high", "medium", "low", "info",
	"dispatches", "agent", "model", "input_tokens", "output_tokens", "cost_usd"}

func auditExportRun(ctx context.Context, opts *AuditExportOptions) error {
	since, until, err := exportRange(opts)
	if err != nil {
		return err
	}
	store, err := opts.Factory.ReadOnlyStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	out := opts.Factory.IOStreams.Out
	var write func(audit.ExportRun) error
	var flush func() error
	switch opts.Format {
	case exportCSV:
		// CSV is opened by people (a spreadsheet, a pager): what a
		// committer or agent wrote is stripped of terminal escapes.
		cw := csv.NewWriter(termSafe(out))
		if err := cw.Write(exportCSVHeader); err != nil {
			return err
		}
		write = func(r audit.ExportRun) error { return cw.Write(exportCSVRecord(r)) }
		flush = func() error { cw.Flush(); return cw.Error() }
	default:
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		write = func(r audit.ExportRun) error { return enc.Encode(r) }
		flush = func() error { return nil }
	}
	n := 0
	err = store.ExportRuns(ctx, audit.ExportOptions{Since: since, Until: until}, func(r audit.ExportRun) error {
		n++
		return write(r)
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	fmt.Fprintf(opts.Factory.IOStreams.ErrOut, "exported %d runs\n", n)
	return nil
}

func exportCSVRecord(r audit.ExportRun) []string {
	bySeverity := map[string]int{}
	for _, p := range r.Problems {
		bySeverity[p.Severity]++
	}
	var dispatches []string
	for _, d := range r.Dispatches {
		dispatches = append(dispatches, d.Channel+":"+d.Status)
	}
	var agentKind, model, in, outTokens, cost string
	if a := r.Agent; a != nil {
		agentKind, model, in, outTokens = a.Agent, a.Model, strconv.Itoa(a.InputTokens), strconv.Itoa(a.OutputTokens)
		if a.CostUSD != nil {
			cost = strconv.FormatFloat(*a.CostUSD, 'f', -1, 64)
		}
	}
	return []string{
		strconv.FormatInt(r.ID, 10), csvText(r.Repo), r.VCS, r.Revision, csvText(r.User), string(r.Source), string(r.Status), csvText(r.SkipReason), csvText(r.Error),
		csvTime(r.QueuedAt), csvTime(r.StartedAt), csvTime(r.FinishedAt), strconv.Itoa(r.Attempts), strconv.Itoa(r.ProblemCount),
		strconv.Itoa(bySeverity[string(review.SeverityCritical)]), strconv.Itoa(bySeverity[string(review.SeverityHigh)]),
		strconv.Itoa(bySeverity[string(review.SeverityMedium)]), strconv.Itoa(bySeverity[string(review.SeverityLow)]),
		strconv.Itoa(bySeverity[string(review.SeverityInfo)]),
		csvText(strings.Join(dispatches, ";")), agentKind, csvText(model), in, outTokens, cost,
	}
}

// csvText keeps text that came from a commit, a server or a model from
// being read as a formula by a spreadsheet opening the export (CSV
// injection): a leading = + - @ or control character gets a ' before it.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func csvTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
