package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/triggers"
)

// NotifyP4Options are the trigger's arguments (p4d expands %change%
// etc.), as triggers.P4Notify defines them.
type NotifyP4Options struct {
	IO *IOStreams
	triggers.P4Notify
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
	o.RegisterFlags(cmd.Flags())
	return cmd
}

// notifyP4Run reports every problem on stderr and returns nil: a trigger
// always exits 0.
func notifyP4Run(ctx context.Context, o *NotifyP4Options) error {
	o.IO = stampedErrOut(o.IO)
	if err := notifyP4(ctx, o); err != nil {
		fmt.Fprintln(o.IO.ErrOut, "aicr notify p4:", err)
	}
	return nil
}

func notifyP4(ctx context.Context, o *NotifyP4Options) error {
	p := o.P4Notify
	p.Argv = os.Args[1:]
	return triggers.RunNotifyP4(ctx, p, o.IO.ErrOut)
}
