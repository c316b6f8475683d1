package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/robfig/cron/v3"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/im"
)

// Preflight runs every check the daemon makes before it serves, beyond
// what Load validates: the listen address, the signing secret, the
// schedules. `aicr config check` runs it too, so a config it calls ok is
// one the daemon starts with. Warnings (a secret file others can read)
// do not stop the daemon.
func Preflight(cfg *Config) (warnings []string, err error) {
	var errs []error
	if err := checkListen(cfg.Daemon.Listen); err != nil {
		errs = append(errs, fmt.Errorf("[daemon] listen: %w", err))
	}
	if _, err := cfg.DaemonSecret(); err != nil {
		key := "daemon.secret_file"
		if cfg.Daemon.SecretEnv != "" {
			key = "daemon.secret_env"
		}
		errs = append(errs, cfg.located(key, err))
	}
	checked := map[string]bool{}
	for _, f := range []struct{ key, path string }{
		{"[daemon] secret_file", cfg.Daemon.SecretFile},
		{"[notify] secret_file", cfg.Notify.SecretFile},
	} {
		if checked[f.path] {
			continue
		}
		checked[f.path] = true
		if w := worldReadable(f.key, f.path); w != "" {
			warnings = append(warnings, w)
		}
	}
	for _, s := range []struct{ key, spec string }{
		{"[daemon] spool_drain_every", cfg.Daemon.SpoolDrainEvery},
		{"[dispatch] retry_every", cfg.Dispatch.RetryEvery},
	} {
		if _, err := cron.ParseStandard(s.spec); err != nil {
			errs = append(errs, fmt.Errorf("%s: bad schedule %q: %w (use cron syntax or @every 1m)", s.key, s.spec, err))
		}
	}
	// Channel secrets are read at every send, so one that cannot be read
	// now is a warning: the daemon starts, and fixing the file is enough.
	for _, ch := range cfg.Channels {
		if sc, ok := ch.Settings.(im.SecretChecker); ok {
			if err := sc.CheckSecrets(filepath.Dir(cfg.Path)); err != nil {
				warnings = append(warnings, fmt.Sprintf("channel %q: %v", ch.Name, err))
			}
		}
	}
	warnings = append(warnings, checkLLMFiles(cfg)...)
	warnings = append(warnings, cfg.deprecations...)
	return warnings, errors.Join(errs...)
}

// checkLLMFiles reads the llm agent's key and headers as a pass would.
// Both are read at every pass, so a failure is a warning: the daemon
// starts, and fixing the file or the environment is enough.
func checkLLMFiles(cfg *Config) []string {
	if cfg.Agent.Kind != agent.KindLLM {
		return nil
	}
	var out []string
	l := cfg.Agent.LLM
	if err := AgentKeyError(cfg); err != nil {
		out = append(out, err.Error())
	}
	if w := worldReadable("agent.llm.api_key_file", l.APIKeyFile); w != "" {
		out = append(out, w)
	}
	if _, err := l.ReadHeaders(); err != nil {
		out = append(out, err.Error())
	}
	return out
}

// AgentKeyError is why the llm agent's key cannot be read, located at its
// key in the file; nil when it can (or another agent runs). The daemon
// starts without it (fixing the file is enough), but every review fails
// until then, so config check calls it an error.
func AgentKeyError(cfg *Config) error {
	if cfg.Agent.Kind != agent.KindLLM {
		return nil
	}
	if _, err := cfg.Agent.LLM.ReadAPIKey(); err != nil {
		key := "agent.llm.api_key_file"
		if cfg.Agent.LLM.APIKeyEnv != "" {
			key = "agent.llm.api_key_env"
		}
		return cfg.located(key, err)
	}
	return nil
}

// checkListen accepts host:port with a numeric port in 0-65535 and a host
// that is empty, an IP address or a name that resolves.
func checkListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w (e.g. 127.0.0.1:8731)", addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q must be a number from 0 to 65535", addr, port)
	}
	if host != "" && net.ParseIP(host) == nil {
		// Preflight is a config check with no caller context (config check,
		// reload, startup); the resolver's own timeout bounds the lookup.
		if _, err := net.LookupHost(host); err != nil { //nolint:noctx // see above
			return fmt.Errorf("%q: host %q does not resolve: %w", addr, host, err)
		}
	}
	return nil
}

func worldReadable(key, path string) string {
	if path == "" {
		return ""
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o004 == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %s is readable by every user (mode %04o); run chmod 600 %s", key, path, fi.Mode().Perm(), path)
}
