package doctor

// The daemon as the hook meets it: a probe signed with the hook's secret
// (triggers.SendProbe), which answers only when the daemon accepts that
// secret, and says what the daemon runs.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// Check names of the probe.
const (
	CheckProbe        = "probe"         // the daemon accepts what the hook signs
	CheckDaemonRepos  = "daemon-repos"  // the running daemon knows every [[repo]]
	CheckDaemonConfig = "daemon-config" // the running daemon runs the config on disk
)

// reloadFix is how an operator makes a running daemon re-read its config.
const reloadFix = "reload the daemon so it reads the config on disk: systemctl reload aicr (or aicr reload, or kill -HUP the daemon's pid)"

// probeDaemon is the daemon as doctor's config sees it: reachable
// (CheckDaemon), accepting the hook's secret (CheckProbe), knowing every
// repo and running the config on disk. remoteHost is set when the daemon
// is on another host.
func probeDaemon(ctx context.Context, cfg *config.Config, only, version string) ([]Check, string) {
	reach := Check{Name: CheckDaemon}
	hook, _, herr := triggers.LoadHookConfig(cfg.Path)
	base, timeout := cfg.Notify.URL, cfg.Notify.Timeout
	if herr == nil {
		base, timeout = hook.URL, hook.Timeout
	}
	u := strings.TrimSuffix(redact(base), "/")
	remote := ""
	if h := hostOf(base); h != "" && !isLocalHost(ctx, h) {
		remote = h
	}
	down := func(err error) ([]Check, string) {
		reach.Detail = fmt.Sprintf("no answer from %s: %v", u, err)
		if remote != "" {
			reach.Fix = fmt.Sprintf("the daemon runs on %s: check it is running there and that this host can reach it ([daemon] listen is loopback-only by default)", remote)
		} else {
			reach.Fix = "start the daemon: aicr daemon --config " + shellQuote(cfg.Path) + " (as its service user), or set [notify] url to where it listens"
		}
		return []Check{reach}, remote
	}

	var secret []byte
	var serr error = errors.New("the hook's config does not load")
	if herr == nil {
		secret, serr = hook.Secret()
	}
	if serr != nil {
		// Unsigned, the probe proves only that something listens; the
		// secret check says why the hook has no secret.
		if err := probeHealth(ctx, base, timeout); err != nil {
			return down(err)
		}
		reach.Status, reach.Detail = StatusOK, fmt.Sprintf("%s/healthz answers", u)
		return []Check{reach, {Name: CheckProbe, Status: StatusWarn,
			Detail: fmt.Sprintf("cannot sign a probe with the hook's secret (%s), so whether the daemon accepts it is unknown", oneLine(serr.Error())),
			Fix:    "fix the hook's secret (see the secret check), then run aicr doctor again"}}, remote
	}

	ans, err := triggers.SendProbe(ctx, base, secret, timeout, time.Now())
	var pe *triggers.ProbeError
	switch {
	case errors.As(err, &pe) && pe.Status == http.StatusNotFound:
		if err := probeHealth(ctx, base, timeout); err != nil {
			return down(err)
		}
		reach.Status, reach.Detail = StatusOK, fmt.Sprintf("%s/healthz answers", u)
		return []Check{reach, {Name: CheckProbe, Status: StatusWarn,
			Detail: fmt.Sprintf("the daemon at %s has no %s (an aicr older than this doctor), so its secret, repos and config cannot be checked", u, triggers.ProbePath),
			Fix:    "install this aicr on the daemon's host and restart the daemon"}}, remote
	case errors.As(err, &pe):
		reach.Status, reach.Detail = StatusOK, fmt.Sprintf("%s answers", u)
		probe := Check{Name: CheckProbe, Status: StatusFail,
			Detail: fmt.Sprintf("the daemon at %s refuses what the hook signs (%s): every event would be refused and spooled, never reviewed", u, err)}
		probe.Fix = refusedProbeFix(cfg, hook, secret, pe, remote)
		return []Check{reach, probe}, remote
	case err != nil:
		return down(err)
	}

	reach.Status = StatusOK
	reach.Detail = fmt.Sprintf("%s answers: aicr %s on %s", u, ans.Version, ans.Host)
	if remote != "" {
		reach.Detail += "; the daemon runs on another host: run aicr doctor there for its side"
	}
	if version != "" && ans.Version != "" && ans.Version != version {
		reach.Status = StatusWarn
		reach.Detail += fmt.Sprintf("; this aicr is %s", version)
		reach.Fix = "restart the daemon so it runs the installed binary: systemctl restart aicr"
	}
	out := []Check{reach, {Name: CheckProbe, Status: StatusOK,
		Detail: fmt.Sprintf("the daemon accepts what the hook signs (a probe signed with %s was answered)", secretSource(hook))}}
	out = append(out, daemonRepos(cfg, ans, only, remote))
	return append(out, daemonConfig(cfg, ans, remote)), remote
}

