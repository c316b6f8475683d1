package vcs

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/aicr-dev/aicr/childenv"
)

// DefaultCommandTimeout bounds one VCS client invocation when a repo sets
// no command_timeout. It is far above a healthy server's answer time for
// the largest changelist print, and far below "the worker is stuck".
const DefaultCommandTimeout = 5 * time.Minute

// waitDelay is how long Wait waits for the pipes after the process group
// was killed; an orphan that escaped the group (setsid) must not hold the
// worker forever.
const waitDelay = 5 * time.Second

// Command builds a VCS client invocation that cannot outlive its deadline
// with anything it spawned: it runs in a process group of its own (svn+ssh
// starts ssh, p4 can start p4 trust helpers, a wrapper script starts the
// real client) and the whole group is killed when ctx ends. env is the
// complete environment of the child; build it with ChildEnv so that no
// secret of the daemon reaches the VCS client.
func Command(ctx context.Context, bin string, args []string, env []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	if env == nil {
		env = []string{}
	}
	cmd.Env = env
	setProcessGroup(cmd)
	cmd.WaitDelay = waitDelay
	return cmd
}

// WithTimeout derives the context one command runs under. A zero or
// negative timeout means DefaultCommandTimeout: there is no "no deadline".
func WithTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	return context.WithTimeout(ctx, timeout)
}

// CommandError turns the end of a command whose context was cmdCtx (made
// by WithTimeout from parent) into the error the caller returns: nil when
// the command's own deadline did not fire nor the parent end, ErrTimeout
// when the command ran out of time, the parent's error when the caller
// gave up. name is "svn diff", "p4 describe"...
func CommandError(parent, cmdCtx context.Context, name string, timeout time.Duration) error {
	if err := parent.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if cmdCtx.Err() != nil {
		if timeout <= 0 {
			timeout = DefaultCommandTimeout
		}
		return fmt.Errorf("%s: %w after %s (killed with its child processes; raise command_timeout if the server is just slow)", name, ErrTimeout, timeout)
	}
	return nil
}

// inheritedByClients are the variables a VCS client inherits beyond
// childenv.Base: its home (p4 trust and tickets files, ssh's known_hosts),
// the user names ssh and svn look at, and the ssh agent for svn+ssh.
var inheritedByClients = []string{"HOME", "USER", "LOGNAME", "SSH_AUTH_SOCK", "SVN_SSH"}

// ChildEnv returns the environment of a VCS child process
// (childenv.Build with what a client inherits), then set: NAME=value
// entries the adapter sets on purpose, which win over inherited ones.
func ChildEnv(set ...string) []string {
	return childenv.Build(inheritedByClients, set...)
}

// IsTransient reports whether err is worth retrying later with the same
// input: the VCS command timed out, the server could not be reached, or
// the revision is not there yet. Callers that retry must bound the
// ErrNoSuchRevision case by a grace window of their own (a replica
// catching up takes minutes; a revision that never appears is permanent),
// which they can tell apart with errors.Is(err, ErrNoSuchRevision).
func IsTransient(err error) bool {
	return errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNoSuchRevision)
}
