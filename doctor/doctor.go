// Package doctor checks an installation the way it will really run: it
// executes each SVN repository's post-commit hook with an empty
// environment, as the account svn runs hooks as, with `aicr notify` in dry
// run, and reports every step that would fail together with its fix.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/vcs"
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
	// CheckAgentCLI: the configured agent CLI installed at a proven version.
	CheckAgentCLI = "agent-cli"
	// CheckAgentCLIRuns: the agent CLI answers --version where reviews run it.
	CheckAgentCLIRuns = "agent-cli-runs"
)

const (
	// defaultResultWait is added to twice [notify] timeout (the dry run's
	// health probe) to bound the wait for the detached notifier.
	defaultResultWait = 5 * time.Second
	// hookTimeout bounds the hook's own run; a hook that detaches returns
	// at once, one that does not is reported instead of hanging doctor.
	hookTimeout = 10 * time.Second
)

// Status is a check's outcome in `aicr doctor --format json`.
type Status string

const (
	StatusOK Status = "ok"
	// StatusWarn: not a failure, but something to look at: a check that
	// could not run here (the repository is on another host), or a
	// difference that may be intended (the daemon runs another config).
	StatusWarn Status = "warn"
	// StatusFail: reviews are or will be lost until Fix is applied.
	StatusFail Status = "fail"
)

// Check is one finding: the stable JSON schema of `aicr doctor --format
// json` is {name, status, detail, fix} plus the repo it concerns. Fix
// says what to run or change, computed from what was found.
type Check struct {
	Repo   string `json:"repo,omitempty"`
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Failed reports a check that is neither ok nor a warning; one whose
// status was never set counts as failed, so a forgotten branch cannot
// pass a broken installation.
func (c Check) Failed() bool { return c.Status != StatusOK && c.Status != StatusWarn }

// Report is every check of one doctor run; OK when none failed.
type Report struct {
	Config string  `json:"config"`
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// settle gives every check an explicit status (a check left without one
// failed) and reports whether none failed.
func settle(checks []Check) bool {
	ok := true
	for i := range checks {
		if checks[i].Failed() {
			checks[i].Status = StatusFail
			ok = false
		}
	}
	return ok
}

// Options says what to check.
type Options struct {
	Config *config.Config
	// Repo limits the repository checks to this [[repo]] name.
	Repo string
	// Exe is the aicr binary doctor runs `notify svn` with directly, as
	// the hook's account, when the hook cannot be run or never reports;
	// the account's checks (config, secret, spool, log) then still happen.
	Exe string
	// ResultWait bounds the wait for the detached notifier's findings
	// after the hook returned. Default: twice [notify] timeout plus 5s.
	ResultWait time.Duration
	// Version is this aicr's; a daemon running another is reported.
	Version string
	// AsUser is the account the daemon runs as; default the owner of
	// data_dir. As root, the daemon's checks run as it.
	AsUser string
}

// ErrUnknownRepo is returned when Options.Repo names no [[repo]].
var ErrUnknownRepo = errors.New("no such [[repo]]")

// Diagnose checks every SVN repository with a local_path on this host (or the
// one named), the daemon and the VCS clients.
func Diagnose(ctx context.Context, opts Options) (Report, error) {
	cfg := opts.Config
	if opts.Repo != "" {
		if _, ok := cfg.Repo(opts.Repo); !ok {
			return Report{}, fmt.Errorf("--repo %q: %w in %s; configured: %s", opts.Repo, ErrUnknownRepo, cfg.Path, strings.Join(cfg.RepoNames(), ", "))
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
			rep.Checks = append(rep.Checks, Check{Repo: r.Name, Name: CheckRepoSkipped, Status: StatusWarn,
				Detail: "no local_path: the hook of this repository is not on a host doctor knows; run aicr doctor on the SVN server with local_path set"})
			continue
		case !isDir(local):
			rep.Checks = append(rep.Checks, Check{Repo: r.Name, Name: CheckRepoSkipped, Status: StatusWarn,
				Detail: fmt.Sprintf("local_path %s is not on this host; run aicr doctor on the SVN server", local)})
			continue
		}
		rep.Checks = append(rep.Checks, checkSVNRepo(ctx, opts, r.Name, local)...)
	}
	daemonChecks, remoteHost := probeDaemon(ctx, cfg, opts.Repo, opts.Version)
	rep.Checks = append(rep.Checks, daemonChecks...)
	rep.Checks = append(rep.Checks, checkStore(ctx, cfg)...)
	if remoteHost != "" {
		rep.Checks = append(rep.Checks, Check{Name: CheckDaemonAccount, Status: StatusWarn,
			Detail: fmt.Sprintf("the daemon runs on %s: its data_dir, files and repository access are checked there", remoteHost),
			Fix:    "run aicr doctor on " + remoteHost + " too"})
		rep.Checks = append(rep.Checks, checkTools(ctx, cfg, opts.Repo, remoteHost)...)
	} else {
		rep.Checks = append(rep.Checks, checkDaemonSide(ctx, opts)...)
	}
	rep.Checks = append(rep.Checks, checkAgentCLI(ctx, cfg, opts.Exe)...)
	rep.OK = settle(rep.Checks)
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
			out = append(out, Check{Name: CheckAccess, Status: StatusFail,
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
