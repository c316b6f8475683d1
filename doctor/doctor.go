// Package doctor checks an installation the way it will really run: it
// executes each SVN repository's post-commit hook with an empty
// environment, as the account svn runs hooks as, with `aicr notify` in dry
// run, and reports every step that would fail together with its fix.
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/vcs/svn"
)

// Check names, stable for --format json.
const (
	CheckHook        = "hook"        // the hook file and the paths in its aicr block
	CheckHookRun     = "hook-run"    // the hook run as svn would, and notify answering
	CheckConfig      = "config"      // config readable and valid as the hook's account
	CheckRepo        = "repo"        // the hook's repository found in that config
	CheckSecret      = "secret"      // signing secret readable as the hook's account
	CheckSpool       = "spool"       // spool dir writable as the hook's account
	CheckLog         = "log"         // notify.log appendable as the hook's account
	CheckHookDaemon  = "hook-daemon" // the daemon answering the hook's account
	CheckDaemon      = "daemon"      // the daemon answering doctor
	CheckSvn         = "svn"         // svn client present
	CheckSvnlook     = "svnlook"     // svnlook present
	CheckP4          = "p4"          // p4 client present and new enough
	CheckRepoSkipped = "local-path"  // repo not on this host
	CheckAccess      = "access"      // notify's dry run could not be started at all
)

const (
	// defaultResultWait is added to twice [notify] timeout (the dry run's
	// health probe) to bound the wait for the detached notifier.
	defaultResultWait = 5 * time.Second
	// hookTimeout bounds the hook's own run; a hook that detaches returns
	// at once, one that does not is reported instead of hanging doctor.
	hookTimeout = 10 * time.Second
)

// Check is one finding. Fix says what to run or change when OK is false.
type Check struct {
	Repo    string `json:"repo,omitempty"`
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"`
}

