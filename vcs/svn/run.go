package svn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// maxStderr bounds how much of svn's stderr ends up in an error message.
const maxStderr = 4 << 10

// cmdError is a failed svn invocation with what svn said about it.
type cmdError struct {
	sub    string
	err    error
	stderr string
}

func (e *cmdError) Error() string {
	if e.stderr == "" {
		return fmt.Sprintf("svn %s: %v", e.sub, e.err)
	}
	return fmt.Sprintf("svn %s: %v: %s", e.sub, e.err, e.stderr)
}

func (e *cmdError) Unwrap() error { return e.err }

// has reports whether svn printed the given error or warning code
// (E160006, W160013...). Codes are stable across locales and versions;
// messages are not.
func (e *cmdError) has(code string) bool { return strings.Contains(e.stderr, code+":") }

func svnSays(err error, code string) bool {
	ce, ok := err.(*cmdError)
	return ok && ce.has(code)
}

// run executes `svn sub args...` with stdout going to stdout.
func (a *Adapter) run(ctx context.Context, stdout io.Writer, sub string, args ...string) error {
	argv := []string{sub, "--non-interactive"}
	if a.cfg.ConfigDir != "" {
		argv = append(argv, "--config-dir", a.cfg.ConfigDir)
	}
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, a.svn, argv...)
	// C.UTF-8 makes svn print paths as UTF-8 instead of "?\228" escapes
	// and keeps its messages in English for the code matching above.
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	cmd.Stdout = stdout
	stderr := &boundedBuffer{max: maxStderr}
	cmd.Stderr = stderr
	// svn+ssh leaves an ssh child that may hold the pipes open after svn
	// is killed; don't wait for it forever.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("svn %s: %w", sub, ctx.Err())
		}
		return &cmdError{sub: sub, err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return nil
}

// output runs svn and returns its stdout.
func (a *Adapter) output(ctx context.Context, sub string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	err := a.run(ctx, &out, sub, args...)
	return out.Bytes(), err
}

// boundedBuffer keeps the first max bytes written to it and drops the
// rest, so a chatty child cannot grow an error message without bound.
type boundedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string { return b.buf.String() }

// limitWriter passes at most max bytes to w; past that it records the
// overflow and cancels the command so svn stops sending.
type limitWriter struct {
	w        io.Writer
	left     int64
	exceeded bool
	cancel   context.CancelFunc
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		l.exceeded = true
		l.cancel()
		return 0, errTooLarge
	}
	l.left -= int64(len(p))
	return l.w.Write(p)
}

var errTooLarge = errors.New("output over size limit")