// refusedProbeFix is the cure for a refused probe, from what doctor can
// see of both secrets. It only ever changes what the daemon reads or
// copies a value into the hook's file in place (keeping its owner and
// mode), so the hook's account keeps the access it has.
func refusedProbeFix(cfg *config.Config, hook *triggers.HookConfig, hookSecret []byte, pe *triggers.ProbeError, remote string) string {
	switch pe.Code {
	case "stale_timestamp", "bad_timestamp":
		return "synchronise the clocks of this host and the daemon's host (NTP: timedatectl set-ntp true)"
	case "bad_signature", "missing_signature":
	default:
		return "see the daemon's log for the refusal: " + pe.Message
	}
	if remote != "" {
		return fmt.Sprintf("the hook's secret (%s) must hold the same value as the daemon's secret on %s: copy the daemon's value into it in place (cat DAEMON_SECRET > %s keeps its owner and mode)",
			secretSource(hook), remote, shellQuote(hook.SecretFile))
	}
	daemonSecret, err := cfg.DaemonSecret()
	switch {
	case err != nil:
		return fmt.Sprintf("make the hook's secret (%s) and the daemon's ([daemon] %s) hold the same value; doctor cannot read the daemon's: %s",
			secretSource(hook), daemonSecretSource(cfg), oneLine(err.Error()))
	case !bytes.Equal(bytes.TrimSpace(daemonSecret), bytes.TrimSpace(hookSecret)):
		if hook.SecretFile != "" && cfg.Daemon.SecretFile != "" && !sameFile(hook.SecretFile, cfg.Daemon.SecretFile) {
			return fmt.Sprintf("the hook signs with %s and the daemon checks with %s, which differ: copy the daemon's value into the hook's file in place, keeping its owner and mode (cat %s > %s), or remove [notify] secret_file so the hook uses [daemon] secret_file",
				hook.SecretFile, cfg.Daemon.SecretFile, shellQuote(cfg.Daemon.SecretFile), shellQuote(hook.SecretFile))
		}
		return fmt.Sprintf("the hook's secret (%s) and the daemon's (%s) differ: make them the same value", secretSource(hook), daemonSecretSource(cfg))
	default:
		// The files agree now, so the daemon still holds the value it
		// read when it started.
		return "the secret on disk is the same for both, so the daemon still runs with the one it read at start (the secret was changed since): restart the daemon: systemctl restart aicr"
	}
}

// daemonRepos checks that the running daemon accepts events for every
// [[repo]] of doctor's config (or the one asked for).
func daemonRepos(cfg *config.Config, ans triggers.ProbeAnswer, only, remote string) Check {
	c := Check{Name: CheckDaemonRepos}
	var missing, known []string
	for _, r := range cfg.Repos {
		if only != "" && r.Name != only {
			continue
		}
		if ans.Knows(r.Name) {
			known = append(known, r.Name)
		} else {
			missing = append(missing, r.Name)
		}
	}
	if len(missing) == 0 {
		c.Status, c.Detail = StatusOK, fmt.Sprintf("the running daemon knows %s", strings.Join(known, ", "))
		return c
	}
	c.Detail = fmt.Sprintf("the running daemon does not know %s: their events are refused (422 unknown_repo) and stay spooled until it does", quoteList(missing))
	if sameConfig(cfg, ans, remote) {
		c.Fix = reloadFix
	} else {
		c.Fix = fmt.Sprintf("add the [[repo]] to the config the daemon runs (%s on %s), then reload the daemon: systemctl reload aicr", ans.ConfigPath, ans.Host)
	}
	return c
}

// daemonConfig compares the digest of the config the daemon loaded with
// the file on disk, when they are the same file.
func daemonConfig(cfg *config.Config, ans triggers.ProbeAnswer, remote string) Check {
	c := Check{Name: CheckDaemonConfig}
	if !sameConfig(cfg, ans, remote) {
		c.Status = StatusWarn
		c.Detail = fmt.Sprintf("the daemon runs %s on %s, not %s, the config doctor was given; run aicr doctor --config %s there to compare it",
			ans.ConfigPath, ans.Host, cfg.Path, shellQuote(ans.ConfigPath))
		return c
	}
	data, err := os.ReadFile(cfg.Path)
	if err != nil {
		c.Status, c.Detail = StatusWarn, fmt.Sprintf("read %s: %v", cfg.Path, err)
		return c
	}
	if onDisk := config.Digest(data); onDisk != ans.ConfigDigest {
		c.Detail = fmt.Sprintf("%s changed since the daemon loaded it (it runs %s, the file is %s): the change is not in effect", cfg.Path, short(ans.ConfigDigest), short(onDisk))
		c.Fix = reloadFix
		return c
	}
	c.Status, c.Detail = StatusOK, fmt.Sprintf("the daemon runs %s as it is on disk (%s)", cfg.Path, short(ans.ConfigDigest))
	return c
}

// sameConfig reports whether the daemon loaded the very file doctor reads.
func sameConfig(cfg *config.Config, ans triggers.ProbeAnswer, remote string) bool {
	if remote != "" {
		return false
	}
	if h, err := os.Hostname(); err == nil && ans.Host != "" && !strings.EqualFold(h, ans.Host) {
		return false
	}
	return sameFile(cfg.Path, ans.ConfigPath)
}

func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

func secretSource(h *triggers.HookConfig) string {
	if h.SecretFile != "" {
		return h.SecretFile
	}
	return "$" + h.SecretEnv
}

func daemonSecretSource(cfg *config.Config) string {
	if cfg.Daemon.SecretFile != "" {
		return cfg.Daemon.SecretFile
	}
	return "$" + cfg.Daemon.SecretEnv
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("repo %q", n)
	}
	return strings.Join(q, ", ")
}

// short abbreviates a digest for people; the JSON keeps the detail.
func short(digest string) string {
	if len(digest) > len("sha256:")+12 {
		return digest[:len("sha256:")+12]
	}
	return digest
}
