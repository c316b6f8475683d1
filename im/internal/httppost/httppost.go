// Package httppost is the one HTTP send path of the channels: it builds a
// POST, sends it once within the context's deadline, reads a bounded
// answer, classifies transport failures and HTTP statuses
// (im.ClassifyStatus), and keeps the URL's token and every secret out of
// every error text. Channels check their platform's body codes after it.
package httppost

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/secret"
)

// maxResponse bounds how much of an answer is read: the platforms answer
// with a few hundred bytes; anything larger is not them.
const maxResponse = 64 << 10

// Response is the platform's answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Request is one POST.
type Request struct {
	URL  string
	Body []byte
	// ContentType defaults to JSON.
	ContentType string
	// Header is added to the request (signatures, idempotency keys).
	Header http.Header
	// Secrets are redacted from errors and response excerpts, besides
	// the URL and its query values, which are always redacted.
	Secrets []string
}

// Post sends r once. A transport failure is a retryable *im.SendError
// (timeout or network); a non-2xx answer comes back with the Response and
// the *im.SendError from im.ClassifyStatus, its excerpt redacted. A 2xx
// answer returns a nil error: platforms that fail inside a 200 check the
// body themselves.
func Post(ctx context.Context, client *http.Client, r Request) (Response, error) {
	secrets := Secrets(r.URL, r.Secrets...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return Response{}, &im.SendError{Reason: im.ReasonClient,
			Err: errors.New("build request for " + RedactURL(r.URL))}
	}
	ct := r.ContentType
	if ct == "" {
		ct = "application/json; charset=utf-8"
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("User-Agent", "aicr")
	for k, vs := range r.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Response{}, TransportError(err, r.URL, secrets...)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return Response{}, TransportError(err, r.URL, secrets...)
	}
	out := Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if se := im.ClassifyStatus(resp.StatusCode, resp.Header, body); se != nil {
		se.Response = Redact(se.Response, secrets...)
		return out, se
	}
	return out, nil
}

// Excerpt is the answer's excerpt for a receipt, secrets redacted.
func (r Response) Excerpt(secrets ...string) string {
	return Redact(im.Excerpt(r.Body), secrets...)
}

// Secrets lists what to redact for a request to rawURL: the URL itself,
// its path and query (tokens live there) and each query value, plus the
// extra secrets given.
func Secrets(rawURL string, extra ...string) []string {
	out := append([]string{rawURL}, extra...)
	if u, err := url.Parse(rawURL); err == nil {
		out = append(out, u.RawQuery, u.Path)
		for _, vs := range u.Query() {
			out = append(out, vs...)
		}
	}
	return out
}

// TransportError classifies a failure before any answer: both a refused
// connection and a timeout are retryable, since the platform either never
// got the request or the retry is deduplicated. The text names only the
// URL's scheme and host; the cause stays visible to errors.Is.
func TransportError(err error, rawURL string, secrets ...string) *im.SendError {
	// *url.Error prints the full URL; keep only what it wraps.
	var ue *url.Error
	inner := err
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	msg := Redact(inner.Error(), Secrets(rawURL, secrets...)...)
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

// CheckURL rejects a URL that is not absolute http(s). The error never
// contains the URL: it carries the token.
func CheckURL(key, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return errors.New(key + ": not an absolute http(s) URL")
	}
	return nil
}

// RedactURL keeps only the scheme and host: robot webhooks carry their
// token in the path (Feishu, Slack) or the query (DingTalk, WeCom).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "<redacted url>"
	}
	return u.Scheme + "://" + u.Host + "/<redacted>"
}

// Redact replaces every occurrence of each secret in s with <secret>
// (secret.Scrub, the one owner of that rule: too-short values are left
// alone, longer values go first).
func Redact(s string, secrets ...string) string { return secret.Scrub(s, secrets...) }
