package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/robfig/cron/v3"

	"github.com/aicr-dev/aicr/im"
)

// fieldProblem is one validation error, located later by its TOML key.
type fieldProblem struct{ key, msg string }

var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// validate checks the decoded, defaulted config and returns every
// problem, each under the key it is about.
func (c *Config) validate(declaredChannels map[string]bool) []fieldProblem {
	var out []fieldProblem
	add := func(key, format string, args ...any) {
		out = append(out, fieldProblem{key, fmt.Sprintf(format, args...)})
	}
	out = append(out, c.settleLanguages()...)
	if c.Daemon.Workers < 1 || c.Daemon.Workers > 64 {
		add("daemon.workers", "must be between 1 and 64, got %d", c.Daemon.Workers)
	}
	if c.Daemon.RetryFor < 0 || c.Daemon.MissingRevisionGrace < 0 {
		add("daemon.retry_for", "retry_for and missing_revision_grace must not be negative")
	}
	out = append(out, c.Retention.validate()...)
	out = append(out, c.Web.settle(filepath.Dir(c.Path))...)
	if c.Daemon.SecretEnv != "" && c.Daemon.SecretFile != "" {
		add("daemon.secret_file", "set secret_env or secret_file, not both")
	}
	if c.Notify.SecretEnv != "" && c.Notify.SecretFile != "" && (c.Notify.SecretEnv != c.Daemon.SecretEnv || c.Notify.SecretFile != c.Daemon.SecretFile) {
		add("notify.secret_file", "set secret_env or secret_file, not both")
	}
	if !strings.HasPrefix(c.Notify.URL, "http://") && !strings.HasPrefix(c.Notify.URL, "https://") {
		add("notify.url", "must be an http:// or https:// URL, got %q", c.Notify.URL)
	}
	if c.Notify.Timeout < 0 || c.Notify.ResendMax < 0 {
		add("notify", "timeout and resend_max must not be negative")
	}
	for _, err := range splitErrors(c.Agent.Validate()) {
		key, msg := agentErrorKey(err)
		add(key, "%s", msg)
	}
	for _, err := range splitErrors(c.Sandbox.Validate()) {
		key, msg := tableErrorKey("sandbox", err)
		add(key, "%s", msg)
	}

	channelNames := map[string]bool{}
	for i, ch := range c.Channels {
		key := fmt.Sprintf("channel[%d]", i)
		for _, err := range splitErrors(ch.ChannelConfig.Validate()) {
			var ce *im.ConfigError
			if errors.As(err, &ce) {
				add(key+"."+ce.Key, "%s", strings.TrimPrefix(err.Error(), ce.Key+": "))
			} else {
				add(key, "%v", err)
			}
		}
		if channelNames[ch.Name] {
			add(key+".name", "duplicate channel name %q", ch.Name)
		}
		channelNames[ch.Name] = true
		for _, err := range splitErrors(ch.Settings.Validate()) {
			add(key, "%v", err)
		}
	}

	repoNames := map[string]bool{}
	if len(c.Repos) == 0 {
		add("repo", "no [[repo]] configured: add at least one repository to review")
	}
	for i, r := range c.Repos {
		key := fmt.Sprintf("repo[%d]", i)
		if !repoNameRE.MatchString(r.Name) {
			add(key+".name", "must be 1-64 letters, digits, '.', '_' or '-', got %q", r.Name)
		}
		if repoNames[r.Name] {
			add(key+".name", "duplicate repo name %q", r.Name)
		}
		repoNames[r.Name] = true
		if r.Settings != nil {
			for _, err := range splitErrors(r.Settings.Validate()) {
				add(key, "%v", err)
			}
		}
		if r.ReconcileEvery != "off" {
			if _, err := cron.ParseStandard(r.ReconcileEvery); err != nil {
				add(key+".reconcile_every", "bad schedule %q: %v (use cron syntax, @every 5m, or off)", r.ReconcileEvery, err)
			}
		}
		if r.ReconcileMax < 1 || r.ReconcileMax > 10000 {
			add(key+".reconcile_max", "must be between 1 and 10000, got %d", r.ReconcileMax)
		}
		for _, name := range r.Channels {
			if !channelNames[name] && !declaredChannels[name] {
				add(key+".channels", "names channel %q, which no [[channel]] defines", name)
			}
		}
		for _, name := range r.ShelveChannels {
			if !channelNames[name] && !declaredChannels[name] {
				add(key+".shelve_channels", "names channel %q, which no [[channel]] defines", name)
			}
		}
	}
	out = append(out, c.validateDigests(channelNames, declaredChannels)...)
	out = append(out, c.validateBudgets()...)
	return out
}

// agentErrorKey finds the key package agent names at the start of its
// message ("agent.timeout: ..."), so the error is reported once, at that
// key's line; a message naming several keys goes under the [agent] table.
func agentErrorKey(err error) (key, msg string) {
	text := err.Error()
	if k, rest, ok := strings.Cut(text, ": "); ok && strings.HasPrefix(k, "agent.") && !strings.ContainsAny(k, " ,") {
		return k, rest
	}
	return "agent", text
}

// tableErrorKey is agentErrorKey for any table whose package prefixes
// its messages with the key ("sandbox.podman.memory: ...").
func tableErrorKey(table string, err error) (key, msg string) {
	text := err.Error()
	if k, rest, ok := strings.Cut(text, ": "); ok && strings.HasPrefix(k, table+".") && !strings.ContainsAny(k, " ,") {
		return k, rest
	}
	return table, text
}

// splitErrors undoes errors.Join so each problem gets its own line.
func splitErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, splitErrors(e)...)
		}
		return out
	}
	return []error{err}
}
