package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/triggers"
)

// DemoOptions are the inputs of `aicr demo`.
type DemoOptions struct {
	Factory *Factory
	// Keep leaves the temporary directory for inspection.
	Keep bool
}

func newCmdDemo(f *Factory, runF func(context.Context, *DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Show aicr end to end on a throw-away SVN repository",
		Long: `Create a temporary SVN repository with svnadmin, install the post-commit hook
with the same code as 'aicr install svn-hook', start a daemon, commit a change
with a planted credential and a merge-conflict marker, print the report and the
audit row, then stop and clean up. Needs svn and svnadmin (apt-get install
subversion); exits 1 naming the package when they are missing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return demoRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "keep the temporary directory for inspection")
	return cmd
}

// demoRun plays the whole demo. Starting and stopping the daemon
// in-process stays here (not in package daemon) while that package is
// being restructured; it becomes a call on its composition root.
func demoRun(ctx context.Context, opts *DemoOptions) error {
	f := opts.Factory
	ios := f.IOStreams
	if err := demoToolsPresent(); err != nil {
		return err
	}
	exe, err := f.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "aicr-demo-")
	if err != nil {
		return err
	}
	if opts.Keep {
		fmt.Fprintf(ios.ErrOut, "demo directory: %s (kept)\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	say := func(format string, args ...any) { fmt.Fprintf(ios.ErrOut, "==> "+format+"\n", args...) }

	reposPath, configPath, err := createDemoRepo(ctx, dir, say)
	if err != nil {
		return err
	}
	// The demo's own config, data_dir and store, through the same
	// factory rules as every command (the data_dir-owner check included).
	demo := &Factory{IOStreams: ios, ConfigPath: configPath, Now: f.Now, Executable: f.Executable}
	cfg, err := demo.RequireDataDirOwner()
	if err != nil {
		return err
	}
	if err := installDemoHook(exe, reposPath, configPath, cfg.Notify.SpoolDir, say); err != nil {
		return err
	}
	d, err := startDemoDaemon(ctx, f, cfg, say)
	if err != nil {
		return err
	}
	defer d.cancel()
	if err := commitDemoRevisions(ctx, dir, reposPath, say); err != nil {
		return err
	}

	store, err := demo.Store(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	runs, err := waitForRuns(ctx, store, 2, 90*time.Second)
	if err != nil {
		return err
	}
	if err := d.stop(); err != nil {
		return err
	}
	return printDemoAudit(ctx, termSafe(ios.Out), store, runs)
}

func demoToolsPresent() error {
	for _, tool := range []string{"svn", "svnadmin"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("the demo needs %s: install Subversion with `sudo apt-get install -y subversion` (or run `make demo`, which does)", tool)
		}
	}
	return nil
}

// createDemoRepo makes the demo's repository under dir and the config
// that serves it (a free loopback port, a fresh trigger secret).
func createDemoRepo(ctx context.Context, dir string, say func(string, ...any)) (reposPath, configPath string, err error) {
	reposPath = filepath.Join(dir, "repos", "demo")
	say("creating SVN repository %s", reposPath)
	if err := os.MkdirAll(filepath.Dir(reposPath), 0o755); err != nil {
		return "", "", err
	}
	if err := runTool(ctx, dir, "svnadmin", "create", reposPath); err != nil {
		return "", "", err
	}
	addr, err := freeLoopbackAddr(ctx)
	if err != nil {
		return "", "", err
	}
	if err := writeRandomSecret(filepath.Join(dir, "trigger-secret")); err != nil {
		return "", "", err
	}
	configPath = filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(configPath, []byte(demoConfig(addr, reposPath)), 0o600); err != nil {
		return "", "", err
	}
	return reposPath, configPath, nil
}

// installDemoHook installs the hook client an admin's install would use:
// aicr-notify beside this binary when `make build` put it there.
func installDemoHook(exe, reposPath, configPath, spoolDir string, say func(string, ...any)) error {
	hookBinary := exe
	if n, ok := triggers.NotifierBeside(exe); ok {
		hookBinary = n
	}
	hook, err := triggers.InstallSVNHook(triggers.SVNHookOptions{ReposPath: reposPath, AicrPath: hookBinary, ConfigPath: configPath, RepoName: "demo", SpoolDir: spoolDir})
	if err != nil {
		return err
	}
	say("installed %s (runs %s)", hook, hookBinary)
	return nil
}

// demoDaemon is the daemon the demo runs in this process.
type demoDaemon struct {
	cancel context.CancelFunc
	done   chan error
}

// stop ends the daemon and waits for it; its own cancellation is no error.
func (d demoDaemon) stop() error {
	d.cancel()
	if err := <-d.done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// startDemoDaemon serves cfg in this process and returns once it listens.
func startDemoDaemon(ctx context.Context, f *Factory, cfg *config.Config, say func(string, ...any)) (demoDaemon, error) {
	daemonCtx, cancel := context.WithCancel(ctx)
	d := demoDaemon{cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		d.done <- serveDaemon(daemonCtx, daemon.Options{
			Config: cfg, Logger: f.VerbLogger(slog.LevelWarn), Stdout: f.IOStreams.Out, Now: f.Now,
			Ready: func(a string) { ready <- a }, IdlePoll: 200 * time.Millisecond,
		})
	}()
	select {
	case a := <-ready:
		say("daemon listening on %s", a)
		return d, nil
	case err := <-d.done:
		cancel()
		return demoDaemon{}, fmt.Errorf("start daemon: %w", err)
	}
}

// commitDemoRevisions commits r1 (clean) and r2 (with planted problems)
// through a working copy, so the installed hook fires twice.
func commitDemoRevisions(ctx context.Context, dir, reposPath string, say func(string, ...any)) error {
	wc := filepath.Join(dir, "wc")
	if err := runTool(ctx, dir, "svn", "checkout", "-q", "file://"+reposPath, wc); err != nil {
		return err
	}
	if err := writeFiles(wc, demoBaseFiles); err != nil {
		return err
	}
	if err := runTool(ctx, wc, "svn", "add", "-q", "--parents", "app"); err != nil {
		return err
	}
	if err := runTool(ctx, wc, "svn", "commit", "-q", "-m", "Add the payment service skeleton", "--username", "alice"); err != nil {
		return err
	}
	say("committed r1 (clean code)")
	if err := writeFiles(wc, demoChangedFiles); err != nil {
		return err
	}
	if err := runTool(ctx, wc, "svn", "commit", "-q", "-m", "Connect payments to the production gateway\n\nAlso resolves the merge of the retry branch.", "--username", "bob"); err != nil {
		return err
	}
	say("committed r2 (planted: a password literal, an AWS key id, a merge-conflict marker); waiting for the review")
	return nil
}

// printDemoAudit shows what aicr audit list and aicr audit show would.
func printDemoAudit(ctx context.Context, out io.Writer, store *audit.Store, runs []audit.RunSummary) error {
	fmt.Fprintln(out, "\n--- audit trail (aicr audit list) ---")
	for _, r := range runs {
		fmt.Fprintf(out, "run %d  %s r%s  %s%s  problems=%d  source=%s\n", r.ID, r.Repo, r.Revision, r.Status, prefixed(" ", r.SkipReason), r.ProblemCount, r.Source)
	}
	if len(runs) == 0 {
		return nil
	}
	d, err := store.GetRun(ctx, runs[0].ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n--- aicr audit show %d ---\n", d.ID)
	printRunDetail(out, d)
	return nil
}

// waitForRuns polls the audit store until n runs have finished.
func waitForRuns(ctx context.Context, store *audit.Store, n int, limit time.Duration) ([]audit.RunSummary, error) {
	deadline := time.Now().Add(limit)
	for {
		runs, err := store.ListRuns(ctx, audit.ListOptions{Limit: n})
		if err != nil {
			return nil, err
		}
		finished := 0
		for _, r := range runs {
			if r.Status.Final() {
				finished++
			}
		}
		if finished >= n {
			return runs, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the review did not finish within %s (runs so far: %d finished of %d)", limit, finished, len(runs))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func runTool(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func freeLoopbackAddr(ctx context.Context) (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func writeRandomSecret(path string) error {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), 0o600)
}

func writeFiles(root string, files map[string]string) error {
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func demoConfig(addr, reposPath string) string {
	return fmt.Sprintf(`# written by aicr demo
[daemon]
listen = %q
data_dir = "data"
workers = 2
secret_file = "trigger-secret"

[notify]
spool_dir = "spool"

[agent]
kind = "builtin"

[[repo]]
name = "demo"
kind = "svn"
url = "file://%s"
local_path = %q
channels = ["console", "reports"]

[[channel]]
name = "console"
kind = "console"
no_problems = "suppress"

[[channel]]
name = "reports"
kind = "file"
path = "reports.jsonl"
`, addr, reposPath, reposPath)
}

var demoBaseFiles = map[string]string{
	"app/payments.py": `"""Payment gateway client."""

import os


def gateway_url():
    return os.environ.get("GATEWAY_URL", "https://sandbox.example.com")


def charge(amount_cents):
    if amount_cents <= 0:
        raise ValueError("amount must be positive")
    return {"amount": amount_cents, "status": "pending"}
`,
	"app/retry.py": `def backoff(attempt):
    return min(2 ** attempt, 60)
`,
}

var demoChangedFiles = map[string]string{
	"app/payments.py": `"""Payment gateway client."""

import os

GATEWAY_USER = "payments"
password = "Tr0ub4dor&3-prod"
AWS_ACCESS_KEY_ID = "AKIAQWERTYUIOPASDFGH"


def gateway_url():
    return os.environ.get("GATEWAY_URL", "https://gateway.example.com")


def charge(amount_cents):
    if amount_cents <= 0:
        raise ValueError("amount must be positive")
    return {"amount": amount_cents, "status": "pending"}
`,
	"app/retry.py": `def backoff(attempt):
<<<<<<< .mine
    return min(2 ** attempt, 60)
=======
    return min(3 ** attempt, 120)
>>>>>>> .r7
`,
}
