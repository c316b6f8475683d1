package config

import (
	"fmt"
	"strings"

	"github.com/robfig/cron/v3"
)

// DigestTable is one [[digest]] table: a periodic summary of findings
// (open by path and age, new and resolved in the period, the false
// positive rate, the review cost) sent to one channel.
type DigestTable struct {
	// Name names the digest in logs, dispatch rows and the report title.
	Name string `toml:"name"`
	// Channel is the [[channel]] it goes to.
	Channel string `toml:"channel"`
	// Every is its cron schedule ("0 9 * * 1-5", "@daily").
	Every string `toml:"every"`
	// Repos and Paths narrow what it counts; empty means every repo and
	// path.
	Repos []string `toml:"repos"`
	Paths []string `toml:"paths"`
}

// Schedule parses Every; validate has checked it already.
func (d DigestTable) Schedule() (cron.Schedule, error) {
	return cron.ParseStandard(d.Every)
}

// validateDigests checks every [[digest]]: a name that can be a job and
// a dispatch slot, once; a channel and repos the config defines; a cron
// schedule that parses. Paths are prefixes of repo-relative paths.
func (c *Config) validateDigests(channels, declared map[string]bool) []fieldProblem {
	var out []fieldProblem
	add := func(key, format string, args ...any) {
		out = append(out, fieldProblem{key, fmt.Sprintf(format, args...)})
	}
	repos := map[string]bool{}
	for _, r := range c.Repos {
		repos[r.Name] = true
	}
	names := map[string]bool{}
	for i, d := range c.Digests {
		key := fmt.Sprintf("digest[%d]", i)
		checkTableName(add, key, "digest", "weekly", d.Name, names)
		switch {
		case d.Channel == "":
			add(key+".channel", "missing; name the [[channel]] the digest goes to")
		case !channels[d.Channel] && !declared[d.Channel]:
			add(key+".channel", "names channel %q, which no [[channel]] defines", d.Channel)
		}
		if d.Every == "" {
			add(key+".every", `missing; give a cron schedule ("0 9 * * 1-5", "@daily", "@weekly")`)
		} else if strings.HasPrefix(strings.TrimSpace(d.Every), "@every") {
			// An interval counts from whenever a daemon started: two
			// daemons, or one restarted, would not agree on the periods.
			add(key+".every", "%q has no fixed times; use a cron schedule (\"0 9 * * *\", @daily, @hourly) so every daemon agrees on the periods", d.Every)
		} else if _, err := d.Schedule(); err != nil {
			add(key+".every", "bad schedule %q: %v (use cron syntax: \"0 9 * * 1-5\", @daily, @weekly)", d.Every, err)
		}
		for _, r := range d.Repos {
			if !repos[r] {
				add(key+".repos", "names repo %q, which no [[repo]] defines (repos: %s)", r, strings.Join(c.RepoNames(), ", "))
			}
		}
		for _, p := range d.Paths {
			if strings.TrimSpace(p) == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "*?[") {
				add(key+".paths", "path %q must be a repo-relative path or directory prefix (src/net/), not empty, absolute or a glob", p)
			}
		}
	}
	return out
}

// checkTableName checks the name of one [[digest]] or [[budget]] table
// (key names it): set, well formed, and unique among names, which it
// records.
func checkTableName(add func(key, format string, args ...any), key, kind, example, name string, names map[string]bool) {
	switch {
	case name == "":
		add(key+".name", "missing; give the %s a name (name = %q)", kind, example)
	case !repoNameRE.MatchString(name):
		add(key+".name", "must be 1-64 letters, digits, '.', '_' or '-', got %q", name)
	case names[name]:
		add(key+".name", "duplicate %s name %q", kind, name)
	}
	names[name] = true
}
