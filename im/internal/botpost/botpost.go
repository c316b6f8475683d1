// Package botpost is what the webhook-robot channels (Feishu, DingTalk,
// WeCom) share: the webhook URL and secret keys, read at every Send, and
// the loop that sends the parts of a split report in order, one
// httppost request each, paced by the dispatcher (im.Pace).
package botpost

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/httppost"
	"github.com/aicr-dev/aicr/secret"
)

// Part is one request of a split report, ready to send.
type Part struct {
	// Payload is the platform's message for this part.
	Payload any
	// Rendered is the body as sent, for the audit trail.
	Rendered string
}

// SendParts sends parts in order, starting after the first delivered
// ones (msg.PartsDelivered from an earlier attempt), one request each,
// pacing (im.Pace) before every request. It stops at the first failure
// and records in the *im.SendError how many parts are delivered so a
// retry resumes there; each part is reported (im.Delivered) as it is
// accepted, so a process killed between parts resumes there too. The receipt's Rendered joins every part,
// including those sent by earlier attempts, so the audit row shows the
// whole report.
func SendParts(ctx context.Context, parts []Part, delivered int,
	send func(context.Context, Part) (httppost.Response, error)) (im.Receipt, error) {
	rec := im.Receipt{Parts: len(parts)}
	rendered := make([]string, len(parts))
	for i, p := range parts {
		rendered[i] = p.Rendered
	}
	rec.Rendered = strings.Join(rendered, "\n")
	// Every part delivered: an earlier attempt got them all accepted but
	// died before it could say so. The report is rebuilt the same from
	// the audit trail, so there is nothing left to send.
	delivered = max(delivered, 0)
	for i := delivered; i < len(parts); i++ {
		if err := im.Pace(ctx); err != nil {
			return rec, &im.SendError{Reason: im.ReasonTimeout, Retryable: true, PartsDelivered: i,
				Err: fmt.Errorf("part %d/%d: wait for rate limit: %w", i+1, len(parts), err)}
		}
		resp, err := send(ctx, parts[i])
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
		im.Delivered(ctx, i+1, "")
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
	errs := []error{secret.Ref{Env: k.WebhookURLEnv, File: k.WebhookURLFile}.Validate("webhook_url", true)}
	if signable {
		errs = append(errs, secret.Ref{Env: k.SecretEnv, File: k.SecretFile}.Validate("secret", false))
	} else if k.SecretEnv != "" || k.SecretFile != "" {
		errs = append(errs, &im.ConfigError{Key: "secret_env", Err: im.ErrInvalidValue, Hint: "this platform does not sign requests; remove secret_env/secret_file"})
	}
	if k.MaxParts < 0 || k.MaxParts > 20 {
		errs = append(errs, &im.ConfigError{Key: "max_parts", Err: im.ErrInvalidValue, Hint: "between 1 and 20"})
	}
	return errors.Join(errs...)
}
