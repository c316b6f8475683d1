// Package admin is the logic of aicr's operator tools: the read-only
// queries (runs, one run, deliveries, the queue, doctor, config check,
// findings and their precision) and the two-phase mutations (retry a run
// or a delivery, cancel a run, pause and resume a repo, prune run
// directories, dismiss and reopen a finding). `aicr mcp admin`
// serves them as typed MCP tools and the CLI verbs call the same
// functions, so a tool's structured content and the verb's --format json
// output are one value.
//
// Every mutation is two-phase: without Confirm it returns the plan and
// writes nothing (it does not even open the database for writing); with
// Confirm it rebuilds the plan from the current state, applies it and
// reads every changed object back to check the change holds.
//
// Failures are mcperr envelopes: NOT_FOUND, INVALID_INPUT,
// CONFIRMATION_REQUIRED, POLICY_BLOCKED, CONFIG_INVALID, INTERNAL.
package admin

import (
	"context"
	"errors"
	"fmt"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/vcs"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/mcperr"
)

// Deps is what the tools need from the process.
type Deps struct {
	// ConfigPath is read at every call, so an edited config is used
	// without restarting a long-lived MCP server.
	ConfigPath string
	// Now stamps pauses and cancellations and reads durations.
	Now func() time.Time
	// Executable is the aicr binary doctor runs notify's dry run with.
	Executable func() (string, error)
	// CheckOwner refuses writes from a process that is not the
	// data_dir's owner (files it created would lock the daemon out).
	CheckOwner func(dataDir string) error
	// ReadOnly refuses every confirmed mutation with POLICY_BLOCKED
	// (`aicr mcp admin --read-only`); plans are still shown.
	ReadOnly bool
	// Actor is recorded as who paused a repo, cancelled a run or
	// dismissed or reopened a finding.
	Actor string
	// Via is where a finding's dismissal or reopening came from:
	// findings.ViaMCP for aicr mcp admin; the CLI when empty.
	Via findings.Via
	// Version is this aicr's: doctor warns about a daemon running
	// another, as aicr doctor does.
	Version string
}

// Admin runs the tools over one config file.
type Admin struct {
	d Deps
}

// New returns the tools over d.
func New(d Deps) *Admin {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.CheckOwner == nil {
		d.CheckOwner = func(string) error { return nil }
	}
	return &Admin{d: d}
}

// config loads the config at every call; a config that does not load is
// CONFIG_INVALID with the loader's file:line message.
func (a *Admin) config() (*config.Config, error) {
	cfg, err := config.Load(a.d.ConfigPath)
	if err != nil {
		return nil, mcperr.New(mcperr.ConfigInvalid,
			"fix the config (aicr config check "+a.d.ConfigPath+" lists every problem), then call again", "%v", err)
	}
	return cfg, nil
}

// readStore opens the configured store ([store]: the data_dir's SQLite
// file, or PostgreSQL) read-only: reads and plans never create, migrate
// or write it.
func (a *Admin) readStore(ctx context.Context) (*audit.Store, *config.Config, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, nil, err
	}
	store, err := config.OpenStoreReadOnly(ctx, cfg)
	if errors.Is(err, audit.ErrNoDatabase) {
		return nil, nil, mcperr.Wrap(mcperr.NotFound, "start the daemon once (aicr daemon); it creates the database", err)
	}
	if err != nil {
		return nil, nil, storeErr(err)
	}
	return store, cfg, nil
}

// writeStore opens the configured store for a confirmed mutation, as the
// data_dir's owner only.
func (a *Admin) writeStore(ctx context.Context, cfg *config.Config) (*audit.Store, error) {
	if a.d.ReadOnly {
		return nil, mcperr.New(mcperr.PolicyBlocked,
			"this admin server was started with --read-only; run the matching aicr CLI verb, or register a server without --read-only",
			"mutations are disabled on this server")
	}
	if err := a.d.CheckOwner(cfg.Daemon.DataDir); err != nil {
		return nil, mcperr.Wrap(mcperr.PolicyBlocked, "run the admin server (or the CLI) as the data_dir's owner", err)
	}
	store, err := config.OpenStore(ctx, cfg)
	if err != nil {
		return nil, storeErr(err)
	}
	store.SetClock(a.d.Now)
	return store, nil
}

// storeErr maps the store's sentinels to envelopes; anything else is
// aicr failing.
func storeErr(err error) error {
	var env *mcperr.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &env):
		return env
	case errors.Is(err, audit.ErrNotFound):
		return mcperr.Wrap(mcperr.NotFound, "list what exists with runs_list / dispatch_list", err).OnCLI("list what exists with aicr audit list / aicr dispatch list")
	case errors.Is(err, audit.ErrNotFailed), errors.Is(err, audit.ErrNotQueued), errors.Is(err, audit.ErrNotRetryable):
		// Changed under the plan by another process (a daemon, a CLI).
		return mcperr.Wrap(mcperr.PolicyBlocked, "call again without confirm to see the current state", err)
	case errors.Is(err, audit.ErrInvalid):
		return mcperr.Wrap(mcperr.InvalidInput, "check the arguments against the tool's input schema", err)
	default:
		return mcperr.Wrap(mcperr.Internal, "check that the data_dir's disk and aicr.db are healthy (aicr doctor), then retry", err)
	}
}

func invalid(remedy, format string, args ...any) error {
	return mcperr.New(mcperr.InvalidInput, remedy, format, args...)
}

// invalidOnCLI is invalid with a remedy that names tools or their
// arguments, and cli the same in the CLI's verbs and flags.
func invalidOnCLI(remedy, cli, format string, args ...any) error {
	return mcperr.New(mcperr.InvalidInput, remedy, format, args...).OnCLI(cli)
}

// ParseSince reads a duration back from now (24h) or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, invalid("give a duration (24h) or an RFC 3339 time (2026-01-02T15:04:05Z)", "since %q is neither a duration nor a time", s)
}

// describe is a short "run 4 (main r7)" for plans and messages.
func describe(r audit.RunSummary) string {
	return fmt.Sprintf("run %d (%s %s)", r.ID, r.Repo, vcs.RevisionText(vcs.Kind(r.VCS), r.Revision))
}
