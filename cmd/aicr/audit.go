package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/im"
)

func newAuditCmd(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Inspect the audit trail: runs, problems, dispatches",
	}
	cmd.AddCommand(newAuditListCmd(ios), newAuditShowCmd(ios))
	return cmd
}

func openStore(cmd *cobra.Command, configPath string) (*audit.Store, error) {
	cfg, err := loadConfig(configPath)
	if err != nil {
		return nil, err
	}
	// Read-only: run as root on a fresh data_dir, a listing must not
	// create a root-owned aicr.db the daemon then cannot open.
	store, err := audit.OpenReadOnly(cmd.Context(), daemon.DBPath(cfg))
	if errors.Is(err, audit.ErrNoDatabase) {
		return nil, &exitError{code: 1, err: err}
	}
	return store, err
}

func newAuditListCmd(ios *IOStreams) *cobra.Command {
	var configPath, format, repo, status string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List review runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			store, err := openStore(cmd, configPath)
			if err != nil {
				return err
			}
			defer store.Close()
			runs, err := store.ListRuns(cmd.Context(), audit.ListOptions{Limit: limit, Repo: repo, Status: audit.RunStatus(status)})
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSONOut(ios.Out, runs)
			}
			tw := tabwriter.NewWriter(ios.Out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tREPO\tREV\tSTATUS\tREASON\tPROBLEMS\tSOURCE\tQUEUED\tDURATION")
			for _, r := range runs {
				reason := r.SkipReason
				if reason == "" {
					reason = firstLine(r.Error, 40)
				}
				status := string(r.Status)
				if r.Retrying() {
					status = "retrying"
					reason = fmt.Sprintf("attempt %d, next %s: %s", r.Attempts, r.NotBefore.Local().Format(time.DateTime), reason)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.ID, r.Repo, r.Revision, status, dash(reason), r.ProblemCount, r.Source, r.QueuedAt.Local().Format(time.DateTime), duration(r.StartedAt, r.FinishedAt))
			}
			return tw.Flush()
		},
	}
	addConfigFlag(cmd, &configPath)
	cmd.Flags().IntVar(&limit, "limit", 20, "show at most N runs")
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	cmd.Flags().StringVar(&repo, "repo", "", "only runs of this repo")
	cmd.Flags().StringVar(&status, "status", "", "only runs with this status (queued, running, succeeded, failed, skipped)")
	return cmd
}

func newAuditShowCmd(ios *IOStreams) *cobra.Command {
	var configPath, format string
	cmd := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show one run with its events, problems and dispatches",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("run id %q is not a number (see aicr audit list)", args[0])}
			}
			store, err := openStore(cmd, configPath)
			if err != nil {
				return err
			}
			defer store.Close()
			d, err := store.GetRun(cmd.Context(), id)
			if errors.Is(err, audit.ErrNotFound) {
				return &exitError{code: 1, err: fmt.Errorf("no run %d in %s (see aicr audit list)", id, store.Path())}
			}
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSONOut(ios.Out, d)
			}
			printRunDetail(ios.Out, d)
			return nil
		},
	}
	addConfigFlag(cmd, &configPath)
	cmd.Flags().StringVar(&format, "format", "text", "text or json")
	return cmd
}

func printRunDetail(w io.Writer, d *audit.RunDetail) {
	fmt.Fprintf(w, "run %d: %s %s r%s — %s", d.ID, d.VCS, d.Repo, d.Revision, d.Status)
	if d.SkipReason != "" {
		fmt.Fprintf(w, " (%s)", d.SkipReason)
	}
	fmt.Fprintln(w)
	if d.Retrying() {
		fmt.Fprintf(w, "retrying, next at %s, attempt %d, last error: %s\n", d.NotBefore.Local().Format(time.DateTime), d.Attempts, d.Error)
	} else if d.Error != "" {
		fmt.Fprintf(w, "error: %s\n", d.Error)
	}
	if d.DryRun {
		fmt.Fprintln(w, "dry run: published to no channel")
	}
	fmt.Fprintf(w, "queued %s, attempts %d, duration %s\n", d.QueuedAt.Local().Format(time.DateTime), d.Attempts, duration(d.StartedAt, d.FinishedAt))
	if d.RunDir != "" {
		fmt.Fprintf(w, "run dir: %s\n", d.RunDir)
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
}

func writeJSONOut(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
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

func firstLine(s string, max int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
