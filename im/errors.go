package im

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Reason classifies a failed delivery, for retry decisions and metrics.
type Reason string

const (
	ReasonAuth        Reason = "auth"         // bad token, bad signature: permanent
	ReasonRateLimited Reason = "rate_limited" // 429 or the platform's own code: retry later
	ReasonClient      Reason = "client"       // the request was wrong: permanent
	ReasonServer      Reason = "server"       // 5xx or the platform's busy code: retry
	ReasonTimeout     Reason = "timeout"      // no answer in time: retry
	ReasonNetwork     Reason = "network"      // connect failed before the request was written: retry
	ReasonTooLarge    Reason = "too_large"    // over the limit even after splitting: permanent
)

// SendError is a classified delivery failure. Channels return it from Send
// so one dispatcher decides about retries for every platform.
type SendError struct {
	Reason    Reason
	Retryable bool
	// RetryAfter is the platform's requested wait (Retry-After), if any.
	RetryAfter time.Duration
	// StatusCode is the HTTP status; PlatformCode the code in the body
	// (Feishu code, DingTalk/WeCom errcode, Slack error string).
	StatusCode   int
	PlatformCode string
	// Response is an excerpt of the response body, secrets excluded.
	Response string
	// MessageID is set when part of a multi-part delivery already went
	// out (Slack: the summary's ts), so the retry can continue from it.
	MessageID string
	// PartsDelivered counts the parts of a split report that reached the
	// platform, earlier attempts included, before this failure. The
	// dispatcher copies it into Message.PartsDelivered for the retry.
	PartsDelivered int
	Err            error
}

func (e *SendError) Error() string {
	msg := string(e.Reason)
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.StatusCode)
	}
	if e.PlatformCode != "" {
		msg += " code " + e.PlatformCode
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *SendError) Unwrap() error { return e.Err }

// IsRetryable reports whether err is worth another attempt, and how long
// the platform asked to wait. Unclassified errors are not retried: a
// channel that cannot say is treated as having failed for good.
func IsRetryable(err error) (bool, time.Duration) {
	var se *SendError
	if errors.As(err, &se) {
		return se.Retryable, se.RetryAfter
	}
	return false, 0
}

// ClassifyStatus is the one place HTTP statuses map to retry decisions:
// 2xx is success (nil), 429 and 5xx are retryable (429 honours
// Retry-After), 408 is a retryable timeout, 401/403 are auth failures and
// other 4xx are permanent client errors. Platforms that report errors
// inside a 200 check their body codes after this.
func ClassifyStatus(status int, header http.Header, body []byte) *SendError {
	excerpt := Excerpt(body)
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusTooManyRequests:
		return &SendError{Reason: ReasonRateLimited, Retryable: true, RetryAfter: RetryAfter(header), StatusCode: status, Response: excerpt}
	case status == http.StatusRequestTimeout:
		return &SendError{Reason: ReasonTimeout, Retryable: true, StatusCode: status, Response: excerpt}
	case status >= 500:
		return &SendError{Reason: ReasonServer, Retryable: true, RetryAfter: RetryAfter(header), StatusCode: status, Response: excerpt}
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &SendError{Reason: ReasonAuth, StatusCode: status, Response: excerpt}
	case status == http.StatusRequestEntityTooLarge:
		return &SendError{Reason: ReasonTooLarge, StatusCode: status, Response: excerpt}
	default:
		return &SendError{Reason: ReasonClient, StatusCode: status, Response: excerpt}
	}
}

// RetryAfter parses a Retry-After header in seconds or as an HTTP date.
func RetryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// maxExcerpt bounds response bodies kept for the audit trail.
const maxExcerpt = 512

// Excerpt returns the start of a response body as valid UTF-8, for logs
// and the audit trail.
func Excerpt(body []byte) string {
	if len(body) > maxExcerpt {
		body = body[:maxExcerpt]
	}
	return Sanitize(string(body))
}
