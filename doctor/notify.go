package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// NotifyCheckOptions is what `aicr notify svn` was started with.
type NotifyCheckOptions struct {
	ConfigPath string
	RepoName   string
	ReposPath  string
	// Stderr is notify's stderr: in the hook, the log file it appends to,
	// or /dev/null when the hook could not open that log.
	Stderr io.Writer
}

// CheckNotify is notify's dry run: everything a real notification needs,
// checked as the account and in the environment notify runs with, and
// nothing sent. The config is read with the hook's own lenient loader
// (triggers.LoadHookConfig), so doctor judges the hook by what the hook
// reads: a key only the daemon uses cannot fail the hook's checks, and a
// value the hook ignores is reported as such.
func CheckNotify(ctx context.Context, o NotifyCheckOptions) []Check {
	me := currentAccount()
	var out []Check
	cfg, warnings, err := triggers.LoadHookConfig(o.ConfigPath)
	if err != nil {
		c := Check{Name: CheckConfig, Detail: oneLine(err.Error())}
		switch {
		case errors.Is(err, os.ErrPermission):
			c.Detail = fmt.Sprintf("config %s is not readable by %s: %s", o.ConfigPath, me.who(), oneLine(err.Error()))
			c.Fix = readableFix(o.ConfigPath, me)
		case errors.Is(err, os.ErrNotExist):
			c.Fix = "reinstall the hook with the config's real path: aicr install svn-hook --repo ... --config FILE"
		default:
			c.Detail += "; the hook spools every event until it is fixed"
			c.Fix = "aicr config check " + shellQuote(o.ConfigPath)
		}
		return append(out, c)
	}
	conf := Check{Name: CheckConfig, Status: StatusOK, Detail: fmt.Sprintf("%s loads as %s", cfg.Path, me.who())}
	if len(warnings) > 0 {
		conf.Status = StatusFail
		conf.Detail = fmt.Sprintf("%s loads as %s, but the hook ignores: %s", cfg.Path, me.who(), strings.Join(warnings, "; "))
		conf.Fix = "aicr config check " + shellQuote(cfg.Path)
	}
	out = append(out, conf)
	out = append(out, checkHookRepo(cfg, o))
	out = append(out, checkSecret(cfg, me))

	spool := Check{Name: CheckSpool}
	if err := triggers.ProbeSpool(cfg.SpoolDir); err != nil {
		spool.Detail = fmt.Sprintf("spool dir %s is not writable by %s: %s; events the daemon misses would be lost", cfg.SpoolDir, me.who(), oneLine(err.Error()))
		spool.Fix = fmt.Sprintf("chown -R %s:%s %s && chmod 0770 %s", me.user, me.group, shellQuote(cfg.SpoolDir), shellQuote(cfg.SpoolDir))
	} else {
		spool.Status, spool.Detail = StatusOK, fmt.Sprintf("spool dir %s is writable (created and deleted a probe file)", cfg.SpoolDir)
	}
	out = append(out, spool)

	out = append(out, checkLog(cfg.SpoolDir, o.Stderr, me))

	repoName := o.RepoName
	if r, ok := cfg.RepoForPath(o.ReposPath); ok && repoName == "" {
		repoName = r.Name
	}
	out = append(out, hookDaemon(ctx, cfg, repoName))
	settle(out)
	return out
}

// hookDaemon is the daemon as the hook meets it: a probe signed with the
// secret this account reads, which the daemon must accept and answer
// knowing the hook's repo. Without a readable secret (the secret check
// says why) it can only ask /healthz.
func hookDaemon(ctx context.Context, cfg *triggers.HookConfig, repoName string) Check {
	hd := Check{Name: CheckHookDaemon}
	unreachable := func(err error) Check {
		hd.Detail = fmt.Sprintf("the hook cannot reach the daemon at %s: %v; events would be spooled", redact(cfg.URL), err)
		hd.Fix = "start the daemon, or set [notify] url to where it listens"
		return hd
	}
	secret, err := cfg.Secret()
	if err != nil {
		if err := probeHealth(ctx, cfg.URL, cfg.Timeout); err != nil {
			return unreachable(err)
		}
		hd.Status, hd.Detail = StatusOK, fmt.Sprintf("the hook reaches the daemon at %s", redact(cfg.URL))
		return hd
	}
	ans, err := triggers.SendProbe(ctx, cfg.URL, secret, cfg.Timeout, time.Now())
	var pe *triggers.ProbeError
	switch {
	case errors.As(err, &pe) && pe.Status == http.StatusNotFound:
		hd.Status, hd.Detail = StatusOK, fmt.Sprintf("the hook reaches the daemon at %s (an older aicr without the probe)", redact(cfg.URL))
		return hd
	case errors.As(err, &pe):
		hd.Detail = fmt.Sprintf("the daemon at %s refuses what the hook signs with %s (%s): events are refused and spooled, never reviewed", redact(cfg.URL), secretSource(cfg), err)
		hd.Fix = fmt.Sprintf("make %s hold the daemon's secret (the probe check of aicr doctor says which file differs)", secretSource(cfg))
		return hd
	case err != nil:
		return unreachable(err)
	case repoName != "" && !ans.Knows(repoName):
		hd.Detail = fmt.Sprintf("the daemon at %s accepts the hook's signature but does not know repo %q: the hook's events are refused (unknown_repo) and stay spooled", redact(cfg.URL), repoName)
		hd.Fix = reloadFix
		return hd
	}
	hd.Status, hd.Detail = StatusOK, fmt.Sprintf("the daemon at %s accepts the hook's signature and knows repo %q", redact(cfg.URL), repoName)
	return hd
}

