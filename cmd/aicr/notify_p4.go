package main

import (
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
	ConfigPath string
	Repo       string
	Change     string
	User       string
	Client     string
	ServerPort string
	ServerID   string
	Foreground bool
}

func newNotifyP4Cmd(ios *IOStreams) *cobra.Command {
	var o NotifyP4Options
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
			if err := notifyP4(cmd, ios, o, args); err != nil {
				fmt.Fprintln(ios.ErrOut, "aicr notify p4:", err)
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		fmt.Fprintln(ios.ErrOut, "aicr notify p4:", err)
		return silentExit(0)
	})
	addConfigFlag(cmd, &o.ConfigPath)
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", "", "repo name from the config (required)")
	f.StringVar(&o.Change, "change", "", "the submitted changelist (%change%)")
	f.StringVar(&o.User, "user", "", "the submitting user (%user%)")
	f.StringVar(&o.Client, "client", "", "the submitting workspace (%client%)")
	f.StringVar(&o.ServerPort, "serverport", "", "the server's P4PORT (%serverport%)")
	f.StringVar(&o.ServerID, "serverid", "", "the server's ServerID (%serverid%)")
	f.BoolVar(&o.Foreground, "foreground", false, "send in this process instead of a detached one (for testing)")
	return cmd
}

func notifyP4(cmd *cobra.Command, ios *IOStreams, o NotifyP4Options, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected arguments %q: use --change %%change%%", args)
	}
	if o.Repo == "" {
		return fmt.Errorf("--repo is required")
	}
	change, err := triggers.CanonicalRevision(o.Change)
	if err != nil {
		return fmt.Errorf("--change: %w", err)
	}
	o.Change = change
	if !o.Foreground && os.Getenv(envNotifyChild) == "" {
		// The child starts in / (so it holds no directory of p4d's open):
		// a relative --config must be resolved here or the child loses the
		// event.
		abs, err := filepath.Abs(o.ConfigPath)
		if err != nil {
			return fmt.Errorf("event for %s change %s not sent: config path %s: %w", o.Repo, o.Change, o.ConfigPath, err)
		}
		cfg, _, _ := triggers.LoadHookConfig(abs)
		return detachNotify(cfg.SpoolDir, abs)
	}
	_, clientCfg := loadHookConfig(ios, o.ConfigPath)
	ev := triggers.Event{
		V:          triggers.ProtocolVersion,
		VCS:        string(vcs.KindP4),
		Repo:       o.Repo,
		Revision:   o.Change,
		User:       o.User,
		Client:     o.Client,
		ServerPort: o.ServerPort,
		ServerID:   o.ServerID,
		Source:     triggers.SourceTrigger,
		SentAt:     time.Now().UTC(),
	}
	triggers.Notify(cmd.Context(), clientCfg, ev, ios.ErrOut)
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
