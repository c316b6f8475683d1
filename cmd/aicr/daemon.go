package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/daemon"
)

// DaemonOptions are the inputs of `aicr daemon`.
type DaemonOptions struct {
	Factory *Factory
	Level   slog.Level
}

func newCmdDaemon(f *Factory, runF func(context.Context, *DaemonOptions) error) *cobra.Command {
	opts := &DaemonOptions{Factory: f}
	var level string
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the review daemon in the foreground",
		Long: `Run the review daemon in the foreground: accept signed events from hooks and
triggers, drain spool directories, review each change and publish the report.
Logs go to stderr (JSON unless stderr is a terminal); the first lines give
the version and the config's sha256 digest.

SIGHUP (or aicr reload) re-reads the config file: it is checked first and a
bad file keeps the running config. Repos, channels, policy, the agent and
workers change live; [daemon] listen and data_dir need a restart.

SIGTERM (or Ctrl-C) drains: no new review is started, reviews in flight get
[daemon] shutdown_grace (60s) to finish, the rest are re-queued; a second
signal re-queues them at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := parseLevel(level)
			if err != nil {
				return err
			}
			opts.Level = l
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return daemonRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().StringVar(&level, "log-level", "info", "debug, info, warn or error")
	return cmd
}

func daemonRun(ctx context.Context, opts *DaemonOptions) error {
	f := opts.Factory
	// The daemon creates aicr.db and runs/N: they must be the owner's.
	cfg, err := f.RequireDataDirOwner()
	if err != nil {
		return err
	}
	reload, abort, stop := daemonSignals(ctx)
	defer stop()
	return serveDaemon(ctx, daemon.Options{Config: cfg, Logger: f.Logger(opts.Level), Stdout: f.IOStreams.Out, Now: f.Now,
		Version: version, Reload: reload, Abort: abort})
}

// daemonSignals turns SIGHUP into reloads (its default action would end
// the process, so a service manager's reload would kill the daemon) and a
// stop signal arriving after ctx ended (the first one, which starts the
// drain) into abort.
func daemonSignals(ctx context.Context) (reload, abort <-chan struct{}, stop func()) {
	hup := make(chan os.Signal, 1)
	term := make(chan os.Signal, 2)
	signal.Notify(hup, syscall.SIGHUP)
	signal.Notify(term, os.Interrupt, syscall.SIGTERM)
	rl, ab := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		stops := 0
		for {
			select {
			case <-done:
				return
			case <-hup:
				select {
				case rl <- struct{}{}:
				case <-ctx.Done():
				case <-done:
					return
				}
			case <-term:
				// The first stop signal also cancelled ctx (main's
				// NotifyContext) and starts the drain; the second aborts.
				if stops++; stops < 2 {
					continue
				}
				close(ab)
				<-done
				return
			}
		}
	}()
	return rl, ab, func() { signal.Stop(hup); signal.Stop(term); close(done) }
}

// serveDaemon is the CLI's one call into the daemon's entry point (aicr
// daemon and aicr demo); it becomes daemon.Serve with the composition
// root.
func serveDaemon(ctx context.Context, opts daemon.Options) error {
	return daemon.Serve(ctx, opts)
}
