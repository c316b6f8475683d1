package triggers

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The hook clients themselves (`aicr notify svn|p4` and the aicr-notify
// binary) live here rather than in a command package so that both binaries
// run the same code, and aicr-notify links nothing but this package: a
// commit waits for every package initialiser its hook links.

// VCS names in events; the same strings as vcs.KindSVN and vcs.KindP4,
// repeated so the hook does not link package vcs.
const (
	KindSVN = "svn"
	KindP4  = "p4"
)

// EnvNotifyDetached marks the detached child of a p4 trigger client, so it
// does the delivery instead of detaching again.
const EnvNotifyDetached = "AICR_NOTIFY_DETACHED"

// SVNNotify is `notify svn`: svn's hook arguments, unchecked (a hook must
// never fail the commit, not even on a usage error).
type SVNNotify struct {
	ConfigPath string
	Repo       string
	Args       []string
}

// RunNotifySVN hands one SVN revision to the daemon or spools it. Every
// problem is reported on stderr; the returned error is one more line for
// stderr, never a reason to exit non-zero.
func RunNotifySVN(ctx context.Context, o SVNNotify, stderr io.Writer) error {
	args, repoName := o.Args, o.Repo
	if len(args) < 2 || len(args) > 3 {
		return fmt.Errorf("usage: aicr notify svn REPOS_PATH REV [TXN] (got %d arguments)", len(args))
	}
	reposPath := args[0]
	rev, err := CanonicalRevision(args[1])
	if err != nil {
		return fmt.Errorf("event for %s not sent: %w", reposPath, err)
	}
	cfg, loaded, clientCfg := loadNotifyConfig(stderr, o.ConfigPath)
	ev := Event{
		V:        ProtocolVersion,
		VCS:      KindSVN,
		Repo:     repoName,
		Revision: rev,
		Source:   SourceTrigger,
		SentAt:   time.Now().UTC(),
	}
	if len(args) == 3 {
		ev.Txn = args[2]
	}
	if loaded {
		if repoName == "" {
			repo, ok := cfg.RepoForPath(reposPath)
			if !ok {
				ev.Repo = filepath.Base(reposPath)
				return spoolRejected(stderr, clientCfg, ev, fmt.Sprintf("no [[repo]] in %s has local_path = %q; add one or pass --repo NAME in the hook", cfg.Path, reposPath))
			}
			ev.Repo = repo.Name
		} else if repo, ok := cfg.Repo(repoName); ok && repo.LocalPath != "" && !SameRepoPath(repo.LocalPath, reposPath) {
			// A hook installed with --name of another repo would have this
			// repository's commits reviewed as that repo's revisions.
			return spoolRejected(stderr, clientCfg, ev, fmt.Sprintf("the hook of %s names repo %q, whose local_path is %s: the revision would be reviewed in the wrong repository; re-install the hook with the right --name (aicr install svn-hook --repo %s)", reposPath, repoName, repo.LocalPath, reposPath))
		}
	} else if repoName == "" {
		ev.Repo = filepath.Base(reposPath)
		return spoolRejected(stderr, clientCfg, ev, "the config could not be read, so the repo name of "+reposPath+" is unknown; fix the config, or pass --repo NAME in the hook, then re-send this revision with aicr review")
	}
	Notify(ctx, clientCfg, ev, stderr)
	return nil
}

// P4Notify is `notify p4`: the trigger's arguments (p4d expands %change%
// etc.).
type P4Notify struct {
	ConfigPath string
	Repo       string
	Change     string
	User       string
	Client     string
	ServerPort string
	ServerID   string
	Foreground bool
	// Shelve: the change was shelved (shelve-commit), not submitted.
	Shelve bool
	// Args are stray arguments, reported and otherwise ignored.
	Args []string
	// Argv is this process's command line after the program name; the
	// detached child is started with it (its --config made absolute).
	Argv []string
}

// RunNotifyP4 hands one changelist to the daemon. Unless Foreground (or
// in the detached child), it starts a detached copy of the running binary
// and returns at once: p4 submit waits for the trigger, never for the
// network. Problems are reported like RunNotifySVN's.
func RunNotifyP4(ctx context.Context, o P4Notify, stderr io.Writer) error {
	if len(o.Args) > 0 {
		return fmt.Errorf("unexpected arguments %q: use --change %%change%%", o.Args)
	}
	if o.Repo == "" {
		return fmt.Errorf("--repo is required")
	}
	change, err := CanonicalRevision(o.Change)
	if err != nil {
		return fmt.Errorf("--change: %w", err)
	}
	if !o.Foreground && os.Getenv(EnvNotifyDetached) == "" {
		// The child starts in / (so it holds no directory of p4d's open):
		// a relative --config must be resolved here or the child loses the
		// event.
		abs, err := filepath.Abs(o.ConfigPath)
		if err != nil {
			return fmt.Errorf("event for %s change %s not sent: config path %s: %w", o.Repo, change, o.ConfigPath, err)
		}
		cfg, _, _ := LoadHookConfig(abs)
		return detachNotify(cfg.SpoolDir, WithConfigArg(o.Argv, abs))
	}
	_, _, clientCfg := loadNotifyConfig(stderr, o.ConfigPath)
	ev := Event{
		V:          ProtocolVersion,
		VCS:        KindP4,
		Repo:       o.Repo,
		Revision:   change,
		User:       o.User,
		Client:     o.Client,
		ServerPort: o.ServerPort,
		ServerID:   o.ServerID,
		Source:     SourceTrigger,
		SentAt:     time.Now().UTC(),
	}
	if o.Shelve {
		ev.Kind = KindShelve
	}
	Notify(ctx, clientCfg, ev, stderr)
	return nil
}

// loadNotifyConfig reads only what the hook needs, leniently, and reports
// every problem on stderr: whatever is wrong, the caller still gets a
// spool dir to keep the event in. loaded is false when the file could not
// be read or parsed.
func loadNotifyConfig(stderr io.Writer, configPath string) (cfg *HookConfig, loaded bool, clientCfg ClientConfig) {
	cfg, warnings, err := LoadHookConfig(configPath)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "aicr notify: config %s: %s\n", cfg.Path, w)
	}
	if err != nil && cfg.SpoolDir == "" {
		fmt.Fprintf(stderr, "aicr notify: %s; no spool dir is known either (%s does not exist): fix --config in the hook\n", oneLine(err.Error()), DefaultSpoolDir)
	} else if err != nil {
		fmt.Fprintf(stderr, "aicr notify: %s; events are spooled to %s until it is fixed\n", oneLine(err.Error()), cfg.SpoolDir)
	}
	clientCfg, secretErr := cfg.ClientConfig()
	if err != nil {
		// The URL would be a guess: spool, and let the daemon's drain or
		// the next working hook deliver it.
		clientCfg.SpoolOnly = "the config could not be read (see above), so nothing was sent"
	}
	if secretErr != nil {
		// Without a secret the daemon would refuse the event; it is
		// spooled (unsigned) so it is not lost.
		fmt.Fprintln(stderr, "aicr notify:", secretErr)
	}
	return cfg, err == nil, clientCfg
}

