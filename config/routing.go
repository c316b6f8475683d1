package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// Policy is a publishing policy layer: the global [policy] table, a
// repo's own keys, or a [repo.channel_policy.NAME] table. Empty keys
// inherit from the layer below.
type Policy struct {
	NoProblems  im.NoProblemsPolicy `toml:"no_problems"`
	MinSeverity review.Severity     `toml:"min_severity"`
	// Repeat is how reports show a finding the channel was already told
	// about (see im.ChannelConfig.Repeat); [policy] sets the default,
	// [repo.channel_policy.NAME] overrides the [[channel]]'s.
	Repeat im.RepeatPolicy `toml:"repeat"`
}

// RepeatFor resolves the repeat policy of channel for repo. Precedence,
// highest first: [repo.channel_policy.<channel>], the [[channel]] table,
// [policy], then the default (mention).
func (c *Config) RepeatFor(repo *Repo, channel string) im.RepeatPolicy {
	if repo != nil {
		if r := repo.ChannelPolicy[channel].Repeat; r != "" {
			return r
		}
	}
	if ch, ok := c.Channel(channel); ok && ch.Repeat != "" {
		return ch.Repeat
	}
	if c.Policy.Repeat != "" {
		return c.Policy.Repeat
	}
	return im.DefaultRepeat
}

// Route is one [[repo.route]]: a change touching any path matching
// Paths is also sent to Channels.
type Route struct {
	Paths    []string `toml:"paths"`
	Channels []string `toml:"channels"`
}

// PolicyFor resolves the policy of channel for repo. Precedence, highest
// first: [repo.channel_policy.<channel>], the [[channel]] table, the
// [[repo]] table, [policy], then the defaults (publish, info). Each key is
// resolved on its own, so a repo can set min_severity while a channel
// sets no_problems.
func (c *Config) PolicyFor(repo *Repo, channel string) im.Policy {
	layers := []Policy{c.Policy}
	if repo != nil {
		layers = append(layers, Policy{NoProblems: repo.NoProblems, MinSeverity: repo.MinSeverity})
	}
	if ch, ok := c.Channel(channel); ok {
		layers = append(layers, Policy{NoProblems: ch.NoProblems, MinSeverity: ch.MinSeverity})
	}
	if repo != nil {
		layers = append(layers, repo.ChannelPolicy[channel])
	}
	p := im.Policy{NoProblems: im.DefaultNoProblems, MinSeverity: im.DefaultMinSeverity}
	for _, l := range layers {
		if l.NoProblems != "" {
			p.NoProblems = l.NoProblems
		}
		if l.MinSeverity != "" {
			p.MinSeverity = l.MinSeverity
		}
	}
	return p
}

// ChannelsFor returns the channels a change to repo goes to: the repo's
// channels, then those of every route matching one of paths, each once.
func (c *Config) ChannelsFor(repo *Repo, paths []string) []string {
	out := slices.Clone(repo.Channels)
	for _, r := range repo.Routes {
		f := vcs.Filter{Include: r.Paths}
		if !slices.ContainsFunc(paths, f.Match) {
			continue
		}
		for _, ch := range r.Channels {
			if !slices.Contains(out, ch) {
				out = append(out, ch)
			}
		}
	}
	return out
}

// Channel returns the [[channel]] named name.
func (c *Config) Channel(name string) (*Channel, bool) {
	for i := range c.Channels {
		if c.Channels[i].Name == name {
			return &c.Channels[i], true
		}
	}
	return nil, false
}

// User returns the [[user]] mapping of a VCS user, or nil.
func (c *Config) User(vcsUser string) *im.Identity {
	for i := range c.Users {
		if c.Users[i].VCSUser == vcsUser {
			id := c.Users[i]
			return &id
		}
	}
	return nil
}

// validateRouting checks [policy], [dispatch], [[user]] and each repo's
// policy keys, routes and channel_policy tables. Routes live in nested
// arrays the generic key index numbers globally ("repo.route[3]"), so this
// finds their lines itself.
func (c *Config) validateRouting(file string, keys keyIndex, declared map[string]bool) []error {
	var errs []error
	add := func(key, lineKey, format string, args ...any) {
		errs = append(errs, &Error{File: file, Line: keys.line(lineKey), Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	checkPolicy := func(key string, p Policy) {
		if p.NoProblems != "" && !p.NoProblems.Valid() {
			add(key+".no_problems", key+".no_problems", "must be publish, suppress or publish_if_summary, got %q", p.NoProblems)
		}
		if p.MinSeverity != "" && !p.MinSeverity.Valid() {
			add(key+".min_severity", key+".min_severity", "must be info, low, medium, high or critical, got %q", p.MinSeverity)
		}
		if p.Repeat != "" && !p.Repeat.Valid() {
			add(key+".repeat", key+".repeat", "must be mention, omit or full, got %q", p.Repeat)
		}
	}
	known := func(name string) bool {
		_, ok := c.Channel(name)
		return ok || declared[name]
	}
	checkPolicy("policy", c.Policy)

	for _, e := range c.Dispatch.Validate() {
		key := "dispatch"
		if e.Key != "" {
			key += "." + e.Key
		}
		add(key, key, "%s", e.Msg)
	}

	seen := map[string]bool{}
	for i, u := range c.Users {
		key := fmt.Sprintf("user[%d]", i)
		switch {
		case strings.TrimSpace(u.VCSUser) == "":
			add(key+".vcs_user", key, "missing: the VCS user this entry maps")
		case seen[u.VCSUser]:
			add(key+".vcs_user", key+".vcs_user", "duplicate user %q", u.VCSUser)
		}
		seen[u.VCSUser] = true
	}

	route := 0 // global index of [[repo.route]] tables, as keyIndex counts them
	for i, r := range c.Repos {
		key := fmt.Sprintf("repo[%d]", i)
		checkPolicy(key, Policy{NoProblems: r.NoProblems, MinSeverity: r.MinSeverity})
		for _, name := range sortedKeys(r.ChannelPolicy) {
			pkey := key + ".channel_policy." + name
			lineKey := "repo.channel_policy." + name
			if !known(name) {
				add(pkey, lineKey, "names channel %q, which no [[channel]] defines", name)
			}
			p := r.ChannelPolicy[name]
			if p.NoProblems != "" && !p.NoProblems.Valid() {
				add(pkey+".no_problems", lineKey+".no_problems", "must be publish, suppress or publish_if_summary, got %q", p.NoProblems)
			}
			if p.MinSeverity != "" && !p.MinSeverity.Valid() {
				add(pkey+".min_severity", lineKey+".min_severity", "must be info, low, medium, high or critical, got %q", p.MinSeverity)
			}
			if p.Repeat != "" && !p.Repeat.Valid() {
				add(pkey+".repeat", lineKey+".repeat", "must be mention, omit or full, got %q", p.Repeat)
			}
		}
		for j, rt := range r.Routes {
			rkey := fmt.Sprintf("%s.route[%d]", key, j)
			lineKey := fmt.Sprintf("repo.route[%d]", route)
			route++
			if len(rt.Paths) == 0 {
				add(rkey+".paths", lineKey, "missing: the globs that select this route")
			}
			if err := (vcs.Filter{Include: rt.Paths}).Validate(); err != nil {
				add(rkey+".paths", lineKey+".paths", "%v", err)
			}
			if len(rt.Channels) == 0 {
				add(rkey+".channels", lineKey, "missing: the channels this route adds")
			}
			for _, name := range rt.Channels {
				if !known(name) {
					add(rkey+".channels", lineKey+".channels", "names channel %q, which no [[channel]] defines", name)
				}
			}
		}
	}
	return errs
}
