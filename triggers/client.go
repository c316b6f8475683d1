package triggers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	DefaultTimeout   = 2 * time.Second
	DefaultResendMax = 20
	// maxResponseBytes bounds what is read of a daemon answer; real ones
	// are tiny, and a hook must not be stalled by a misbehaving peer.
	maxResponseBytes = 64 << 10
)

// ClientConfig is what the notify client needs. It runs inside a VCS hook,
// so every field has a safe default and nothing here may block for long.
type ClientConfig struct {
	URL      string // daemon base URL, e.g. http://127.0.0.1:7878
	Secret   []byte
	SpoolDir string
	// Timeout bounds one delivery attempt, connect to response
	// (default 2s). The re-send of spooled events is bounded by 2*Timeout.
	Timeout time.Duration
	// ResendMax caps how many spooled events one notify re-sends
	// (default 20).
	ResendMax int
	// UnknownRepoRetry is how long a spooled event the daemon answers
	// unknown_repo for keeps being re-sent before it is moved to
	// rejected/ (default DefaultUnknownRepoRetry). A repo just added to the
	// config is unknown until the daemon is restarted.
	UnknownRepoRetry time.Duration
	// SpoolOnly, when set, is why the event must not be sent now (the
	// config could not be read, so the URL would be a guess): Notify
	// spools it and says so.
	SpoolOnly  string
	HTTPClient *http.Client // optional
}

// DefaultUnknownRepoRetry is how long unknown_repo events stay spooled.
const DefaultUnknownRepoRetry = 24 * time.Hour

// CodeUnknownRepo is the intake's error code for a repo the running
// daemon does not know. It is retryable: the repo may be in the config
// file already and the daemon not yet restarted.
const CodeUnknownRepo = "unknown_repo"

func (c ClientConfig) unknownRepoRetry() time.Duration {
	if c.UnknownRepoRetry > 0 {
		return c.UnknownRepoRetry
	}
	return DefaultUnknownRepoRetry
}

func (c ClientConfig) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c ClientConfig) resendMax() int {
	if c.ResendMax > 0 {
		return c.ResendMax
	}
	return DefaultResendMax
}

func (c ClientConfig) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return http.DefaultClient
}

// PostError is a failed POST of an event, classified once so Notify and the
// daemon's spool drain make the same retry decision.
type PostError struct {
	Status  int    // HTTP status; 0 when no response arrived
	Code    string // the daemon's error code, or timeout/unreachable/bad_response/http_<status>
	Message string // the daemon's error message or the transport error, without the URL
	// Permanent means re-sending the same event cannot succeed: the daemon
	// answered 4xx other than 408 and 429.
	Permanent bool
	Err       error // underlying transport error, if any
}

func (e *PostError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("daemon answered %d %s: %s", e.Status, e.Code, e.Message)
}

func (e *PostError) Unwrap() error { return e.Err }

