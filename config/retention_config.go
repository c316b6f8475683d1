package config

import (
	"cmp"
	"fmt"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/robfig/cron/v3"
)

// DefaultRetentionEvery is when the retention job runs when [retention]
// every is not set: daily (and once at start, so a daemon restarted every
// day still prunes).
const DefaultRetentionEvery = "@daily"

// DefaultFindingsFor is how long a resolved finding, and the "seen"
// lines of every finding's history, are kept: a year of precision
// figures and of "fixed in r…" answers. Dismissed findings stay whatever
// their age (they keep their repo from being told again).
const DefaultFindingsFor = 365 * 24 * time.Hour

// DefaultSpoolLeftoversFor is how long files the spool set aside
// (rejected/ and crashed writers' temp files) are kept: long enough for
// an operator to look, short enough that a flood of junk goes away.
const DefaultSpoolLeftoversFor = 30 * 24 * time.Hour

// Retention is the [retention] table: how long each kind of data
// is kept. A zero duration keeps that data forever.
type Retention struct {
	// RunDirs is how long a finished run's directory (runs/<id>) is kept.
	RunDirs time.Duration `toml:"run_dirs"`
	// AuditRows is how long a finished run's rows (run, events, problems,
	// dispatches and their attempts, egress) and rejected requests are
	// kept. Default 0: the audit trail is kept until an operator decides.
	AuditRows time.Duration `toml:"audit_rows"`
	// SpoolLeftovers is how long files in a spool's rejected/ directory
	// (and temp files a crashed hook left) are kept.
	SpoolLeftovers time.Duration `toml:"spool_leftovers"`
	// ChannelFiles is how long lines of file channels are kept.
	ChannelFiles time.Duration `toml:"channel_files"`
	// Findings is how long a resolved finding is kept (with its history)
	// after its resolution, and how long the "seen" events of every
	// finding are; dismissed and open findings stay. Default one year.
	Findings time.Duration `toml:"findings"`
	// Every is the cron spec of the retention job.
	Every string `toml:"every"`
	// KeepSources keeps runs/<id>/src, diff.patch, agent/ and home/ after
	// the review is delivered. These copies of the changed code include any
	// secret a commit leaked, so they go by default once nothing needs them.
	KeepSources bool `toml:"keep_sources"`

	// runDirsKey is the key run_dirs was read from, for messages.
	runDirsKey string
}

// applyRetentionDefaults fills [retention] and maps the deprecated
// [daemon] keep_runs_for onto run_dirs. It returns the deprecation
// warnings, and the problems of a config that sets both differently.
func (c *Config) applyRetentionDefaults(md toml.MetaData) (warnings []string, problems []fieldProblem) {
	r := &c.Retention
	oldSet := md.IsDefined("daemon", "keep_runs_for")
	newSet := md.IsDefined("retention", "run_dirs")
	switch {
	case oldSet && newSet && c.Daemon.KeepRunsFor != r.RunDirs:
		problems = append(problems, fieldProblem{"daemon.keep_runs_for",
			fmt.Sprintf("is the deprecated name of [retention] run_dirs, and the two differ (%s and %s): delete keep_runs_for", c.Daemon.KeepRunsFor, r.RunDirs)})
	case oldSet && !newSet:
		r.RunDirs = c.Daemon.KeepRunsFor
		r.runDirsKey = "daemon.keep_runs_for"
		warnings = append(warnings, fmt.Sprintf("[daemon] keep_runs_for is deprecated: move it to [retention] run_dirs = %q", c.Daemon.KeepRunsFor.String()))
	case oldSet && newSet:
		warnings = append(warnings, "[daemon] keep_runs_for is deprecated and [retention] run_dirs already says the same: delete keep_runs_for")
	case !newSet:
		r.RunDirs = DefaultKeepRunsFor
	}
	// Code that still reads the old field sees the effective value.
	c.Daemon.KeepRunsFor = r.RunDirs
	if !md.IsDefined("retention", "spool_leftovers") {
		r.SpoolLeftovers = DefaultSpoolLeftoversFor
	}
	if !md.IsDefined("retention", "findings") {
		r.Findings = DefaultFindingsFor
	}
	if r.Every == "" {
		r.Every = DefaultRetentionEvery
	}
	return warnings, problems
}

// validate returns the [retention] problems under their keys.
func (r Retention) validate() []fieldProblem {
	var out []fieldProblem
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{cmp.Or(r.runDirsKey, "retention.run_dirs"), r.RunDirs},
		{"retention.audit_rows", r.AuditRows},
		{"retention.spool_leftovers", r.SpoolLeftovers},
		{"retention.channel_files", r.ChannelFiles},
		{"retention.findings", r.Findings},
	} {
		if d.v < 0 {
			out = append(out, fieldProblem{d.key, fmt.Sprintf("must not be negative (0 keeps forever), got %s", d.v)})
		}
	}
	if _, err := cron.ParseStandard(r.Every); err != nil {
		out = append(out, fieldProblem{"retention.every", fmt.Sprintf("bad schedule %q: %v (use cron syntax, @daily or @every 6h)", r.Every, err)})
	}
	return out
}
