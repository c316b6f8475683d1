// Package botpost is the transport shared by the webhook-robot channels
// (Feishu, DingTalk, WeCom): secrets from *_env / *_file keys, one JSON
// POST per part with the URL's token kept out of every error, and the
// loop that sends the parts of a split report in order.
package botpost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/aicr-dev/aicr/im"
)

// SecretKeys validates one secret given as <prefix>_env or
// <prefix>_file: at most one of them, and one if required.
func SecretKeys(prefix, env, file string, required bool) error {
	switch {
	case env != "" && file != "":
		return &im.ConfigError{Key: prefix + "_env", Err: im.ErrInvalidValue,
			Hint: "set " + prefix + "_env or " + prefix + "_file, not both"}
	case required && env == "" && file == "":
		return &im.ConfigError{Key: prefix + "_env", Err: im.ErrRequired,
			Hint: "or " + prefix + "_file"}
	}
	return nil
}

// ReadSecret reads the secret named by env (an environment variable) or
// file (relative paths against baseDir). Surrounding whitespace, such as
// the newline editors leave, is dropped. Errors name the key, never the
// value. Both empty returns "".
func ReadSecret(prefix, env, file, baseDir string) (string, error) {
	switch {
	case env != "":
		v := strings.TrimSpace(os.Getenv(env))
		if v == "" {
			return "", fmt.Errorf("%s_env: environment variable %s is empty or unset", prefix, env)
		}
		return v, nil
	case file != "":
		if !filepath.IsAbs(file) && baseDir != "" {
			file = filepath.Join(baseDir, file)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s_file: %w", prefix, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("%s_file: %s is empty", prefix, file)
		}
		return v, nil
	}
	return "", nil
}

// CheckWebhookURL rejects a webhook URL that is not absolute http(s).
// The error never contains the URL: it carries the token.
func CheckWebhookURL(prefix, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%s: not an absolute http(s) URL", prefix)
	}
	return nil
}

// RedactURL keeps only the scheme and host: robot webhooks carry their
// token in the path (Feishu) or the query (DingTalk, WeCom).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "<redacted url>"
	}
	return u.Scheme + "://" + u.Host + "/<redacted>"
}

// Redact replaces every occurrence of each secret in s. Secrets shorter
// than 4 bytes are skipped: replacing them would mangle the message
// without protecting anything.
func Redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "<redacted>")
		}
	}
	return s
}

// maxResponse bounds how much of a response is read: the platforms
// answer with a few hundred bytes; anything larger is not them.
const maxResponse = 64 << 10

