package p4

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrUntrusted means the p4 client refused an ssl: server whose key its
// trust file (P4TRUST) does not hold, or holds a different one of. It is
// not vcs.IsTransient: only an operator can vouch for a key (the daemon
// still retries the run with back-off, as after ErrAuth).
var ErrUntrusted = errors.New("perforce server not trusted")

// Texts of the p4 client (msgs/msgrpc.cc) refusing an ssl: server.
const (
	trustAllowMsg   = "To allow connection use the 'p4 trust' command."
	trustChangedMsg = "IDENTIFICATION HAS CHANGED"
)

// fingerprintRe is the colon-separated hex of a key fingerprint as p4
// prints it (SHA-1: 20 bytes; SHA-256 servers: 32).
var fingerprintRe = regexp.MustCompile(`\b(?:[0-9A-Fa-f]{2}:){19}(?:[0-9A-Fa-f]{2}:){0,12}[0-9A-Fa-f]{2}\b`)

// checkFingerprint validates ssl_fingerprint against port.
func checkFingerprint(fp, port string) error {
	if fp == "" {
		return nil
	}
	if !strings.HasPrefix(port, "ssl") {
		return fmt.Errorf("ssl_fingerprint: port %q is not an ssl: port; remove ssl_fingerprint or use ssl:host:port", port)
	}
	if m := fingerprintRe.FindString(fp); m != fp || (len(fp) != 59 && len(fp) != 95) {
		return fmt.Errorf("ssl_fingerprint %q: want the fingerprint as p4 prints it, 20 or 32 hex pairs separated by colons (AB:CD:...)", fp)
	}
	return nil
}

// authErr is ErrAuth for one server message, kept so inSession can tell
// an expired ticket (log in again) from other refusals.
type authErr struct {
	msg string
	err error
}

func (e *authErr) Error() string { return e.err.Error() }
func (e *authErr) Unwrap() error { return e.err }

// trustErr is ErrUntrusted; changed: the trust file holds another key
// for the server (never cured automatically).
type trustErr struct {
	changed bool
	err     error
}

func (e *trustErr) Error() string { return e.err.Error() }
func (e *trustErr) Unwrap() error { return e.err }

// trustError turns the client's refusal of an ssl: server into
// ErrUntrusted with the fingerprint and the exact cure, or nil.
func (a *Adapter) trustError(ce *cmdError) error {
	if !ce.says(trustAllowMsg) {
		return nil
	}
	var text []string
	for _, m := range ce.msgs {
		text = append(text, m.msg)
	}
	fp := strings.ToUpper(fingerprintRe.FindString(strings.Join(text, "\n")))
	env := ""
	if a.cfg.P4TrustFile != "" {
		env = "P4TRUST=" + a.cfg.P4TrustFile + " "
	}
	if ce.says(trustChangedMsg) {
		return &trustErr{changed: true, err: fmt.Errorf("%w: p4 %s: the key of %s CHANGED (it now presents %s); this can be an interception. "+
			"Ask the Perforce administrator whether the key was replaced (on the server: p4d -Gf prints it); only then run, as the daemon's user, "+
			"`%sp4 -p %s trust -r -i %s` and `%sp4 -p %s trust -f -y`, or set ssl_fingerprint = %q in the [[repo]]",
			ErrUntrusted, ce.cmd, a.cfg.Port, fp, env, a.cfg.Port, fp, env, a.cfg.Port, fp)}
	}
	return &trustErr{err: fmt.Errorf("%w: p4 %s: the p4 client does not know the key of %s yet (fingerprint %s). "+
		"Confirm it with the Perforce administrator (on the server: p4d -Gf prints it), then set ssl_fingerprint = %q in the [[repo]], "+
		"or run as the daemon's user `%sp4 -p %s trust -i %s`%s",
		ErrUntrusted, ce.cmd, a.cfg.Port, fp, fp, env, a.cfg.Port, fp, trustFileHint(a.cfg.P4TrustFile))}
}

func trustFileHint(f string) string {
	if f != "" {
		return ""
	}
	return " (it writes ~/.p4trust of that user; p4trust_file names another file)"
}

// ticketMode: a password and a tickets file are both configured, so the
// password is only used to log in again, and commands use the ticket.
func (a *Adapter) ticketMode() bool {
	return a.cfg.TicketFile != "" && (a.cfg.PasswordFile != "" || a.cfg.PasswordEnv != "")
}

// inSession runs op and, when it failed for a reason aicr can cure by
// itself, cures it and runs op again: a server the trust file does not
// know yet (with ssl_fingerprint: `p4 trust -i`), a ticket that expired
// (with a password and ticket_file: `p4 login`). Each cure is tried at
// most once per call (a new server needs both, in that order); anything
// else, or a failure a cure did not fix, is returned as it is.
func (a *Adapter) inSession(ctx context.Context, op func() error) error {
	trusted, loggedIn := false, false
	for {
		err := op()
		if err == nil {
			return nil
		}
		var cured error
		var ae *authErr
		var te *trustErr
		switch {
		case errors.As(err, &te) && !te.changed && a.cfg.SSLFingerprint != "" && !trusted:
			trusted = true
			cured = a.installFingerprint(ctx)
		case errors.As(err, &ae) && a.ticketMode() && ae.msg != "Password invalid." && !loggedIn:
			loggedIn = true
			cured = a.loginAgain(ctx)
		default:
			return err
		}
		if cured != nil {
			return fmt.Errorf("%w (and %v)", err, cured) //nolint:errorlint // the server's error is the outcome; the failed cure is detail, so its errors do not classify the call
		}
	}
}

// loginAgain runs `p4 login` with the configured password on stdin,
// writing a fresh ticket into ticket_file. Concurrent fetches that found
// the ticket expired log in one at a time.
func (a *Adapter) loginAgain(ctx context.Context) error {
	a.sessionMu.Lock()
	defer a.sessionMu.Unlock()
	pw, err := a.cfg.password()
	if err != nil {
		return err
	}
	cmd, err := a.command(ctx, nil, "login")
	if err != nil {
		return err
	}
	defer cmd.cancel()
	cmd.Stdin = strings.NewReader(pw + "\n")
	var stderr boundedBuffer
	stderr.max = maxStderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if err := cmd.ended(); err != nil {
			return err
		}
		return fmt.Errorf("p4 login with %s failed: %s: check the password for %s on %s",
			orDefault(a.cfg.PasswordFile, "$"+a.cfg.PasswordEnv), strings.TrimSpace(stderr.String()), a.cfg.User, a.cfg.Port)
	}
	return nil
}

// installFingerprint writes the pinned ssl_fingerprint into the trust
// file (`p4 trust -i`); p4 then connects only if the server's key is
// that one.
func (a *Adapter) installFingerprint(ctx context.Context) error {
	a.sessionMu.Lock()
	defer a.sessionMu.Unlock()
	cmd, err := a.command(ctx, nil, "trust", "-i", strings.ToUpper(a.cfg.SSLFingerprint))
	if err != nil {
		return err
	}
	defer cmd.cancel()
	var out boundedBuffer
	out.max = maxStderr
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if err := cmd.ended(); err != nil {
			return err
		}
		return fmt.Errorf("p4 trust -i %s: %s", a.cfg.SSLFingerprint, strings.TrimSpace(out.String()))
	}
	return nil
}
