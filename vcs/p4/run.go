package p4

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs"
)

// ErrAuth means the server refused the service user's credentials: the
// ticket expired or was never created, or the password is wrong.
var ErrAuth = errors.New("perforce login required")

// authMessages are the server texts (msgs/msgserver.cc) that mean "log
// in again"; matched without the trailing newline.
var authMessages = []string{
	"Your session has expired, please login again.",
	"Your session was logged out, please login again.",
	"Perforce password (P4PASSWD) invalid or unset.",
	"Password invalid.",
}

// maxStderr bounds how much of p4's stderr ends up in an error message.
const maxStderr = 4 << 10

// serverError is an error record (or stderr line) from p4.
type serverError struct {
	msg      string
	severity int // 2 warning, 3 failed, 4 fatal
}

// cmdError is a failed p4 invocation.
type cmdError struct {
	cmd  string
	msgs []serverError
	err  error
}

func (e *cmdError) Error() string {
	var parts []string
	for _, m := range e.msgs {
		parts = append(parts, m.msg)
	}
	if len(parts) == 0 && e.err != nil {
		return fmt.Sprintf("p4 %s: %v", e.cmd, e.err)
	}
	return fmt.Sprintf("p4 %s: %s", e.cmd, strings.Join(parts, "; "))
}

// Unwrap lets errors.Is see the process error and, when the client could
// not reach the server, vcs.ErrUnavailable.
func (e *cmdError) Unwrap() []error {
	for _, m := range unreachableMessages {
		if e.says(m) {
			return []error{e.err, vcs.ErrUnavailable}
		}
	}
	return []error{e.err}
}

// unreachableMessages are the client's own texts (msgs/msgrpc.cc) for a
// server it cannot reach or that dropped the connection.
var unreachableMessages = []string{
	"Connect to server failed",
	"TCP connect to ",
	"SSL connect to ",
	"TCP receive failed",
	"TCP send failed",
	"Partner exited unexpectedly",
	"SSL receive failed",
}

// says reports whether p4 printed a message containing s.
func (e *cmdError) says(s string) bool {
	for _, m := range e.msgs {
		if strings.Contains(m.msg, s) {
			return true
		}
	}
	return false
}

func p4Says(err error, s string) bool {
	var ce *cmdError
	return errors.As(err, &ce) && ce.says(s)
}

