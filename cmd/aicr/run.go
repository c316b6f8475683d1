package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/daemon"
)

func newRunCmd(ios *IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Act on review runs in the queue (list them with aicr audit list)",
	}
	cmd.AddCommand(newRunRetryCmd(ios))
	return cmd
}

func newRunRetryCmd(ios *IOStreams) *cobra.Command {
	var configPath, since, repo string
	var failed bool
	cmd := &cobra.Command{
		Use:   "retry [RUN_ID | --failed --since T]",
		Short: "Queue failed runs again",
		Long: `Queue a failed run again, keeping its id: the daemon picks it up like a new
event. With --failed, every failed run that finished since T (a duration such as
24h, or an RFC 3339 time) is queued again; --repo narrows it to one repo.
Runs that are retrying on their own show as "retrying" in aicr audit list.`,
		Example: "  aicr run retry 42\n  aicr run retry --failed --since 24h --repo main",
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case failed && len(args) > 0:
				return &exitError{code: 2, err: errors.New("give a RUN_ID or --failed, not both")}
			case !failed && len(args) != 1:
				return &exitError{code: 2, err: errors.New("give one RUN_ID, or --failed --since T (see aicr audit list --status failed)")}
			case failed && since == "":
				return &exitError{code: 2, err: errors.New("--failed needs --since (e.g. --since 24h)")}
			}
			cfg, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			if err := checkDataDirOwner(cfg.Daemon.DataDir); err != nil {
				return err
			}
			store, err := audit.Open(cmd.Context(), daemon.DBPath(cfg))
			if err != nil {
				return err
			}
			defer store.Close()
			if failed {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return &exitError{code: 2, err: err}
				}
				ids, err := store.RetryFailed(cmd.Context(), t, repo)
				if err != nil {
					return err
				}
				for _, id := range ids {
					fmt.Fprintln(ios.Out, id)
				}
				fmt.Fprintf(ios.ErrOut, "queued %d failed runs again\n", len(ids))
				return nil
			}
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("run id %q is not a number (see aicr audit list)", args[0])}
			}
			switch err := store.RetryRun(cmd.Context(), id); {
			case errors.Is(err, audit.ErrNotFound):
				return &exitError{code: 1, err: fmt.Errorf("no run %d in %s (see aicr audit list)", id, store.Path())}
			case errors.Is(err, audit.ErrNotFailed), errors.Is(err, audit.ErrInvalid):
				return &exitError{code: 1, err: err}
			case err != nil:
				return err
			}
			fmt.Fprintf(ios.ErrOut, "run %d queued again\n", id)
			return nil
		},
	}
	addConfigFlag(cmd, &configPath)
	cmd.Flags().BoolVar(&failed, "failed", false, "queue every failed run (with --since) again")
	cmd.Flags().StringVar(&since, "since", "", "with --failed: runs that failed within this duration (24h) or since this RFC 3339 time")
	cmd.Flags().StringVar(&repo, "repo", "", "with --failed: only runs of this repo")
	return cmd
}

func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (24h) or an RFC 3339 time (2026-01-02T15:04:05Z)", s)
}
