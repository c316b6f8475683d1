// Package secret is the one way aicr reads a secret: a config names an
// environment variable or a file (never the value itself), the secret is
// read when it is used so a rotated file needs no restart, and the value
// it yields prints as <secret> everywhere (fmt, JSON, TOML, slog) so it
// cannot reach a log, an IM message or the audit trail by accident.
//
// A secret file is read as a small regular file (ReadFile): a FIFO, a
// device or a huge file is refused with an error naming it, so a bad path
// can neither hang the daemon before it listens nor run it out of memory.
// Links are followed: the operator names these files in the daemon's own
// config, and Kubernetes secret volumes, Docker secrets and systemd
// credentials all present them through symlinks (/run/secrets,
// ..data/). Files the hook's account can write (the spool) are a different
// matter and are opened without following links where they are read.
//
// It is a leaf: it imports nothing from aicr.
package secret

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Redacted is how a Value prints.
const Redacted = "<secret>"

// Sentinel errors, for errors.Is.
var (
	// ErrNotConfigured: neither an env var nor a file is named.
	ErrNotConfigured = errors.New("no secret configured")
	// ErrUnset: the named environment variable is unset or blank.
	ErrUnset = errors.New("environment variable is unset or empty")
	// ErrEmpty: the named file holds nothing but whitespace.
	ErrEmpty = errors.New("secret file is empty")
	// ErrBoth: a config gave both an env var and a file.
	ErrBoth = errors.New("both an environment variable and a file are set")
	// ErrNotRegular: the path names a FIFO, a device, a directory or a
	// socket; reading one could block for ever or never end.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than a secret or a few settings can be.
	ErrTooLarge = errors.New("file is too large")
)

// MaxFileBytes bounds a secret file: a key, a token or a DSN is a line,
// a PEM key a few KiB.
const MaxFileBytes = 64 << 10

// Ref names where a secret lives: an environment variable or a file. A
// config gives one or the other, never both (Validate).
type Ref struct {
	Env  string
	File string
}

// IsZero reports whether no source is named.
func (r Ref) IsZero() bool { return r.Env == "" && r.File == "" }

// Validate checks the reference without reading it. prefix is the config
// key stem, so errors name the keys the operator wrote: "<prefix>_env" and
// "<prefix>_file". required says whether one of them must be set.
func (r Ref) Validate(prefix string, required bool) error {
	switch {
	case r.Env != "" && r.File != "":
		return fmt.Errorf("%s_env and %s_file: %w; keep one", prefix, prefix, ErrBoth)
	case required && r.IsZero():
		return fmt.Errorf("%s_env or %s_file: %w; set one", prefix, prefix, ErrNotConfigured)
	}
	return nil
}

// InDir resolves a relative File against dir (the config file's
// directory), so a config means the same thing from any working directory.
func (r Ref) InDir(dir string) Ref {
	if r.File != "" && dir != "" && !filepath.IsAbs(r.File) {
		r.File = filepath.Join(dir, r.File)
	}
	return r
}

// Read reads the secret now. Surrounding whitespace (the newline editors
// and `echo` leave, the indentation of a heredoc) is dropped: it is never
// part of a generated secret, and the daemon and the hook client must
// read the same file the same way. An empty result is an error,
// never an empty secret: an unset signing key must not silently turn
// signing off. Errors name the variable or the path and what to do, never
// the value.
func (r Ref) Read() (Value, error) {
	switch {
	case r.Env != "" && r.File != "":
		return Value{}, ErrBoth
	case r.Env != "":
		v := trim(os.Getenv(r.Env))
		if v == "" {
			return Value{}, &Error{Source: "environment variable " + r.Env, Err: ErrUnset,
				Hint: "export " + r.Env + " in the environment of the process that needs it"}
		}
		return Value{s: v}, nil
	case r.File != "":
		b, err := ReadFile(r.File, MaxFileBytes)
		if err != nil {
			return Value{}, err
		}
		v := trim(string(b))
		if v == "" {
			return Value{}, &Error{Source: "file " + r.File, Err: ErrEmpty,
				Hint: "write the secret into it"}
		}
		return Value{s: v}, nil
	}
	return Value{}, ErrNotConfigured
}

