package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
)

func newCmdSpool(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "spool",
		Short: "See and re-send events hooks spooled while the daemon was unreachable",
	}
	cmd.AddCommand(newCmdSpoolList(f, nil), newCmdSpoolRequeue(f, nil))
	return cmd
}

// spoolDirs are the spools of this host: the hook's spool_dir and the
// daemon's spool_dirs, as the daemon's drain sees them.
func spoolDirs(f *Factory) ([]string, *triggers.HookConfig, error) {
	hook, _, err := triggers.LoadHookConfig(f.ConfigPath)
	if err != nil {
		return nil, nil, asUsage(err)
	}
	dirs := []string{hook.SpoolDir}
	// The daemon's extra spool dirs need its full config; a hook-only
	// host may not have one that loads, and then only spool_dir counts.
	if cfg, err := f.Config(); err == nil {
		dirs = append(dirs, cfg.Daemon.SpoolDirs...)
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		if d != "" && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out, hook, nil
}

// SpoolListOptions are the inputs of `aicr spool list`.
type SpoolListOptions struct {
	Factory *Factory
	Format  string
}

func newCmdSpoolList(f *Factory, runF func(context.Context, *SpoolListOptions) error) *cobra.Command {
	opts := &SpoolListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List spooled events (pending, then rejected) with their age and reason",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return spoolListRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// spoolItem is one spooled event as the list prints it.
type spoolItem struct {
	triggers.SpoolEntry
	State      string  `json:"state"` // pending or rejected
	AgeSeconds float64 `json:"age_seconds,omitempty"`
	// LastLog is the newest notify.log line naming the file: why the hook
	// spooled it, or why a re-send kept it.
	LastLog string `json:"last_log,omitempty"`
}

func spoolListRun(_ context.Context, opts *SpoolListOptions) error {
	items, err := listSpools(opts.Factory)
	if err != nil {
		return err
	}
	return newExporter(opts.Factory.IOStreams, opts.Format).Write(items, func(w io.Writer) error {
		if len(items) == 0 {
			_, err := fmt.Fprintln(w, "no spooled events")
			return err
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "STATE\tREPO\tREV\tAGE\tFILE\tREASON")
		for _, it := range items {
			age := "-"
			if it.AgeSeconds > 0 {
				age = (time.Duration(it.AgeSeconds) * time.Second).String()
			}
			reason := firstNonEmpty(it.Reason, it.Problem, it.LastLog)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.State, dash(oneLine(it.Repo)), dash(oneLine(it.Revision)), age,
				filepath.Join(it.Dir, it.Name), dash(oneLine(reason)))
		}
		return tw.Flush()
	})
}

func listSpools(f *Factory) ([]spoolItem, error) {
	dirs, hook, err := spoolDirs(f)
	if err != nil {
		return nil, err
	}
	secret, _ := hook.Secret() // without it, signatures show as not checked
	now := f.Now()
	items := []spoolItem{}
	for _, dir := range dirs {
		entries, err := triggers.Spool{Dir: dir, Secret: secret}.Entries()
		if err != nil {
			return nil, err
		}
		log := notifyLogTail(dir)
		for _, e := range entries {
			it := spoolItem{SpoolEntry: e, State: "pending", LastLog: lastMention(log, e.Name)}
			if e.Rejected {
				it.State = "rejected"
			}
			if !e.SpooledAt.IsZero() {
				it.AgeSeconds = now.Sub(e.SpooledAt).Round(time.Second).Seconds()
			}
			items = append(items, it)
		}
	}
	return items, nil
}

// notifyLogTailBytes is how much of notify.log is searched for a file's
// name: the lines about files still spooled are recent.
const notifyLogTailBytes = 1 << 20

func notifyLogTail(dir string) []byte {
	f, err := os.Open(filepath.Join(dir, "notify.log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(st.Size()-notifyLogTailBytes, 0)
	buf := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(buf, off)
	return buf[:n]
}

// lastMention is the newest log line naming the file, without the
// "aicr notify: " prefix.
func lastMention(log []byte, name string) string {
	for len(log) > 0 {
		i := bytes.LastIndex(log, []byte(name))
		if i < 0 {
			return ""
		}
		start := bytes.LastIndexByte(log[:i], '\n') + 1
		end := bytes.IndexByte(log[i:], '\n')
		line := log[start:]
		if end >= 0 {
			line = log[start : i+end]
		}
		if s := strings.TrimSpace(string(line)); s != "" {
			_, rest, ok := strings.Cut(s, "aicr notify: ")
			if ok {
				return rest
			}
			return s
		}
		log = log[:start]
	}
	return ""
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// SpoolRequeueOptions are the inputs of `aicr spool requeue`.
type SpoolRequeueOptions struct {
	Factory *Factory
	// Names are spool file names; empty means every pending file.
	Names []string
	// Rejected: the names are in rejected/ and come back first (only
	// files whose signature verifies).
	Rejected bool
	Format   string
}

func newCmdSpoolRequeue(f *Factory, runF func(context.Context, *SpoolRequeueOptions) error) *cobra.Command {
	opts := &SpoolRequeueOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "requeue [FILE...]",
		Short: "Post spooled events to the daemon now (all pending ones, or the files named)",
		Long: `Post spooled events to the daemon now, signed with the hook's secret like a
hook's re-send, instead of waiting for the daemon's spool drain or the next
commit. Without FILE every pending event goes, oldest first. A delivered file
is removed; one the daemon refuses for good moves to rejected/ with the reason;
one for a repo the running daemon does not know stays (reload the daemon).

--rejected FILE... first moves the named files back from rejected/ (after
fixing what refused them, e.g. adding the repo); only files whose signature
the hook's secret verifies come back. Exits 1 when any event was not delivered.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			opts.Names = args
			if opts.Rejected && len(args) == 0 {
				return usageErrorf("--rejected needs the FILE names to bring back (see aicr spool list)")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return spoolRequeueRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().BoolVar(&opts.Rejected, "rejected", false, "the FILEs are in rejected/: bring them back and send them")
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// requeueResult is what happened to one file.
type requeueResult struct {
	File      string `json:"file"`
	Repo      string `json:"repo,omitempty"`
	Revision  string `json:"revision,omitempty"`
	Outcome   string `json:"outcome"` // delivered, kept, rejected, failed
	EventID   int64  `json:"event_id,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Error     string `json:"error,omitempty"`
}

// requeueTimeout bounds one POST: an operator waits at a terminal, not a
// commit, so the hook's 2 s is too tight for a loaded daemon.
const requeueTimeout = 10 * time.Second

func spoolRequeueRun(ctx context.Context, opts *SpoolRequeueOptions) error {
	dirs, hook, err := spoolDirs(opts.Factory)
	if err != nil {
		return err
	}
	client, err := hook.ClientConfig()
	if err != nil {
		return fmt.Errorf("cannot sign events without the hook's secret: %w", err)
	}
	client.Timeout = max(client.Timeout, requeueTimeout)
	todo, err := requeueTargets(dirs, client.Secret, opts)
	if err != nil {
		return err
	}
	results := []requeueResult{}
	for _, t := range todo {
		results = append(results, requeueOne(ctx, client, t.spool, t.name))
	}
	out := newExporter(opts.Factory.IOStreams, opts.Format)
	if err := out.Write(results, func(w io.Writer) error {
		if len(results) == 0 {
			_, err := fmt.Fprintln(w, "no spooled events")
			return err
		}
		for _, r := range results {
			line := fmt.Sprintf("%s: %s", r.File, r.Outcome)
			if r.EventID != 0 {
				line += fmt.Sprintf(" (event %d%s)", r.EventID, map[bool]string{true: ", duplicate", false: ""}[r.Duplicate])
			}
			if r.Error != "" {
				line += ": " + r.Error
			}
			fmt.Fprintln(w, line)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, r := range results {
		if r.Outcome != "delivered" {
			return errSilentFailure
		}
	}
	return nil
}

type requeueTarget struct {
	spool triggers.Spool
	name  string
}

// requeueTargets resolves the names (or every pending file) to their
// spool; a name found nowhere is an error before anything is sent.
func requeueTargets(dirs []string, secret []byte, opts *SpoolRequeueOptions) ([]requeueTarget, error) {
	var out []requeueTarget
	if len(opts.Names) == 0 {
		for _, dir := range dirs {
			sp := triggers.Spool{Dir: dir, Secret: secret}
			names, err := sp.List()
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				out = append(out, requeueTarget{sp, n})
			}
		}
		return out, nil
	}
	for _, name := range opts.Names {
		name = filepath.Base(name) // a path as `spool list` prints it works too
		found := false
		for _, dir := range dirs {
			sp := triggers.Spool{Dir: dir, Secret: secret}
			where := dir
			if opts.Rejected {
				where = filepath.Join(dir, triggers.RejectedDir)
			}
			if _, err := os.Stat(filepath.Join(where, name)); err != nil {
				continue
			}
			if opts.Rejected {
				if err := sp.Restore(name); err != nil {
					return nil, err
				}
			}
			out = append(out, requeueTarget{sp, name})
			found = true
			break
		}
		if !found {
			state := "pending"
			if opts.Rejected {
				state = "rejected"
			}
			return nil, fmt.Errorf("no %s spool file %q in %s (see aicr spool list)", state, name, strings.Join(dirs, ", "))
		}
	}
	return out, nil
}

// requeueOne posts one spooled event and settles its file the way a
// hook's re-send does.
func requeueOne(ctx context.Context, client triggers.ClientConfig, sp triggers.Spool, name string) requeueResult {
	res := requeueResult{File: sp.Path(name)}
	ev, _, err := sp.Read(name)
	var bad *triggers.RejectedFileError
	if errors.As(err, &bad) {
		res.Outcome, res.Error = "rejected", bad.Error()
		return res
	}
	if err != nil {
		res.Outcome, res.Error = "failed", err.Error()
		return res
	}
	res.Repo, res.Revision = ev.Repo, ev.Revision
	ev.Source = triggers.SourceSpool
	acc, err := triggers.Post(ctx, client, ev)
	var pe *triggers.PostError
	switch {
	case err == nil:
		res.Outcome, res.EventID, res.Duplicate = "delivered", acc.EventID, acc.Duplicate
		if err := sp.Remove(name); err != nil {
			res.Error = "delivered but not removed (the daemon ignores the duplicate): " + err.Error()
		}
	case errors.As(err, &pe) && pe.Code == triggers.CodeUnknownRepo:
		res.Outcome, res.Error = "kept", pe.Error()
	case errors.As(err, &pe) && pe.Permanent:
		res.Outcome, res.Error = "rejected", pe.Error()
		if err := sp.Reject(name, pe.Error()); err != nil {
			res.Outcome, res.Error = "failed", pe.Error()+"; moving it to rejected/ failed: "+err.Error()
		}
	default:
		res.Outcome, res.Error = "failed", err.Error()+" (the file stays; is the daemon running?)"
	}
	return res
}
