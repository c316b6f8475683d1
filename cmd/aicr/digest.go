package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
)

func newCmdDigest(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "digest",
		Short: "Preview and send a [[digest]] now",
	}
	cmd.AddCommand(newCmdDigestSend(f, nil))
	return cmd
}

// DigestSendOptions are the inputs of `aicr digest send`.
type DigestSendOptions struct {
	Factory *Factory
	Name    string
	DryRun  bool
	Format  string
}

func newCmdDigestSend(f *Factory, runF func(context.Context, *DigestSendOptions) error) *cobra.Command {
	opts := &DigestSendOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "send NAME",
		Short: "Send a digest of the period so far to its channel now",
		Long: `Build the [[digest]] NAME for the period from its last scheduled time to now,
and send it to its channel from this process (recorded as a delivery, retried
by the daemon if the attempt fails in a retryable way). The scheduled digest of
the period is still sent at its time. --dry-run prints the digest and sends
nothing. Run it as the data_dir's owner.`,
		Example: "  aicr digest send weekly --dry-run\n  aicr digest send weekly",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return digestSendRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	addDryRunFlag(cmd, &opts.DryRun)
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// digestSendOutput is `aicr digest send --format json`: the digest's
// figures and, when sent, the delivery after this process's attempt.
type digestSendOutput struct {
	Digest   *im.Digest         `json:"digest"`
	Dispatch *delivery.Dispatch `json:"dispatch,omitempty"`
}

func digestSendRun(ctx context.Context, opts *DigestSendOptions) error {
	f := opts.Factory
	out := newExporter(f.IOStreams, opts.Format)
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	if opts.DryRun {
		store, err := f.ReadOnlyStore(ctx)
		if err != nil {
			return err
		}
		defer store.Close()
		rep, _, err := daemon.DigestNow(ctx, cfg, store, opts.Name, f.Now(), false)
		if err != nil {
			return digestErr(err)
		}
		return out.Write(digestSendOutput{Digest: rep.Digest}, func(w io.Writer) error {
			_, err := io.WriteString(w, im.PlainText(rep))
			return err
		})
	}
	// Writes the audit trail and, through a file channel, files: as the
	// data_dir's owner only.
	store, err := f.Store(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	parts, err := daemon.Build(cfg, daemon.Deps{Store: store, Logger: f.VerbLogger(slog.LevelWarn), Stdout: out.reportStream(), Now: f.Now}, daemon.BuildOptions{})
	if err != nil {
		return err
	}
	rep, d, err := daemon.DigestNow(ctx, cfg, store, opts.Name, f.Now(), true)
	if err != nil {
		return digestErr(err)
	}
	res := digestSendOutput{Digest: rep.Digest, Dispatch: d}
	after, err := parts.Dispatcher.AttemptNow(ctx, d.ID)
	switch {
	case errors.Is(err, delivery.ErrNotClaimable):
		return out.Write(res, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "dispatch %d (%s): queued (an earlier delivery to the channel is waiting for a retry); the daemon sends it\n", d.ID, d.Channel)
			return err
		})
	case err != nil:
		return err
	}
	res.Dispatch = &after
	err = out.Write(res, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "digest %s: dispatch %d (%s): %s%s\n", opts.Name, after.ID, after.Channel, after.Status, prefixed(" — ", after.LastError))
		return err
	})
	if err != nil {
		return err
	}
	if after.Status.Undelivered() {
		return errSilentFailure
	}
	return nil
}

// digestErr makes a digest name the config lacks a usage error.
func digestErr(err error) error {
	if errors.Is(err, daemon.ErrUnknownDigest) {
		return asUsage(err)
	}
	return err
}
