package doctor

// Running an installed hook as svn would: its owner, an empty
// environment, notify in dry run.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// inspectHook checks the hook file without running it. runnable means it
// is a POSIX hook with an aicr block that svn can execute.
func inspectHook(cfg *config.Config, name, repos string, owner account) (c Check, info triggers.SVNHookInfo, path string, runnable bool) {
	c = Check{Name: CheckHook}
	reinstall := fmt.Sprintf("aicr install svn-hook --repo %s --config %s", shellQuote(repos), shellQuote(cfg.Path))
	// A hook in another language calls the helper that holds the block.
	path = triggers.SVNBlockFile(repos)
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
	c.Status = StatusOK
	c.Detail = fmt.Sprintf("%s runs %s %s --config %s --repo %s", path, info.AicrPath, triggers.NotifyCommand(info.AicrPath, triggers.KindSVN), info.ConfigPath, info.RepoName)
	if filepath.Clean(info.ConfigPath) != filepath.Clean(cfg.Path) {
		c.Detail += fmt.Sprintf(" (not %s, the config doctor was given; the checks below use the hook's)", cfg.Path)
	} else if info.RepoName != name {
		c.Status = StatusFail
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
		c.Detail = fmt.Sprintf("%s ran with an empty environment as %s, but %s %s did not report within %s: %v", ran, owner.who(), info.AicrPath, triggers.NotifyCommand(info.AicrPath, triggers.KindSVN), wait, err)
		if added := logSince(info.LogFile, logStart); added != "" {
			c.Detail += "; it logged: " + added
		}
		c.Fix = fmt.Sprintf("check that %s is an aicr with doctor support (%s --version), then run what the hook runs as %s: env -i %s=/tmp/aicr-check.json %s %s --config %s --repo %s %s 0; cat /tmp/aicr-check.json",
			info.AicrPath, shellQuote(info.AicrPath), owner.who(), triggers.NotifyCheckEnv, shellQuote(info.AicrPath), triggers.NotifyCommand(info.AicrPath, triggers.KindSVN), shellQuote(info.ConfigPath), shellQuote(info.RepoName), shellQuote(repos))
		return c, nil, false
	}
	c.Status = StatusOK
	c.Detail = fmt.Sprintf("%s ran with an empty environment as %s and %s %s reported back (dry run, nothing sent)", ran, owner.who(), filepath.Base(info.AicrPath), triggers.NotifyCommand(info.AicrPath, triggers.KindSVN))
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
		return nil, fmt.Errorf("%w: %s", err, oneLine(string(out)))
	}
	found, err := readResult(result)
	if err != nil {
		return nil, fmt.Errorf("%w (output: %s)", err, oneLine(string(out)))
	}
	for i := range found {
		found[i].Detail += " (aicr notify run directly, without the hook)"
	}
	return found, nil
}