// spoolRejected keeps an event the hook refuses to send in the spool's
// rejected/ dir with the reason, so it is never lost silently.
func spoolRejected(stderr io.Writer, clientCfg ClientConfig, ev Event, reason string) error {
	spool := Spool{Dir: clientCfg.SpoolDir, Secret: clientCfg.Secret}
	name, err := spool.Write(ev)
	if err == nil {
		err = spool.Reject(name, reason)
	}
	if err != nil {
		return fmt.Errorf("%s %s NOT RECORDED: %s; keeping it in %s failed: %w", ev.Repo, revisionText(ev.VCS, ev.Revision), reason, clientCfg.SpoolDir, err)
	}
	fmt.Fprintf(stderr, "aicr notify: %s %s not sent: %s; kept in %s\n", ev.Repo, revisionText(ev.VCS, ev.Revision), reason, spool.Path(RejectedDir))
	return nil
}

// revisionText is vcs.RevisionText for the hook, which must not link
// package vcs (see KindSVN): "r42" for Subversion, "change 1231" for
// Perforce. TestRevisionTextIsVCSs keeps the two the same.
func revisionText(vcsKind, rev string) string {
	switch vcsKind {
	case KindSVN:
		return "r" + rev
	case KindP4:
		return "change " + rev
	default:
		return "revision " + rev
	}
}

// detachNotify re-runs this binary with argv in a new session with
// stdin/stdout on /dev/null and stderr appended to <spool>/notify.log, and
// returns without waiting: p4d waits for the trigger's output pipes, so
// nothing of the child may stay attached to them.
func detachNotify(spoolDir string, argv []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer devnull.Close()
	logw := devnull
	if spoolDir != "" {
		if f, err := OpenNotifyLog(spoolDir); err == nil {
			defer f.Close()
			logw = f
		}
	}
	child := exec.Command(exe, argv...) //nolint:noctx // the child is detached to outlive this hook process: a context would kill it
	child.Env = append(os.Environ(), EnvNotifyDetached+"=1")
	child.Stdin, child.Stdout, child.Stderr = devnull, devnull, logw
	child.Dir = "/"
	detachAttrs(child)
	if err := child.Start(); err != nil {
		return fmt.Errorf("start detached notifier: %w", err)
	}
	return child.Process.Release()
}

// WithConfigArg replaces the --config value in args (every spelling the
// clients accept) with path, or adds it when absent.
func WithConfigArg(args []string, path string) []string {
	out := make([]string, 0, len(args)+2)
	replaced := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--config":
			out = append(out, "--config="+path)
			i++
			replaced = true
		case strings.HasPrefix(a, "--config="):
			out = append(out, "--config="+path)
			replaced = true
		default:
			out = append(out, a)
		}
	}
	if !replaced {
		out = append(out, "--config="+path)
	}
	return out
}