// Report is every check of one doctor run; OK when none failed.
type Report struct {
	Config string  `json:"config"`
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// Options says what to check.
type Options struct {
	Config *daemon.Config
	// Repo limits the repository checks to this [[repo]] name.
	Repo string
	// Exe is the aicr binary doctor runs `notify svn` with directly, as
	// the hook's account, when the hook cannot be run or never reports;
	// the account's checks (config, secret, spool, log) then still happen.
	Exe string
	// ResultWait bounds the wait for the detached notifier's findings
	// after the hook returned. Default: twice [notify] timeout plus 5s.
	ResultWait time.Duration
}

// ErrUnknownRepo is returned when Options.Repo names no [[repo]].
var ErrUnknownRepo = errors.New("no such [[repo]]")

// Run checks every SVN repository with a local_path on this host (or the
// one named), the daemon and the VCS clients.
func Run(ctx context.Context, opts Options) (Report, error) {
	cfg := opts.Config
	if opts.Repo != "" {
		if _, ok := cfg.Repo(opts.Repo); !ok {
			return Report{}, fmt.Errorf("--repo %q: %w in %s", opts.Repo, ErrUnknownRepo, cfg.Path)
		}
	}
	rep := Report{Config: cfg.Path}
	for _, r := range cfg.Repos {
		if (opts.Repo != "" && r.Name != opts.Repo) || r.Kind != vcs.KindSVN {
			continue
		}
		local := ""
		if lp, ok := r.Settings.(vcs.LocalPather); ok {
			local = lp.LocalRepoPath()
		}
		switch {
		case local == "":
			rep.Checks = append(rep.Checks, Check{Repo: r.Name, Name: CheckRepoSkipped, OK: true, Skipped: true,
				Detail: "no local_path: the hook of this repository is not on a host doctor knows; run aicr doctor on the SVN server with local_path set"})
			continue
		case !isDir(local):
			rep.Checks = append(rep.Checks, Check{Repo: r.Name, Name: CheckRepoSkipped, OK: true, Skipped: true,
				Detail: fmt.Sprintf("local_path %s is not on this host; run aicr doctor on the SVN server", local)})
			continue
		}
		rep.Checks = append(rep.Checks, checkSVNRepo(ctx, opts, r.Name, local)...)
	}
	daemonCheck, remoteHost := checkDaemon(ctx, cfg)
	rep.Checks = append(rep.Checks, daemonCheck)
	rep.Checks = append(rep.Checks, checkTools(ctx, cfg, opts.Repo, remoteHost)...)
	rep.OK = true
	for _, c := range rep.Checks {
		if !c.OK && !c.Skipped {
			rep.OK = false
		}
	}
	return rep, nil
}

// checkSVNRepo inspects the hook, runs it as svn would and collects the
// notifier's own findings, made as the hook's account.
func checkSVNRepo(ctx context.Context, opts Options, name, repos string) []Check {
	owner := ownerOf(repos)
	hook, info, hookPath, runnable := inspectHook(opts.Config, name, repos, owner)
	out := []Check{hook}

	configPath, repoName := opts.Config.Path, name
	if info.ConfigPath != "" {
		configPath = info.ConfigPath
	}
	if info.RepoName != "" {
		repoName = info.RepoName
	}
	var found []Check
	got := false
	if runnable {
		var run Check
		run, found, got = runHook(ctx, opts, repos, hookPath, info, owner)
		out = append(out, run)
	}
	if !got {
		// Without the hook's answer, still check what the hook's account
		// can read and write, by running notify's dry run directly.
		var err error
		found, err = runNotifyDirect(ctx, opts, configPath, repoName, repos, owner)
		if err != nil {
			out = append(out, Check{Name: CheckAccess, OK: false,
				Detail: fmt.Sprintf("could not run %s notify svn as %s to check its access: %v", opts.Exe, owner.who(), err),
				Fix:    "run aicr doctor with the aicr binary the hook uses, as root"})
		}
	}
	out = append(out, found...)
	for i := range out {
		out[i].Repo = name
	}
	return out
}

// inspectHook checks the hook file without running it. runnable means it
// is a POSIX hook with an aicr block that svn can execute.
func inspectHook(cfg *daemon.Config, name, repos string, owner account) (c Check, info triggers.SVNHookInfo, path string, runnable bool) {
	c = Check{Name: CheckHook}
	reinstall := fmt.Sprintf("aicr install svn-hook --repo %s --config %s", shellQuote(repos), shellQuote(cfg.Path))
	path = triggers.SVNHookPath(repos, false)
	windows := false
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		if cmdPath := triggers.SVNHookPath(repos, true); isFile(cmdPath) {
			path, windows = cmdPath, true
			st, err = os.Stat(path)
		}
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		c.Detail = fmt.Sprintf("%s does not exist, so commits are not reviewed until the reconciler finds them", path)
		c.Fix = reinstall
		return c, info, path, false
	case err != nil:
		c.Detail = fmt.Sprintf("%s: %v", path, err)
		c.Fix = reinstall
		return c, info, path, false
	}
	script, err := os.ReadFile(path)
	if err != nil {
		c.Detail = fmt.Sprintf("read %s: %v", path, err)
		return c, info, path, false
	}
	info, err = triggers.InspectSVNHook(script, windows)
	switch {
	case err != nil:
		c.Detail = fmt.Sprintf("%s: %v", path, err)
		c.Fix = "fix the aicr block by hand or remove it, then " + reinstall
		return c, info, path, false
	case !info.HasBlock:
		c.Detail = fmt.Sprintf("%s has no aicr block (%s ... %s)", path, triggers.SVNHookBegin, triggers.SVNHookEnd)
		c.Fix = reinstall
		return c, info, path, false
	}
	if !windows && !owner.can(st, permExec|permRead) {
		c.Detail = fmt.Sprintf("%s is not readable and executable by %s, so svn cannot run it", path, owner.who())
		c.Fix = fmt.Sprintf("chmod 0755 %s", shellQuote(path))
		return c, info, path, false
	}
	if ast, err := os.Stat(info.AicrPath); err != nil || !ast.Mode().IsRegular() {
		c.Detail = fmt.Sprintf("the hook runs %s, which does not exist", info.AicrPath)
		c.Fix = fmt.Sprintf("install the binary there, or point the hook at it: %s --aicr /usr/local/bin/aicr", reinstall)
		return c, info, path, false
	} else if !windows && !owner.can(ast, permExec) {
		c.Detail = fmt.Sprintf("the hook runs %s, which %s cannot execute", info.AicrPath, owner.who())
		c.Fix = fmt.Sprintf("chmod 0755 %s", shellQuote(info.AicrPath))
		return c, info, path, false
	}
	if !isFile(info.ConfigPath) {
		c.Detail = fmt.Sprintf("the hook reads config %s, which does not exist", info.ConfigPath)
		c.Fix = reinstall
		return c, info, path, false
	}
	c.OK = true
	c.Detail = fmt.Sprintf("%s runs %s notify svn --config %s --repo %s", path, info.AicrPath, info.ConfigPath, info.RepoName)
	if filepath.Clean(info.ConfigPath) != filepath.Clean(cfg.Path) {
		c.Detail += fmt.Sprintf(" (not %s, the config doctor was given; the checks below use the hook's)", cfg.Path)
	} else if info.RepoName != name {
		c.OK = false
		c.Detail = fmt.Sprintf("%s notifies as repo %q, but %s names this repository %q", path, info.RepoName, cfg.Path, name)
		c.Fix = reinstall
		return c, info, path, false
	}
	if windows || runtime.GOOS == "windows" {
		// Windows servers run hooks as a service account doctor cannot
		// switch to; what could be checked without running it was.
		c.Detail += "; doctor does not run hooks on Windows"
		return c, info, path, false
	}
	return c, info, path, true
}