// checkHookRepo finds the hook's repository the way notify does: by the
// name the hook passes, whose local_path must be this repository, or by
// local_path.
func checkHookRepo(cfg *triggers.HookConfig, o NotifyCheckOptions) Check {
	c := Check{Name: CheckRepo}
	if o.RepoName == "" {
		if r, ok := cfg.RepoForPath(o.ReposPath); ok {
			c.Status, c.Detail = StatusOK, fmt.Sprintf("[[repo]] %q has local_path %s", r.Name, o.ReposPath)
		} else {
			c.Detail = fmt.Sprintf("no [[repo]] has local_path = %q; the hook refuses its events", o.ReposPath)
			c.Fix = "set local_path in the repository's [[repo]], or reinstall the hook with --name"
		}
		return c
	}
	r, ok := cfg.Repo(o.RepoName)
	switch {
	case !ok:
		c.Detail = fmt.Sprintf("the hook names repo %q, which %s does not define", o.RepoName, cfg.Path)
		c.Fix = "add the [[repo]] or reinstall the hook: aicr install svn-hook --repo " + shellQuote(o.ReposPath) + " --config " + shellQuote(cfg.Path)
	case r.Kind != string(vcs.KindSVN):
		c.Detail = fmt.Sprintf("repo %q is kind %s, not svn", o.RepoName, r.Kind)
		c.Fix = "reinstall the hook with --name of the svn [[repo]]"
	case r.LocalPath != "" && !triggers.SameRepoPath(r.LocalPath, o.ReposPath):
		c.Detail = fmt.Sprintf("the hook names repo %q, whose local_path is %s, not %s; the hook refuses its events", o.RepoName, r.LocalPath, o.ReposPath)
		c.Fix = "reinstall the hook with the right --name: aicr install svn-hook --repo " + shellQuote(o.ReposPath)
	default:
		c.Status, c.Detail = StatusOK, fmt.Sprintf("[[repo]] %q", o.RepoName)
	}
	return c
}

func checkSecret(cfg *triggers.HookConfig, me account) Check {
	c := Check{Name: CheckSecret}
	if cfg.SecretFile == "" && cfg.SecretEnv != "" {
		if _, err := cfg.Secret(); err == nil {
			c.Status, c.Detail = StatusOK, fmt.Sprintf("secret from $%s", cfg.SecretEnv)
			return c
		}
		c.Detail = fmt.Sprintf("[notify] reads the secret from $%s, but svn runs hooks with an empty environment", cfg.SecretEnv)
		c.Fix = "set [notify] secret_file to a file holding the daemon's secret, readable by " + me.who()
		return c
	}
	_, err := cfg.Secret()
	switch {
	case err == nil:
		c.Status, c.Detail = StatusOK, fmt.Sprintf("secret file %s is readable by %s", cfg.SecretFile, me.who())
	case cfg.SecretFile == "":
		c.Detail = "no signing secret configured; the daemon would refuse every event"
		c.Fix = "set [notify] secret_file (or [daemon] secret_file) to the daemon's secret"
	case errors.Is(err, os.ErrPermission):
		c.Detail = fmt.Sprintf("secret file %s is not readable by %s, so events are spooled, never delivered", cfg.SecretFile, me.who())
		c.Fix = readableFix(cfg.SecretFile, me)
	case errors.Is(err, os.ErrNotExist):
		c.Detail = fmt.Sprintf("secret file %s does not exist, so events are spooled, never delivered", cfg.SecretFile)
		c.Fix = fmt.Sprintf("copy the daemon's secret there: install -m 0640 -g %s SECRET %s", me.group, shellQuote(cfg.SecretFile))
	default:
		c.Detail = oneLine(err.Error())
		c.Fix = "write the daemon's secret into " + cfg.SecretFile
	}
	return c
}

// checkLog checks where notify's errors go. In the hook, stderr is the
// log file when the hook could append to it and /dev/null otherwise.
func checkLog(spoolDir string, stderr io.Writer, me account) Check {
	c := Check{Name: CheckLog}
	logFile := filepath.Join(spoolDir, "notify.log")
	if f, ok := stderr.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			c.Status, c.Detail = StatusOK, fmt.Sprintf("hook errors are appended to %s", fdPath(f))
			return c
		} else if null, err2 := os.Stat(os.DevNull); err == nil && err2 == nil && os.SameFile(st, null) {
			c.Detail = fmt.Sprintf("the hook could not append to its log (%s), so its errors go to %s", logFile, os.DevNull)
			c.Fix = fmt.Sprintf("chown %s:%s %s", me.user, me.group, shellQuote(logFile))
			return c
		}
	}
	// Opened for appending and closed, never created or written: the
	// dry run leaves notify.log as real commits left it.
	f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		c.Status, c.Detail = StatusOK, fmt.Sprintf("log %s does not exist yet; the hook creates it in the spool dir", logFile)
		return c
	}
	if err != nil {
		c.Detail = fmt.Sprintf("log %s is not appendable by %s: %s; hook errors would be lost", logFile, me.who(), oneLine(err.Error()))
		c.Fix = fmt.Sprintf("chown %s:%s %s", me.user, me.group, shellQuote(logFile))
		return c
	}
	f.Close()
	c.Status, c.Detail = StatusOK, fmt.Sprintf("log %s is appendable", logFile)
	return c
}

// fdPath names the file behind f: its /proc link on Linux, else its name.
func fdPath(f *os.File) string {
	if p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd())); err == nil {
		return p
	}
	return f.Name()
}

// readableFix gives the hook's account read access the additive way
// (grantReadFix): the file may be the daemon's too, so no chgrp.
func readableFix(path string, me account) string { return grantReadFix(path, me) }