// Response is the platform's answer to one part.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Post sends body as JSON to rawURL, once. Transport failures come back
// as a retryable *im.SendError whose text has the URL and secrets
// redacted; HTTP statuses are classified by the caller.
func Post(ctx context.Context, client *http.Client, rawURL string, body []byte, secrets ...string) (Response, error) {
	secrets = append(secrets, rawURL)
	if u, err := url.Parse(rawURL); err == nil {
		secrets = append(secrets, u.RawQuery, u.Path)
		for _, vs := range u.Query() {
			secrets = append(secrets, vs...)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return Response{}, &im.SendError{Reason: im.ReasonClient,
			Err: errors.New("build request for " + RedactURL(rawURL))}
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := client.Do(req)
	if err != nil {
		return Response{}, transportError(err, rawURL, secrets)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return Response{}, transportError(err, rawURL, secrets)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

func transportError(err error, rawURL string, secrets []string) *im.SendError {
	// *url.Error prints the full URL; keep only what it wraps.
	var ue *url.Error
	inner := err
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	msg := Redact(inner.Error(), secrets...)
	wrapped := &redactedError{msg: "post " + RedactURL(rawURL) + ": " + msg, cause: inner}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &im.SendError{Reason: im.ReasonTimeout, Retryable: true, Err: wrapped}
	}
	return &im.SendError{Reason: im.ReasonNetwork, Retryable: true, Err: wrapped}
}

// redactedError prints a redacted message but keeps the cause for
// errors.Is (context.Canceled, DeadlineExceeded).
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// Limits is a platform's request rate for one robot, as token buckets
// that must all allow a request. Each bucket's burst plus a window's
// refill stays under the platform's count for that window, so a
// sliding-window limiter on the platform side never trips.
type Limits []*rate.Limiter

// Wait blocks until every bucket allows one more request, or ctx ends.
func (l Limits) Wait(ctx context.Context) error {
	for _, lim := range l {
		if err := lim.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// PerWindow returns a bucket allowing at most n requests in any window,
// with the given burst (burst < n).
func PerWindow(n int, window time.Duration, burst int) *rate.Limiter {
	perSec := float64(n-burst) / window.Seconds()
	return rate.NewLimiter(rate.Limit(perSec), burst)
}

// Part is one request of a split report, ready to send.
type Part struct {
	// Send makes the request and checks the platform's answer, returning
	// the response excerpt for the receipt.
	Send func(ctx context.Context) (Response, error)
	// Rendered is the body as sent, for the audit trail.
	Rendered string
}

// SendParts sends parts in order, starting after the first delivered
// ones (msg.PartsDelivered from an earlier attempt), one request each,
// waiting on limits before every request. It stops at the first failure
// and records in the *im.SendError how many parts are delivered so a
// retry resumes there. The receipt's Rendered joins every part,
// including those sent by earlier attempts, so the audit row shows the
// whole report.
func SendParts(ctx context.Context, parts []Part, delivered int, limits Limits) (im.Receipt, error) {
	rec := im.Receipt{Parts: len(parts)}
	rendered := make([]string, len(parts))
	for i, p := range parts {
		rendered[i] = p.Rendered
	}
	rec.Rendered = strings.Join(rendered, "\n")
	if delivered < 0 || delivered >= len(parts) {
		delivered = 0
	}
	for i := delivered; i < len(parts); i++ {
		if err := limits.Wait(ctx); err != nil {
			return rec, &im.SendError{Reason: im.ReasonTimeout, Retryable: true, PartsDelivered: i,
				Err: fmt.Errorf("part %d/%d: wait for rate limit: %w", i+1, len(parts), err)}
		}
		resp, err := parts[i].Send(ctx)
		if err != nil {
			var se *im.SendError
			if !errors.As(err, &se) {
				se = &im.SendError{Reason: im.ReasonClient, Err: err}
			}
			se.PartsDelivered = i
			if len(parts) > 1 {
				se.Err = &partError{part: i + 1, total: len(parts), err: se.Err}
			}
			return rec, se
		}
		rec.StatusCode = resp.Status
		rec.Response = im.Excerpt(resp.Body)
	}
	return rec, nil
}

type partError struct {
	part, total int
	err         error
}

func (e *partError) Error() string {
	msg := fmt.Sprintf("part %d/%d", e.part, e.total)
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}
func (e *partError) Unwrap() error { return e.err }

// Encode serializes v as the platforms receive it: no HTML escaping
// (Chinese and '<' stay as they are, so the byte count is the real one)
// and no trailing newline.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// WebhookKeys are the [[channel]] keys every custom-bot webhook kind has:
// the webhook URL (which carries the bot's token, so it is a secret), an
// optional signing secret and the cap on split parts. Kinds embed it so
// the keys, their validation and how they are read exist once.
type WebhookKeys struct {
	WebhookURLEnv  string `toml:"webhook_url_env"`
	WebhookURLFile string `toml:"webhook_url_file"`
	// The signing secret, for bots whose security setting signs requests.
	SecretEnv  string `toml:"secret_env"`
	SecretFile string `toml:"secret_file"`
	// MaxParts caps how many messages one report becomes (default 5).
	MaxParts int `toml:"max_parts"`
}

// Validate checks the keys without reading any secret. signable is false
// for platforms that have no signing scheme, where a secret is a mistake.
func (k WebhookKeys) Validate(signable bool) error {
	errs := []error{SecretKeys("webhook_url", k.WebhookURLEnv, k.WebhookURLFile, true)}
	if signable {
		errs = append(errs, SecretKeys("secret", k.SecretEnv, k.SecretFile, false))
	} else if k.SecretEnv != "" || k.SecretFile != "" {
		errs = append(errs, &im.ConfigError{Key: "secret_env", Err: im.ErrInvalidValue, Hint: "this platform does not sign requests; remove secret_env/secret_file"})
	}
	if k.MaxParts < 0 || k.MaxParts > 20 {
		errs = append(errs, &im.ConfigError{Key: "max_parts", Err: im.ErrInvalidValue, Hint: "between 1 and 20"})
	}
	return errors.Join(errs...)
}

// Read resolves the webhook URL and the secret (empty when unset).
func (k WebhookKeys) Read(baseDir string) (webhookURL, secret string, err error) {
	if webhookURL, err = ReadSecret("webhook_url", k.WebhookURLEnv, k.WebhookURLFile, baseDir); err != nil {
		return "", "", err
	}
	if secret, err = ReadSecret("secret", k.SecretEnv, k.SecretFile, baseDir); err != nil {
		return "", "", err
	}
	return webhookURL, secret, nil
}