// runHook executes the hook the way svn does and waits for the detached
// notifier's findings. got is false when none arrived.
func runHook(ctx context.Context, opts Options, repos, hookPath string, info triggers.SVNHookInfo, owner account) (c Check, found []Check, got bool) {
	c = Check{Name: CheckHookRun}
	dir, err := resultDir(owner)
	if err != nil {
		c.Detail = fmt.Sprintf("prepare a result directory for the hook: %v", err)
		return c, nil, false
	}
	defer os.RemoveAll(dir)
	result := filepath.Join(dir, "result.json")

	hctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	// Revision 0 is harmless to any aicr: one that knows the dry run
	// ignores it, an older one refuses it ("not a positive integer")
	// before sending, so doctor never creates a review.
	args := []string{repos, "0", ""}
	var cmd *exec.Cmd
	ran := hookPath
	if info.OtherCommands {
		// Only the aicr block runs, in the same shell, so the admin's
		// other post-commit actions do not fire for a fake revision.
		script := filepath.Join(dir, "post-commit-aicr-block")
		if err := os.WriteFile(script, []byte("#!/bin/sh\n"+info.Block+"exit 0\n"), 0o755); err != nil {
			c.Detail = fmt.Sprintf("write the aicr block to run: %v", err)
			return c, nil, false
		}
		if err := owner.chown(script); err != nil {
			c.Detail = fmt.Sprintf("chown the aicr block to run: %v", err)
			return c, nil, false
		}
		cmd = exec.CommandContext(hctx, "/bin/sh", append([]string{script}, args...)...)
		ran = "the aicr block of " + hookPath
	} else {
		cmd = exec.CommandContext(hctx, hookPath, args...)
	}
	// svn's empty environment plus the one variable that makes notify a
	// dry run; anything else the hook needs it must set itself.
	cmd.Env = []string{triggers.NotifyCheckEnv + "=" + result}
	cmd.Dir = "/"
	// svn waits for the hook's stdout and stderr to close; so does Wait.
	// A hook that keeps them open past WaitDelay would hold up commits.
	cmd.WaitDelay = 2 * time.Second
	asNote := owner.runAs(cmd)
	// Only what this run appends to the log explains this run.
	var logStart int64
	if st, err := os.Stat(info.LogFile); err == nil {
		logStart = st.Size()
	}
	outBytes, err := cmd.CombinedOutput()
	output := oneLine(string(outBytes))
	switch {
	case errors.Is(err, exec.ErrWaitDelay) || hctx.Err() != nil:
		c.Detail = fmt.Sprintf("%s did not finish or kept its output open: every commit would wait for it", ran)
		c.Fix = "reinstall the hook so aicr runs detached: aicr install svn-hook --repo " + shellQuote(repos) + " --config ..."
		return c, nil, false
	case err != nil:
		c.Detail = fmt.Sprintf("%s failed with an empty environment as %s: %v", ran, owner.who(), err)
		if output != "" {
			c.Detail += ": " + output
		}
		c.Fix = fmt.Sprintf("run it by hand the same way and fix what it prints: env -i %s %s 0", shellQuote(hookPath), shellQuote(repos))
		return c, nil, false
	}
	wait := opts.ResultWait
	if wait <= 0 {
		wait = 2*opts.Config.Notify.Timeout + defaultResultWait
	}
	found, err = waitResult(ctx, result, wait)
	if err != nil {
		c.Detail = fmt.Sprintf("%s ran with an empty environment as %s, but %s notify did not report within %s: %v", ran, owner.who(), info.AicrPath, wait, err)
		if added := logSince(info.LogFile, logStart); added != "" {
			c.Detail += "; it logged: " + added
		}
		c.Fix = fmt.Sprintf("check that %s is an aicr with doctor support (aicr version), then run what the hook runs as %s: env -i %s=/tmp/aicr-check.json %s notify svn --config %s --repo %s %s 0; cat /tmp/aicr-check.json",
			info.AicrPath, owner.who(), triggers.NotifyCheckEnv, shellQuote(info.AicrPath), shellQuote(info.ConfigPath), shellQuote(info.RepoName), shellQuote(repos))
		return c, nil, false
	}
	c.OK = true
	c.Detail = fmt.Sprintf("%s ran with an empty environment as %s and aicr notify reported back (dry run, nothing sent)", ran, owner.who())
	if asNote != "" {
		c.Detail += "; " + asNote
	}
	return c, found, true
}