func trim(s string) string { return strings.TrimSpace(s) }

// ReadFile reads a small file the operator named (a secret, a headers
// file) of at most limit bytes. The open does not block (O_NONBLOCK: a
// FIFO with no writer would otherwise wait for ever, and SIGTERM with it),
// fstat must show a regular file, and no more than limit+1 bytes are ever
// read, so /dev/zero or a runaway log cannot exhaust memory. Links are
// followed (see the package comment). Errors are *Error, naming the path
// and what to do.
func ReadFile(path string, limit int64) ([]byte, error) {
	src := "file " + path
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		hint := "check the path and that this user may read it"
		if errors.Is(err, fs.ErrNotExist) {
			hint = "create the file or fix the path"
		}
		return nil, &Error{Source: src, Err: unwrapPath(err), Hint: hint}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{Source: src, Err: unwrapPath(err), Hint: "check the path and that this user may read it"}
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{Source: src, Err: fmt.Errorf("%w (it is %s)", ErrNotRegular, fileKind(fi.Mode())),
			Hint: "point the setting at a regular file holding only the value"}
	}
	tooLarge := &Error{Source: src, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit),
		Hint: "the file should hold only the value; check that the setting names the right file"}
	if fi.Size() > limit {
		return nil, tooLarge
	}
	// The size can change between fstat and read (a file being written).
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &Error{Source: src, Err: unwrapPath(err), Hint: "check the path and that this user may read it"}
	}
	if int64(len(b)) > limit {
		return nil, tooLarge
	}
	return b, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "not a plain file"
}

// unwrapPath keeps the cause of a *fs.PathError: Error already names the
// path, and printing it twice reads badly.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Error is a failed Read: which source, why, and what to do.
type Error struct {
	Source string // "environment variable X" or "file /path"
	Err    error
	Hint   string
}

func (e *Error) Error() string {
	msg := e.Source + ": " + e.Err.Error()
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Value is a secret read from a Ref. Its zero value is "no secret". It
// prints and marshals as <secret>; Reveal is the only way to the bytes,
// so every use of the real value is a visible, greppable call.
type Value struct {
	s string
}

// New wraps a value that did not come from a Ref (tests, generated keys).
func New(s string) Value { return Value{s: s} }

// Reveal returns the secret itself.
func (v Value) Reveal() string { return v.s }

// IsZero reports whether the value is empty.
func (v Value) IsZero() bool { return v.s == "" }

func (v Value) String() string   { return Redacted }
func (v Value) GoString() string { return Redacted }

// MarshalJSON implements json.Marshaler.
func (v Value) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler.
func (v Value) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// LogValue implements slog.LogValuer.
func (v Value) LogValue() slog.Value { return slog.StringValue(Redacted) }

// Format keeps %x, %q and friends from printing the value.
func (v Value) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(Redacted)) }

// minScrubLen is the shortest value Scrub replaces: replacing a shorter
// one would mangle the message without protecting anything.
const minScrubLen = 4

// Scrub replaces every occurrence of each value in text with <secret>.
// It is the one place aicr takes a credential back out of text it did not
// write (an error a server or SDK echoed, a platform's answer), so every
// such text reads the same placeholder. Longer values are replaced first,
// so a value that contains another is not left half visible.
func Scrub(text string, values ...string) string {
	vs := make([]string, 0, len(values))
	for _, v := range values {
		if len(v) >= minScrubLen {
			vs = append(vs, v)
		}
	}
	sort.SliceStable(vs, func(i, j int) bool { return len(vs[i]) > len(vs[j]) })
	for _, v := range vs {
		text = strings.ReplaceAll(text, v, Redacted)
	}
	return text
}

// Scrub replaces every occurrence of the value in text with <secret>.
func (v Value) Scrub(text string) string { return Scrub(text, v.s) }
