package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// envNotifyChild marks the detached child of `aicr notify p4`, so it does
// the delivery instead of detaching again.
const envNotifyChild = "AICR_NOTIFY_DETACHED"

// NotifyP4Options are the trigger's arguments (p4d expands %change% etc.).
type NotifyP4Options struct {
	IO         *IOStreams
	ConfigPath string
	Repo       string
	Change     string
	User       string
	Client     string
	ServerPort string
	ServerID   string
	Foreground bool
	// Args are stray arguments, reported and otherwise ignored.
	Args []string
}

func newCmdNotifyP4(f *Factory, runF func(context.Context, *NotifyP4Options) error) *cobra.Command {
	o := &NotifyP4Options{IO: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "p4 --repo NAME --change N",
		Short: "Notify the daemon of a submitted changelist (the change-commit trigger client)",
		Long: `Notify the daemon of a submitted Perforce changelist. The change-commit
trigger printed by 'aicr install p4-trigger' runs this. It starts a detached
copy of itself and returns at once, so p4 submit never waits for the network;
the copy sends the event or spools it. Errors go to <spool_dir>/notify.log and
the exit status is always 0.`,
		Example: `  aicr notify p4 --config /etc/aicr/aicr.toml --repo depot --change %change% --user %user% --client %client% --serverport %serverport%`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ConfigPath, o.Args = f.ConfigPath, args
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return notifyP4Run(cmd.Context(), o)
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintln(f.IOStreams.ErrOut, "aicr notify p4:", err)
		return errSilentOK
	})
	addConfigFlag(cmd, f)
	fl := cmd.Flags()
	fl.StringVar(&o.Repo, "repo", "", "repo name from the config (required)")
	fl.StringVar(&o.Change, "change", "", "the submitted changelist (%change%)")
	fl.StringVar(&o.User, "user", "", "the submitting user (%user%)")
	fl.StringVar(&o.Client, "client", "", "the submitting workspace (%client%)")
	fl.StringVar(&o.ServerPort, "serverport", "", "the server's P4PORT (%serverport%)")
	fl.StringVar(&o.ServerID, "serverid", "", "the server's ServerID (%serverid%)")
	fl.BoolVar(&o.Foreground, "foreground", false, "send in this process instead of a detached one (for testing)")
	return cmd
}

// notifyP4Run reports every problem on stderr and returns nil: a trigger
// always exits 0.
func notifyP4Run(ctx context.Context, o *NotifyP4Options) error {
	if err := notifyP4(ctx, o); err != nil {
		fmt.Fprintln(o.IO.ErrOut, "aicr notify p4:", err)
	}
	return nil
}

func notifyP4(ctx context.Context, o *NotifyP4Options) error {
	if len(o.Args) > 0 {
		return fmt.Errorf("unexpected arguments %q: use --change %%change%%", o.Args)
	}
	if o.Repo == "" {
		return fmt.Errorf("--repo is required")
	}
	change, err := triggers.CanonicalRevision(o.Change)
	if err != nil {
		return fmt.Errorf("--change: %w", err)
	}
	if !o.Foreground && os.Getenv(envNotifyChild) == "" {
		// The child starts in / (so it holds no directory of p4d's open):
		// a relative --config must be resolved here or the child loses the
		// event.
		abs, err := filepath.Abs(o.ConfigPath)
		if err != nil {
			return fmt.Errorf("event for %s change %s not sent: config path %s: %w", o.Repo, change, o.ConfigPath, err)
		}
		cfg, _, _ := triggers.LoadHookConfig(abs)
		return detachNotify(cfg.SpoolDir, abs)
	}
	_, clientCfg := loadHookConfig(o.IO, o.ConfigPath)
	ev := triggers.Event{
		V:          triggers.ProtocolVersion,
		VCS:        string(vcs.KindP4),
		Repo:       o.Repo,
		Revision:   change,
		User:       o.User,
		Client:     o.Client,
		ServerPort: o.ServerPort,
		ServerID:   o.ServerID,
		Source:     triggers.SourceTrigger,
		SentAt:     time.Now().UTC(),
	}
	triggers.Notify(ctx, clientCfg, ev, o.IO.ErrOut)
	return nil
}

// detachNotify re-runs this command in a new session with stdin/stdout
// on /dev/null and stderr appended to <spool>/notify.log, and returns
// without waiting: p4d waits for the trigger's output pipes, so nothing
// of the child may stay attached to them.
func detachNotify(spoolDir, absConfig string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer devnull.Close()
	logw := devnull
	if spoolDir != "" {
		if f, err := triggers.OpenNotifyLog(spoolDir); err == nil {
			defer f.Close()
			logw = f
		}
	}
	child := exec.Command(exe, withConfig(os.Args[1:], absConfig)...)
	child.Env = append(os.Environ(), envNotifyChild+"=1")
	child.Stdin, child.Stdout, child.Stderr = devnull, devnull, logw
	child.Dir = "/"
	detachAttrs(child)
	if err := child.Start(); err != nil {
		return fmt.Errorf("start detached notifier: %w", err)
	}
	return child.Process.Release()
}

// withConfig replaces the --config value in args (every spelling cobra
// accepts) with path, or adds it when absent.
func withConfig(args []string, path string) []string {
	out := make([]string, 0, len(args)+2)
	replaced := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--config":
			out = append(out, "--config="+path)
			i++
			replaced = true
		case strings.HasPrefix(a, "--config="):
			out = append(out, "--config="+path)
			replaced = true
		default:
			out = append(out, a)
		}
	}
	if !replaced {
		out = append(out, "--config="+path)
	}
	return out
}