// runNotifyDirect runs the notifier's dry run without the hook, as the
// hook's account and with an otherwise empty environment.
func runNotifyDirect(ctx context.Context, opts Options, configPath, repoName, repos string, owner account) ([]Check, error) {
	if opts.Exe == "" {
		return nil, errors.New("no aicr binary to run")
	}
	dir, err := resultDir(owner)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	result := filepath.Join(dir, "result.json")
	cctx, cancel := context.WithTimeout(ctx, hookTimeout+2*opts.Config.Notify.Timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, opts.Exe, "notify", "svn", "--config", configPath, "--repo", repoName, repos, "0")
	cmd.Env = []string{triggers.NotifyCheckEnv + "=" + result}
	cmd.Dir = "/"
	owner.runAs(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, oneLine(string(out)))
	}
	found, err := readResult(result)
	if err != nil {
		return nil, fmt.Errorf("%v (output: %s)", err, oneLine(string(out)))
	}
	for i := range found {
		found[i].Detail += " (aicr notify run directly, without the hook)"
	}
	return found, nil
}

// waitResult polls for the result file, which notify renames into place
// whole, until it appears or wait runs out.
func waitResult(ctx context.Context, path string, wait time.Duration) ([]Check, error) {
	deadline := time.Now().Add(wait)
	for {
		found, err := readResult(path)
		if err == nil {
			return found, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, errors.New("no result file")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type resultFile struct {
	Checks []Check `json:"checks"`
}

func readResult(path string) ([]Check, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r resultFile
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return r.Checks, nil
}

// WriteResult stores the dry run's findings for doctor: a temp file
// renamed into place, so doctor, polling, never reads half of it.
func WriteResult(path string, checks []Check) error {
	b, err := json.Marshal(resultFile{Checks: checks})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".result-*")
	if err != nil {
		return fmt.Errorf("create result: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write result: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// resultDir is a private directory the hook's account can write into.
func resultDir(owner account) (string, error) {
	dir, err := os.MkdirTemp("", "aicr-doctor-")
	if err != nil {
		return "", err
	}
	if err := owner.chown(dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

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
// nothing sent.
func CheckNotify(ctx context.Context, o NotifyCheckOptions) []Check {
	me := currentAccount()
	var out []Check
	cfg, err := daemon.LoadConfig(o.ConfigPath)
	if err != nil {
		c := Check{Name: CheckConfig, Detail: oneLine(err.Error())}
		switch {
		case errors.Is(err, os.ErrPermission):
			c.Detail = fmt.Sprintf("config %s is not readable by %s: %s", o.ConfigPath, me.who(), oneLine(err.Error()))
			c.Fix = readableFix(o.ConfigPath, me)
		case errors.Is(err, daemon.ErrConfigNotFound):
			c.Fix = "reinstall the hook with the config's real path: aicr install svn-hook --repo ... --config FILE"
		default:
			c.Fix = "aicr config check " + shellQuote(o.ConfigPath)
		}
		return append(out, c)
	}
	out = append(out, Check{Name: CheckConfig, OK: true, Detail: fmt.Sprintf("%s loads as %s", cfg.Path, me.who())})

	repo := Check{Name: CheckRepo}
	if o.RepoName != "" {
		if r, ok := cfg.Repo(o.RepoName); !ok {
			repo.Detail = fmt.Sprintf("the hook names repo %q, which %s does not define", o.RepoName, cfg.Path)
			repo.Fix = "add the [[repo]] or reinstall the hook: aicr install svn-hook --repo " + shellQuote(o.ReposPath) + " --config " + shellQuote(cfg.Path)
		} else if r.Kind != vcs.KindSVN {
			repo.Detail = fmt.Sprintf("repo %q is kind %s, not svn", o.RepoName, r.Kind)
			repo.Fix = "reinstall the hook with --name of the svn [[repo]]"
		} else {
			repo.OK, repo.Detail = true, fmt.Sprintf("[[repo]] %q", o.RepoName)
		}
	} else if r, ok := cfg.RepoForPath(o.ReposPath); ok {
		repo.OK, repo.Detail = true, fmt.Sprintf("[[repo]] %q has local_path %s", r.Name, o.ReposPath)
	} else {
		repo.Detail = fmt.Sprintf("no [[repo]] has local_path = %q", o.ReposPath)
		repo.Fix = "set local_path in the repository's [[repo]], or reinstall the hook with --name"
	}
	out = append(out, repo)

	out = append(out, checkSecret(cfg, me))

	spool := Check{Name: CheckSpool}
	if err := triggers.ProbeSpool(cfg.Notify.SpoolDir); err != nil {
		spool.Detail = fmt.Sprintf("spool dir %s is not writable by %s: %s; events the daemon misses would be lost", cfg.Notify.SpoolDir, me.who(), oneLine(err.Error()))
		spool.Fix = fmt.Sprintf("chown -R %s:%s %s && chmod 0770 %s", me.user, me.group, shellQuote(cfg.Notify.SpoolDir), shellQuote(cfg.Notify.SpoolDir))
	} else {
		spool.OK, spool.Detail = true, fmt.Sprintf("spool dir %s is writable (created and deleted a probe file)", cfg.Notify.SpoolDir)
	}
	out = append(out, spool)

	out = append(out, checkLog(cfg.Notify.SpoolDir, o.Stderr, me))

	hd := Check{Name: CheckHookDaemon}
	if err := probeHealth(ctx, cfg.Notify.URL, cfg.Notify.Timeout); err != nil {
		hd.Detail = fmt.Sprintf("the hook cannot reach the daemon at %s: %v; events would be spooled", redact(cfg.Notify.URL), err)
		hd.Fix = "start the daemon, or set [notify] url to where it listens"
	} else {
		hd.OK, hd.Detail = true, fmt.Sprintf("the hook reaches the daemon at %s", redact(cfg.Notify.URL))
	}
	return append(out, hd)
}

func checkSecret(cfg *daemon.Config, me account) Check {
	c := Check{Name: CheckSecret}
	n := cfg.Notify
	if n.SecretFile == "" && n.SecretEnv != "" {
		if _, err := cfg.NotifySecret(); err == nil {
			c.OK, c.Detail = true, fmt.Sprintf("secret from $%s", n.SecretEnv)
			return c
		}
		c.Detail = fmt.Sprintf("[notify] reads the secret from $%s, but svn runs hooks with an empty environment", n.SecretEnv)
		c.Fix = "set [notify] secret_file to a file holding the daemon's secret, readable by " + me.who()
		return c
	}
	_, err := cfg.NotifySecret()
	switch {
	case err == nil:
		c.OK, c.Detail = true, fmt.Sprintf("secret file %s is readable by %s", n.SecretFile, me.who())
	case n.SecretFile == "":
		c.Detail = "no signing secret configured; the daemon would refuse every event"
		c.Fix = "set [notify] secret_file (or [daemon] secret_file) to the daemon's secret"
	case errors.Is(err, os.ErrPermission):
		c.Detail = fmt.Sprintf("secret file %s is not readable by %s, so events are spooled, never delivered", n.SecretFile, me.who())
		c.Fix = readableFix(n.SecretFile, me)
	case errors.Is(err, os.ErrNotExist):
		c.Detail = fmt.Sprintf("secret file %s does not exist, so events are spooled, never delivered", n.SecretFile)
		c.Fix = fmt.Sprintf("copy the daemon's secret there: install -m 0640 -g %s SECRET %s", me.group, shellQuote(n.SecretFile))
	default:
		c.Detail = oneLine(err.Error())
		c.Fix = "write the daemon's secret into " + n.SecretFile
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
			c.OK, c.Detail = true, fmt.Sprintf("hook errors are appended to %s", fdPath(f))
			return c
		} else if null, err2 := os.Stat(os.DevNull); err == nil && err2 == nil && os.SameFile(st, null) {
			c.Detail = fmt.Sprintf("the hook could not append to its log (%s), so its errors go to %s", logFile, os.DevNull)
			c.Fix = fmt.Sprintf("chown %s:%s %s", me.user, me.group, shellQuote(logFile))
			return c
		}
	}
	f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o660)
	if err != nil {
		c.Detail = fmt.Sprintf("log %s is not appendable by %s: %s; hook errors would be lost", logFile, me.who(), oneLine(err.Error()))
		c.Fix = fmt.Sprintf("chown %s:%s %s", me.user, me.group, shellQuote(logFile))
		return c
	}
	f.Close()
	c.OK, c.Detail = true, fmt.Sprintf("log %s is appendable", logFile)
	return c
}

// fdPath names the file behind f: its /proc link on Linux, else its name.
func fdPath(f *os.File) string {
	if p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd())); err == nil {
		return p
	}
	return f.Name()
}

func readableFix(path string, me account) string {
	fix := fmt.Sprintf("chgrp %s %s && chmod 0640 %s", me.group, shellQuote(path), shellQuote(path))
	if _, err := os.Stat(path); errors.Is(err, os.ErrPermission) {
		// Stat fails only when a parent directory is closed to us.
		fix += fmt.Sprintf(", and let group %s search its directory: chgrp %s %s && chmod g+x %s",
			me.group, me.group, shellQuote(filepath.Dir(path)), shellQuote(filepath.Dir(path)))
	}
	return fix
}

// checkDaemon asks the daemon's /healthz; remoteHost is set when the
// daemon is on another host.
func checkDaemon(ctx context.Context, cfg *daemon.Config) (Check, string) {
	c := Check{Name: CheckDaemon}
	u := redact(cfg.Notify.URL)
	host := ""
	if pu, err := url.Parse(cfg.Notify.URL); err == nil {
		host = pu.Hostname()
	}
	remote := ""
	if host != "" && !isLocalHost(ctx, host) {
		remote = host
	}
	if err := probeHealth(ctx, cfg.Notify.URL, cfg.Notify.Timeout); err != nil {
		c.Detail = fmt.Sprintf("no answer from %s/healthz: %v", strings.TrimSuffix(u, "/"), err)
		if remote != "" {
			c.Fix = fmt.Sprintf("the daemon runs on %s: check it is running there and that this host can reach it ([daemon] listen is loopback-only by default)", remote)
		} else {
			c.Fix = "start the daemon: aicr daemon --config " + shellQuote(cfg.Path) + " (as its service user), or set [notify] url to where it listens"
		}
		return c, remote
	}
	c.OK = true
	if remote != "" {
		c.Detail = fmt.Sprintf("%s/healthz answers; the daemon runs on another host (%s): run aicr doctor there for its side", strings.TrimSuffix(u, "/"), remote)
	} else {
		c.Detail = fmt.Sprintf("%s/healthz answers (this host)", strings.TrimSuffix(u, "/"))
	}
	return c, remote
}

func probeHealth(ctx context.Context, base string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = triggers.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err // the URL is named by the caller, redacted
		}
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// isLocalHost reports whether host names this machine: loopback, one of
// its interface addresses, or its hostname.
func isLocalHost(ctx context.Context, host string) bool {
	if host == "localhost" {
		return true
	}
	if h, err := os.Hostname(); err == nil && strings.EqualFold(h, host) {
		return true
	}
	ips := []net.IP{net.ParseIP(host)}
	if ips[0] == nil {
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupIP(lctx, "ip", host)
		if err != nil {
			return false
		}
		ips = addrs
	}
	local, _ := net.InterfaceAddrs()
	for _, ip := range ips {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return true
		}
		for _, a := range local {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

// checkTools runs each configured VCS client's version query once.
func checkTools(ctx context.Context, cfg *daemon.Config, only, remoteHost string) []Check {
	var out []Check
	seen := map[string]bool{}
	tool := func(name, bin string) {
		if seen[name+"\x00"+bin] {
			return
		}
		seen[name+"\x00"+bin] = true
		c := Check{Name: name}
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		path, err := exec.LookPath(bin)
		var ver []byte
		if err == nil {
			ver, err = exec.CommandContext(tctx, path, "--version", "--quiet").Output()
		}
		switch {
		case err == nil:
			c.OK, c.Detail = true, fmt.Sprintf("%s %s (%s)", name, strings.TrimSpace(string(ver)), path)
		case remoteHost != "":
			c.OK, c.Skipped = true, true
			c.Detail = fmt.Sprintf("%s: %v; not needed on this host, the daemon runs on %s", bin, err, remoteHost)
		default:
			c.Detail = fmt.Sprintf("%s: %v; the daemon cannot read revisions without it", bin, err)
			c.Fix = fmt.Sprintf("install Subversion (apt-get install subversion), or set %s_path in the [[repo]]", name)
		}
		out = append(out, c)
	}
	for _, r := range cfg.Repos {
		if only != "" && r.Name != only {
			continue
		}
		switch r.Kind {
		case vcs.KindSVN:
			sc, _ := r.Settings.(*svn.Config)
			svnBin, lookBin, local := "svn", "svnlook", ""
			if sc != nil {
				if sc.SvnPath != "" {
					svnBin = sc.SvnPath
				}
				if sc.SvnlookPath != "" {
					lookBin = sc.SvnlookPath
				}
				local = sc.LocalPath
			}
			tool(CheckSvn, svnBin)
			if local != "" {
				tool(CheckSvnlook, lookBin)
			}
		case vcs.KindP4:
			c := checkP4(ctx, r)
			if !c.OK && remoteHost != "" {
				c.OK, c.Skipped, c.Fix = true, true, ""
				c.Detail += "; not needed on this host, the daemon runs on " + remoteHost
			}
			out = append(out, c)
		}
	}
	return out
}

// versionChecker is the p4 adapter's `p4 -V` check, asserted here so
// doctor needs no p4 import.
type versionChecker interface {
	CheckVersion(ctx context.Context) (string, error)
}

func checkP4(ctx context.Context, r daemon.RepoConfig) Check {
	c := Check{Repo: r.Name, Name: CheckP4}
	a, err := r.Settings.NewAdapter()
	if err != nil {
		c.Detail = oneLine(err.Error())
		c.Fix = "install the p4 client (2017.1 or newer) on the daemon host, or set p4_path"
		return c
	}
	vc, ok := a.(versionChecker)
	if !ok {
		c.OK, c.Skipped, c.Detail = true, true, "this p4 adapter has no version check"
		return c
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rel, err := vc.CheckVersion(tctx)
	if err != nil {
		c.Detail = oneLine(err.Error())
		c.Fix = "install a current p4 client, or set p4_path"
		return c
	}
	c.OK, c.Detail = true, "p4 "+rel
	return c
}

// WriteText prints the report for people: one line per check, its fix
// under it, grouped by repository.
func WriteText(w io.Writer, rep Report) {
	fmt.Fprintf(w, "aicr doctor: %s\n", rep.Config)
	group := "\x00"
	failed := 0
	for _, c := range rep.Checks {
		if c.Repo != group {
			group = c.Repo
			if group == "" {
				fmt.Fprintln(w, "this host")
			} else {
				fmt.Fprintf(w, "repo %s\n", group)
			}
		}
		mark := "✓"
		switch {
		case c.Skipped:
			mark = "-"
		case !c.OK:
			mark = "✗"
			failed++
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, c.Name, c.Detail)
		if !c.OK && c.Fix != "" {
			fmt.Fprintf(w, "      fix: %s\n", c.Fix)
		}
	}
	if failed == 0 {
		fmt.Fprintln(w, "all checks passed")
	} else {
		fmt.Fprintf(w, "%d check(s) failed\n", failed)
	}
}

// Summary is one line for notify's log.
func Summary(checks []Check) string {
	var bad []string
	for _, c := range checks {
		if !c.OK && !c.Skipped {
			bad = append(bad, c.Name+": "+c.Detail)
		}
	}
	if len(bad) == 0 {
		return fmt.Sprintf("%d checks passed", len(checks))
	}
	return fmt.Sprintf("%d of %d checks failed: %s", len(bad), len(checks), strings.Join(bad, "; "))
}

// logSince returns what was appended to path after offset, on one line
// and bounded, since a log of many hooks can be long.
func logSince(path string, offset int64) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, 2048))
	return oneLine(string(b))
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// shellQuote quotes s for the fix lines people paste into a shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
