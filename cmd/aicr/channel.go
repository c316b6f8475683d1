package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/file"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

func newCmdChannel(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "channel",
		Short: "Work with the configured IM channels",
	}
	cmd.AddCommand(newCmdChannelTest(f, nil))
	return cmd
}

// ChannelTestOptions are the inputs of `aicr channel test`.
type ChannelTestOptions struct {
	Factory *Factory
	Name    string
	Timeout time.Duration
	Format  string
}

func newCmdChannelTest(f *Factory, runF func(context.Context, *ChannelTestOptions) error) *cobra.Command {
	opts := &ChannelTestOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "test NAME",
		Short: "Send a sample report to one channel and print the platform's answer",
		Long: `Send a sample report (two problems and a summary, for a made-up change) to one
configured channel, once, without retries and without touching the audit
trail, and print what the platform answered: HTTP status, platform code and
an excerpt of the response. Exits 1 when the platform refused the message.
A file channel is tested only as the data_dir's owner (the file it creates
must be the daemon's).`,
		Example: `  aicr channel test team-slack --config /etc/aicr/aicr.toml`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(opts.Format); err != nil {
				return err
			}
			if opts.Timeout <= 0 {
				return usageErrorf("--timeout must be positive, got %s", opts.Timeout)
			}
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return channelTestRun(cmd.Context(), opts)
		},
	}
	addConfigFlag(cmd, f)
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 30*time.Second, "give up on the platform after this long")
	addFormatFlag(cmd, &opts.Format)
	return cmd
}

// channelTestOutput is `aicr channel test --format json`: what the
// platform answered, or why the send failed.
type channelTestOutput struct {
	Channel      string `json:"channel"`
	Kind         string `json:"kind"`
	Sent         bool   `json:"sent"`
	Parts        int    `json:"parts,omitempty"`
	StatusCode   int    `json:"status_code,omitempty"`
	MessageID    string `json:"message_id,omitempty"`
	PlatformCode string `json:"platform_code,omitempty"`
	Response     string `json:"response,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Retryable    bool   `json:"retryable,omitempty"`
	RetryAfter   string `json:"retry_after,omitempty"`
	Error        string `json:"error,omitempty"`
}

func channelTestRun(ctx context.Context, opts *ChannelTestOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	out := newExporter(f.IOStreams, opts.Format)
	ch, err := daemon.BuildChannel(cfg, opts.Name, daemon.Deps{Logger: f.VerbLogger(slog.LevelWarn), Stdout: out.reportStream(), Now: f.Now})
	if err != nil {
		return asUsage(err)
	}
	if ch.Kind() == file.KindName {
		// The file it creates must be the daemon's to append to.
		if _, err := f.RequireDataDirOwner(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	rec, sendErr := ch.Send(ctx, SampleMessage(f.Now()))
	err = out.Write(sendOutcome(opts.Name, ch.Kind(), rec, sendErr), func(w io.Writer) error {
		printSendOutcome(w, opts.Name, ch.Kind(), rec, sendErr)
		return nil
	})
	if err != nil {
		return err
	}
	if sendErr != nil {
		return errSilentFailure
	}
	return nil
}

func sendOutcome(name, kind string, rec im.Receipt, err error) channelTestOutput {
	o := channelTestOutput{Channel: name, Kind: kind, Sent: err == nil}
	if err == nil {
		o.Parts, o.StatusCode, o.MessageID, o.Response = rec.Parts, rec.StatusCode, rec.MessageID, rec.Response
		return o
	}
	o.Error = err.Error()
	var se *im.SendError
	if errors.As(err, &se) {
		o.Reason, o.Retryable, o.StatusCode, o.PlatformCode, o.Response = string(se.Reason), se.Retryable, se.StatusCode, se.PlatformCode, se.Response
		if se.RetryAfter > 0 {
			o.RetryAfter = se.RetryAfter.String()
		}
	}
	return o
}

func printSendOutcome(w io.Writer, name, kind string, rec im.Receipt, err error) {
	if err == nil {
		fmt.Fprintf(w, "channel %s (%s): sent", name, kind)
		if rec.Parts > 1 {
			fmt.Fprintf(w, " in %d parts", rec.Parts)
		}
		fmt.Fprintln(w)
		if rec.StatusCode != 0 {
			fmt.Fprintf(w, "status: %d\n", rec.StatusCode)
		}
		if rec.MessageID != "" {
			fmt.Fprintf(w, "message id: %s\n", rec.MessageID)
		}
		if rec.Response != "" {
			fmt.Fprintf(w, "response: %s\n", rec.Response)
		}
		return
	}
	fmt.Fprintf(w, "channel %s (%s): failed\n", name, kind)
	var se *im.SendError
	if errors.As(err, &se) {
		retry := "permanent"
		if se.Retryable {
			retry = "retryable"
			if se.RetryAfter > 0 {
				retry += ", retry after " + se.RetryAfter.String()
			}
		}
		fmt.Fprintf(w, "reason: %s (%s)\n", se.Reason, retry)
		if se.StatusCode != 0 {
			fmt.Fprintf(w, "status: %d\n", se.StatusCode)
		}
		if se.PlatformCode != "" {
			fmt.Fprintf(w, "code: %s\n", se.PlatformCode)
		}
		if se.Response != "" {
			fmt.Fprintf(w, "response: %s\n", se.Response)
		}
	}
	fmt.Fprintf(w, "error: %v\n", err)
}

// SampleMessage is the report `aicr channel test` sends: realistic enough
// to show each platform's layout (severities, a suggestion with a fenced
// diff, Markdown in the summary), clearly labelled as a test.
func SampleMessage(now time.Time) im.Message {
	return im.Message{
		RunID: 0,
		Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "aicr-test", Revision: "1", Author: "aicr",
			Date: now, Description: "aicr channel test: this is a sample report, not a real review"},
		Result: review.Result{
			Problems: []review.Problem{
				{File: "src/config.go", Line: 12, Severity: review.SeverityHigh, Category: "hard-coded-credential",
					Message: "A password is assigned a literal value.", Suggestion: "Read it from the environment:\n```diff\n-password := \"hunter2\"\n+password := os.Getenv(\"DB_PASSWORD\")\n```"},
				{File: "docs/notes.md", Line: 3, EndLine: 5, Severity: review.SeverityLow, Category: "style",
					Message: "Sample problem with <angle brackets> & ampersands, shown literally."},
			},
			Summaries: []review.Summary{{Title: "Sample summary", Markdown: "This is **aicr**'s channel test.\n\n- problems are sorted by severity\n- `code` and [links](https://example.com) render in the platform's dialect"}},
		},
		DedupeKey: delivery.DedupeKey(0, "channel-test-"+now.UTC().Format("20060102T150405")),
	}
}
