package main

// The CLI side of the admin tools: the verbs whose --format json output is
// the admin tool's structured content call package admin, and its
// envelopes become the CLI's errors and exit codes here.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/mcperr"
)

// adminFor is the admin tools over the factory's config, as this process.
func adminFor(f *Factory, via string) *admin.Admin { return admin.New(adminDeps(f, via)) }

// adminDeps is what the admin tools take from this process, for the CLI
// verbs and `aicr mcp admin` alike.
func adminDeps(f *Factory, via string) admin.Deps {
	return admin.Deps{
		ConfigPath: f.ConfigPath,
		Now:        f.Now,
		Executable: f.Executable,
		CheckOwner: checkDataDirOwner,
		Actor:      actor(via),
		Version:    version,
	}
}

// actor names who paused a repo or cancelled a run: the operator behind
// sudo when there is one.
func actor(via string) string {
	name := os.Getenv("SUDO_USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	if via != "" {
		name += " (" + via + ")"
	}
	return name
}

// cliError turns an admin envelope into the CLI's error: bad input and a
// bad config exit 2 like every usage error, anything else 1. The remedy
// follows the message; errors.Is still reaches the cause. With --format
// json the envelope itself goes to stdout, as the tool's structured
// content does, and nothing to stderr.
func cliError(out exporter, err error) error {
	var env *mcperr.Error
	if !errors.As(err, &env) {
		return err
	}
	usage := env.Code == mcperr.InvalidInput || env.Code == mcperr.ConfigInvalid
	if out.JSON() {
		// The CLI's envelope names verbs too, not the tools behind them.
		cli := *env
		cli.Remedy = env.CLIRemedy()
		if werr := writeJSON(out.io.Out, &cli); werr != nil {
			return werr
		}
		if usage {
			return errSilentUsage
		}
		return errSilentFailure
	}
	e := &envelopeError{env: env}
	if usage {
		return &usageError{err: e}
	}
	return e
}

type envelopeError struct{ env *mcperr.Error }

// Error speaks the CLI's words: the remedy names verbs, not tools.
func (e *envelopeError) Error() string {
	remedy := e.env.CLIRemedy()
	if remedy == "" {
		return e.env.Message
	}
	return e.env.Message + "\n" + remedy
}

func (e *envelopeError) Unwrap() error { return e.env }

// addDryRunFlag gives a mutating verb the plan phase of its admin tool.
func addDryRunFlag(cmd *cobra.Command, dst *bool) {
	cmd.Flags().BoolVar(dst, "dry-run", false, "only print the plan; change nothing")
}

// printOutcome is the text form of a mutation's outcome.
func printOutcome(w io.Writer, o admin.Outcome) error {
	list := o.Plan
	if o.Confirmed {
		list = o.Applied
	}
	for _, c := range list {
		target := c.Repo
		if c.ID != 0 {
			target = fmt.Sprint(c.ID)
		}
		if _, err := fmt.Fprintf(w, "%s %s: %s → %s%s\n", c.Kind, target, c.From, c.To, prefixed(" — ", c.Detail)); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, o.Message)
	return err
}