// authError turns a refused login into ErrAuth with the cure in it.
func (a *Adapter) authError(err error) error {
	var ce *cmdError
	if !errors.As(err, &ce) {
		return err
	}
	if te := a.trustError(ce); te != nil {
		return te
	}
	for _, m := range authMessages {
		if ce.says(m) {
			return &authErr{msg: m, err: fmt.Errorf("%w: p4 %s: %s: run `p4 -p %s -u %s login` as the service user the daemon runs as (with P4TICKETS=%s), or configure password_file (with ticket_file aicr then logs in again by itself)",
				ErrAuth, ce.cmd, m, a.cfg.Port, a.cfg.User, orDefault(a.cfg.TicketFile, "its tickets file"))}
		}
	}
	return err
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// env is the child's complete environment: vcs.ChildEnv's allowlist (no
// P4* variable of the daemon's, no secret of another repo or channel)
// plus the configured credentials. P4CONFIG/P4ENVIRO are pointed away so
// no file changes what we parse.
func (a *Adapter) env() ([]string, error) {
	set := []string{"P4CONFIG=", "P4ENVIRO=" + os.DevNull, "P4CHARSET=none"}
	if a.cfg.TicketFile != "" {
		set = append(set, "P4TICKETS="+a.cfg.TicketFile)
	}
	if a.cfg.P4TrustFile != "" {
		set = append(set, "P4TRUST="+a.cfg.P4TrustFile)
	}
	if a.ticketMode() {
		// The password only logs in (loginAgain); commands use the ticket,
		// as security level 3 servers require.
		return vcs.ChildEnv(set...), nil
	}
	pw, err := a.cfg.password()
	if err != nil {
		return nil, err
	}
	if pw != "" {
		set = append(set, "P4PASSWD="+pw)
	}
	return vcs.ChildEnv(set...), nil
}

// invocation is one p4 command and the deadline it runs under.
type invocation struct {
	*exec.Cmd
	name   string
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc
	a      *Adapter
}

// ended returns the error for a command that ran out of time or whose
// caller gave up, nil otherwise.
func (inv *invocation) ended() error {
	return vcs.CommandError(inv.parent, inv.ctx, "p4 "+inv.name, inv.a.cfg.CommandTimeout)
}

// command builds `p4 <global flags> extra... args...` bounded by the
// repo's command_timeout; the caller must call cancel.
func (a *Adapter) command(ctx context.Context, extra []string, args ...string) (*invocation, error) {
	env, err := a.env()
	if err != nil {
		return nil, err
	}
	argv := []string{"-p", a.cfg.Port, "-u", a.cfg.User}
	if a.cfg.Client != "" {
		argv = append(argv, "-c", a.cfg.Client)
	}
	argv = append(argv, extra...)
	argv = append(argv, args...)
	cmdCtx, cancel := vcs.WithTimeout(ctx, a.cfg.CommandTimeout)
	return &invocation{
		Cmd:  vcs.Command(cmdCtx, a.bin, argv, env),
		name: args[0], parent: ctx, ctx: cmdCtx, cancel: cancel, a: a,
	}, nil
}

// charsetArgs is "-C utf8" on unicode servers.
func (a *Adapter) charsetArgs(ctx context.Context) ([]string, error) {
	uni, err := a.isUnicode(ctx)
	if err != nil || !uni {
		return nil, err
	}
	return []string{"-C", "utf8"}, nil
}

// runG runs `p4 -G args...` and returns its stat/text/binary/info
// records. Error records of severity 3 and above fail the call; warnings
// (severity 2: "no such file(s).") are returned to the caller.
func (a *Adapter) runG(ctx context.Context, global []string, args ...string) ([]Record, []serverError, error) {
	var recs []Record
	var warns []serverError
	err := a.inSession(ctx, func() (err error) {
		recs, warns, err = a.runGOnce(ctx, global, args...)
		return err
	})
	return recs, warns, err
}

func (a *Adapter) runGOnce(ctx context.Context, global []string, args ...string) ([]Record, []serverError, error) {
	cs, err := a.charsetArgs(ctx)
	if err != nil {
		return nil, nil, err
	}
	extra := append(append([]string{"-G"}, cs...), global...)
	cmd, err := a.command(ctx, extra, args...)
	if err != nil {
		return nil, nil, err
	}
	defer cmd.cancel()
	var stderr boundedBuffer
	stderr.max = maxStderr
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, a.startError(err)
	}
	recs, decErr := DecodeMarshal(out)
	if decErr != nil {
		_, _ = io.Copy(io.Discard, out)
	}
	waitErr := cmd.Wait()
	name := args[0]
	if err := cmd.ended(); err != nil {
		return nil, nil, err
	}
	var keep []Record
	var warns, fails []serverError
	for _, r := range recs {
		if r.Code() != "error" {
			keep = append(keep, r)
			continue
		}
		sev, _ := strconv.Atoi(r.Get("severity"))
		m := serverError{msg: strings.TrimRight(r.Get("data"), "\n"), severity: sev}
		if sev >= 3 {
			fails = append(fails, m)
		} else {
			warns = append(warns, m)
		}
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		// Connection failures come from the client itself, on stderr.
		fails = append(fails, serverError{msg: s, severity: 3})
	}
	switch {
	case len(fails) > 0:
		return nil, warns, a.authError(&cmdError{cmd: name, msgs: fails, err: waitErr})
	case decErr != nil:
		return nil, warns, fmt.Errorf("p4 %s: %w", name, decErr)
	case waitErr != nil && len(warns) == 0:
		return nil, warns, &cmdError{cmd: name, err: waitErr}
	}
	return keep, warns, nil
}

// runText runs p4 without -G and returns stdout.
func (a *Adapter) runText(ctx context.Context, global []string, args ...string) ([]byte, error) {
	var out []byte
	err := a.inSession(ctx, func() (err error) {
		out, err = a.runTextOnce(ctx, global, args...)
		return err
	})
	return out, err
}

func (a *Adapter) runTextOnce(ctx context.Context, global []string, args ...string) ([]byte, error) {
	cs, err := a.charsetArgs(ctx)
	if err != nil {
		return nil, err
	}
	cmd, err := a.command(ctx, append(cs, global...), args...)
	if err != nil {
		return nil, err
	}
	defer cmd.cancel()
	var stdout bytes.Buffer
	var stderr boundedBuffer
	stderr.max = maxStderr
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if err := cmd.ended(); err != nil {
			return nil, err
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, a.startError(err)
		}
		var msgs []serverError
		for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			if l != "" {
				msgs = append(msgs, serverError{msg: l, severity: 3})
			}
		}
		return nil, a.authError(&cmdError{cmd: args[0], msgs: msgs, err: err})
	}
	return stdout.Bytes(), nil
}

func (a *Adapter) startError(err error) error {
	return fmt.Errorf("run p4 (%s): %w", a.bin, err)
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			p = p[:room]
		}
		b.buf.Write(p)
	}
	return n, nil
}

func (b *boundedBuffer) String() string { return b.buf.String() }