// Post sends ev once, signed, bounded by cfg.Timeout. Any failure is a
// *PostError except missing configuration (ErrNoSecret, ErrNoURL).
func Post(ctx context.Context, cfg ClientConfig, ev Event) (Accepted, error) {
	if cfg.URL == "" {
		return Accepted{}, ErrNoURL
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout())
	defer cancel()
	req, err := NewSignedRequest(ctx, cfg.URL, cfg.Secret, ev, time.Now())
	if err != nil {
		return Accepted{}, err
	}
	resp, err := cfg.httpClient().Do(req)
	if err != nil {
		return Accepted{}, transportError(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return Accepted{}, transportError(ctx, err)
	}
	if resp.StatusCode == http.StatusAccepted {
		var acc Accepted
		if err := json.Unmarshal(body, &acc); err != nil {
			return Accepted{}, &PostError{Status: resp.StatusCode, Code: "bad_response", Message: "202 body is not an event receipt: " + err.Error()}
		}
		return acc, nil
	}
	return Accepted{}, statusError(resp.StatusCode, body)
}

// ErrNoURL means the client has no daemon URL configured.
var ErrNoURL = errors.New("no daemon URL configured")

func statusError(status int, body []byte) *PostError {
	de := &PostError{
		Status:    status,
		Code:      fmt.Sprintf("http_%d", status),
		Permanent: status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests,
	}
	var eb ErrorBody
	if json.Unmarshal(body, &eb) == nil && (eb.Code != "" || eb.Error != "") {
		if eb.Code != "" {
			de.Code = eb.Code
		}
		de.Message = eb.Error
		// unknown_repo waits for a daemon restart; replayed means the same
		// bytes were signed within the same second (two hooks re-sending
		// one spooled event) and the next attempt is signed afresh.
		if eb.Code == CodeUnknownRepo || eb.Code == "replayed" {
			de.Permanent = false
		}
	} else {
		de.Message = strings.TrimSpace(string(body))
		if len(de.Message) > 200 {
			de.Message = de.Message[:200] + "..."
		}
		if de.Message == "" {
			de.Message = http.StatusText(status)
		}
	}
	return de
}

// transportError drops the URL that *url.Error repeats, because callers
// name the daemon once themselves (with credentials redacted).
func transportError(ctx context.Context, err error) *PostError {
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || (ue != nil && ue.Timeout()) {
		return &PostError{Code: "timeout", Message: "no answer in time: " + inner.Error(), Err: err}
	}
	return &PostError{Code: "unreachable", Message: inner.Error(), Err: err}
}

// Outcome is what one Notify did. Err is why the event was not delivered;
// when Err is set and Spooled is empty the event was lost (and said so on
// stderr).
type Outcome struct {
	Delivered bool
	EventID   int64
	Spooled   string // full path of the spool file written for this event
	Resent    int    // older spooled events delivered and removed
	Rejected  int    // older spooled events moved to the rejected dir
	Err       error
}

// Notify delivers ev or spools it. It is what a hook runs, so it never
// blocks much longer than cfg.Timeout (3*Timeout with the re-send) and
// reports problems only on stderr, one line each; the caller should exit 0
// whatever the Outcome says.
func Notify(ctx context.Context, cfg ClientConfig, ev Event, stderr io.Writer) Outcome {
	if stderr == nil {
		stderr = io.Discard
	}
	if ev.SentAt.IsZero() {
		ev.SentAt = time.Now().UTC()
	}
	if ev.V == 0 {
		ev.V = ProtocolVersion
	}
	if ev.Source == "" {
		ev.Source = SourceTrigger
	}
	what := fmt.Sprintf("%s %s@%s", ev.VCS, ev.Repo, ev.Revision)
	daemon := redactURL(cfg.URL)

	var acc Accepted
	var err error
	if cfg.SpoolOnly != "" {
		err = errors.New(cfg.SpoolOnly)
	} else {
		acc, err = Post(ctx, cfg, ev)
	}
	if err == nil {
		out := Outcome{Delivered: true, EventID: acc.EventID}
		out.Resent, out.Rejected = resend(ctx, cfg, stderr)
		return out
	}

	var reason string
	switch {
	case errors.Is(err, ErrNoSecret):
		reason = "no shared secret is configured, so nothing was sent; set the daemon's secret in the aicr config this hook uses"
	case errors.Is(err, ErrNoURL):
		reason = "no daemon URL is configured; set it in the aicr config this hook uses"
	default:
		reason = oneLine(err.Error())
	}
	out := Outcome{Err: err}
	spool := Spool{Dir: cfg.SpoolDir, Secret: cfg.Secret}
	name, spoolErr := spool.Write(ev)
	if spoolErr != nil {
		out.Err = errors.Join(err, fmt.Errorf("spool: %w", spoolErr))
		fmt.Fprintf(stderr, "aicr notify: %s NOT RECORDED: daemon %s: %s; spooling to %q also failed: %s\n",
			what, daemon, reason, cfg.SpoolDir, oneLine(spoolErr.Error()))
		return out
	}
	out.Spooled = spool.Path(name)
	fmt.Fprintf(stderr, "aicr notify: %s not delivered to daemon %s: %s; spooled to %s\n", what, daemon, reason, out.Spooled)
	if len(cfg.Secret) == 0 {
		fmt.Fprintf(stderr, "aicr notify: %s was spooled UNSIGNED because the hook has no secret; the daemon will move it to %s: fix the secret, then re-send the revision with aicr review\n", what, spool.Path(RejectedDir))
	}
	return out
}

// resend delivers older spooled events now that the daemon answers. It
// stops at the first failure that is not permanent: the daemon is
// struggling and its own spool drain will pick the rest up.
func resend(ctx context.Context, cfg ClientConfig, stderr io.Writer) (resent, rejected int) {
	spool := Spool{Dir: cfg.SpoolDir, Secret: cfg.Secret}
	if cfg.SpoolDir == "" || len(cfg.Secret) == 0 {
		return 0, 0
	}
	names, err := spool.List()
	if err != nil {
		fmt.Fprintf(stderr, "aicr notify: re-send spooled events: %s\n", oneLine(err.Error()))
		return 0, 0
	}
	ctx, cancel := context.WithTimeout(ctx, 2*cfg.timeout())
	defer cancel()
	attempts := 0
	for _, name := range names {
		if attempts >= cfg.resendMax() || ctx.Err() != nil {
			return resent, rejected
		}
		ev, spooledAt, err := spool.Read(name)
		if errors.Is(err, ErrCorruptSpoolFile) {
			rejected++
			fmt.Fprintf(stderr, "aicr notify: %s\n", oneLine(err.Error()))
			continue
		}
		if err != nil {
			// Most likely a concurrent drain took it; nothing to do.
			continue
		}
		attempts++
		ev.Source = SourceSpool
		_, err = Post(ctx, cfg, ev)
		var de *PostError
		switch {
		case err == nil:
			if err := spool.Remove(name); err != nil {
				fmt.Fprintf(stderr, "aicr notify: re-sent %s but could not remove it (the daemon will ignore the duplicate): %s\n", spool.Path(name), oneLine(err.Error()))
			}
			resent++
		case errors.As(err, &de) && de.Code == CodeUnknownRepo && time.Since(spooledAt) < cfg.unknownRepoRetry():
			// Other repos' events may go through; this one waits for the
			// daemon to be restarted with the new [[repo]].
			fmt.Fprintf(stderr, "aicr notify: spooled %s kept: %s\n", name, oneLine(de.Message))
		case errors.As(err, &de) && (de.Permanent || de.Code == CodeUnknownRepo):
			if err := spool.Reject(name, de.Error()); err != nil {
				fmt.Fprintf(stderr, "aicr notify: daemon refused %s (%s) and moving it aside failed: %s\n", spool.Path(name), oneLine(de.Error()), oneLine(err.Error()))
				return resent, rejected
			}
			rejected++
			fmt.Fprintf(stderr, "aicr notify: daemon refused spooled %s; moved to %s: %s\n", name, spool.Path(RejectedDir), oneLine(de.Error()))
		default:
			fmt.Fprintf(stderr, "aicr notify: stopped re-sending spooled events at %s: %s\n", name, oneLine(err.Error()))
			return resent, rejected
		}
	}
	return resent, rejected
}

// redactURL hides any user:password in the configured URL.
func redactURL(raw string) string {
	if raw == "" {
		return "(none)"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// oneLine keeps daemon-supplied text from breaking the one-line-per-problem
// log format of the hook's stderr.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
