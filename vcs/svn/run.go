package svn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/secret"
	"github.com/aicr-dev/aicr/vcs"
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

// Unwrap lets errors.Is see both the process error and, when svn said it
// could not reach the server, vcs.ErrUnavailable.
func (e *cmdError) Unwrap() []error {
	if e.unreachable() {
		return []error{e.err, vcs.ErrUnavailable}
	}
	return []error{e.err}
}

// unreachableCodes are the svn errors that mean the server or the network
// failed, not the request: connection refused/reset, name resolution,
// "unable to connect", a connection closed mid-answer, DAV/serf transport
// failures.
var unreachableCodes = []string{"E170013", "E000111", "E000104", "E000110", "E670002", "E670008", "E210002", "E175002", "E120108", "E120171"}

func (e *cmdError) unreachable() bool {
	for _, c := range unreachableCodes {
		if e.has(c) {
			return true
		}
	}
	return false
}

// has reports whether svn printed the given error or warning code
// (E160006, W160013...). Codes are stable across locales and versions;
// messages are not.
func (e *cmdError) has(code string) bool { return strings.Contains(e.stderr, code+":") }

func svnSays(err error, code string) bool {
	var ce *cmdError
	return errors.As(err, &ce) && ce.has(code)
}

// run executes `svn sub args...` with stdout going to stdout, with the
// adapter's config dir, credentials and certificate trust.
func (a *Adapter) run(ctx context.Context, stdout io.Writer, sub string, args ...string) error {
	return a.runTool(ctx, a.svn, stdout, sub, args...)
}

// runTool is run for svn or svnrdump, which take the same options.
func (a *Adapter) runTool(ctx context.Context, bin string, stdout io.Writer, sub string, args ...string) error {
	argv := []string{sub, "--non-interactive", "--no-auth-cache", "--config-dir", a.configDir}
	if a.cfg.TrustServerCertFailures != "" {
		argv = append(argv, "--trust-server-cert-failures="+strings.ReplaceAll(a.cfg.TrustServerCertFailures, " ", ""))
	}
	var stdin io.Reader
	if a.cfg.Username != "" {
		argv = append(argv, "--username", a.cfg.Username)
		pw, ok, err := a.password()
		if err != nil {
			return err
		}
		if ok {
			argv = append(argv, "--password-from-stdin")
			stdin = strings.NewReader(pw)
		}
	}
	argv = append(argv, args...)
	return a.exec(ctx, bin, stdout, stdin, argv)
}

// look executes `svnlook sub -r rev repo args...`; svnlook reads the
// repository's files directly and needs no credentials.
func (a *Adapter) look(ctx context.Context, stdout io.Writer, sub string, rev int64, args ...string) error {
	argv := []string{sub}
	if rev > 0 {
		argv = append(argv, "-r", strconv.FormatInt(rev, 10))
	}
	argv = append(append(argv, a.cfg.LocalPath), args...)
	return a.exec(ctx, a.svnlook, stdout, nil, argv)
}

func (a *Adapter) exec(ctx context.Context, bin string, stdout io.Writer, stdin io.Reader, argv []string) error {
	return a.execIn(ctx, "", bin, stdout, stdin, argv)
}

// execIn is exec in directory dir ("" for this process's): a working
// copy is read from inside it.
func (a *Adapter) execIn(ctx context.Context, dir, bin string, stdout io.Writer, stdin io.Reader, argv []string) error {
	name := filepath.Base(bin) + " " + argv[0]
	a.count(name)
	cmdCtx, cancel := vcs.WithTimeout(ctx, a.cfg.CommandTimeout)
	defer cancel()
	// C.UTF-8 makes svn print paths as UTF-8 instead of "?\228" escapes
	// and keeps its messages in English for the code matching above.
	cmd := vcs.Command(cmdCtx, bin, argv, vcs.ChildEnv("LC_ALL=C.UTF-8"))
	cmd.Dir = dir
	cmd.Stdin = stdin
	cmd.Stdout = stdout
	stderr := &boundedBuffer{max: maxStderr}
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		if cerr := vcs.CommandError(ctx, cmdCtx, name, a.cfg.CommandTimeout); cerr != nil {
			return cerr
		}
		return &cmdError{sub: name, err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return nil
}

// output runs svn and returns its stdout.
func (a *Adapter) output(ctx context.Context, sub string, args ...string) ([]byte, error) {
	var out bytes.Buffer
	err := a.run(ctx, &out, sub, args...)
	return out.Bytes(), err
}

// password reads the configured password at use, so a rotated file is
// picked up without a restart. ok is false when none is configured.
func (a *Adapter) password() (string, bool, error) {
	ref := secret.Ref{Env: a.cfg.PasswordEnv, File: a.cfg.PasswordFile}
	if ref.IsZero() {
		return "", false, nil
	}
	v, err := ref.Read()
	if err != nil {
		return "", false, fmt.Errorf("%w: password: %w", ErrNoPassword, err)
	}
	return v.Reveal(), true, nil
}

// ErrNoPassword is wrapped when the configured password cannot be read.
var ErrNoPassword = errors.New("svn password unavailable")

func (a *Adapter) count(name string) {
	a.countMu.Lock()
	a.counts[name]++
	a.countMu.Unlock()
}

// ProcessCounts returns how many child processes the adapter started,
// by "tool subcommand" ("svn diff", "svnlook cat"). Benchmarks and tests
// use it to check that metadata and diff cost does not grow per file.
func (a *Adapter) ProcessCounts() map[string]int {
	a.countMu.Lock()
	defer a.countMu.Unlock()
	out := make(map[string]int, len(a.counts))
	for k, v := range a.counts {
		out[k] = v
	}
	return out
}

// ResetProcessCounts zeroes the counters.
func (a *Adapter) ResetProcessCounts() {
	a.countMu.Lock()
	a.counts = map[string]int{}
	a.countMu.Unlock()
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
