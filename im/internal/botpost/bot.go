package botpost

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/time/rate"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/httppost"
	"github.com/aicr-dev/aicr/secret"
)

// Options configure a custom-bot channel built without a config file
// (tests); the kinds re-export it as their own Options. WebhookURL and
// Secret are literal values; a channel built from config reads its
// *_env / *_file keys at every Send instead (BuildBot).
type Options struct {
	WebhookURL string
	Secret     string // empty: requests are not signed
	Now        func() time.Time
	Client     *http.Client // nil: a client with a 15 s timeout
	MaxParts   int
}

// Limit is the rate the platform allows one bot, for the dispatcher's
// token bucket (im.RateLimited).
type Limit struct {
	Rate  rate.Limit
	Burst int
}

// PerWindow is a bucket allowing at most n requests in any window with
// the given burst (burst < n): the refill stays under the platform's
// count for that window, so its sliding-window limiter never trips.
func PerWindow(n int, window time.Duration, burst int) Limit {
	return Limit{Rate: rate.Limit(float64(n-burst) / window.Seconds()), Burst: burst}
}

// Creds are the webhook URL and signing secret of one Send.
type Creds struct {
	Hook   string
	Secret string // "" when the bot does not sign
}

// String keeps a logged or printed Creds from showing either value.
func (c Creds) String() string { return secret.Redacted }

// GoString is String for %#v.
func (c Creds) GoString() string { return secret.Redacted }

// Redactions lists what must never appear in an error or receipt.
func (c Creds) Redactions() []string { return httppost.Secrets(c.Hook, c.Secret) }

// Bot is what every custom-bot channel has: its name and kind, where its
// webhook URL and secret come from, a clock, an HTTP client, the split
// cap and the platform's rate limit. Channels embed it and add only
// rendering, signing and the reading of their platform's answer.
type Bot struct {
	name, kind string
	creds      func() (Creds, error)
	Now        func() time.Time
	Client     *http.Client
	MaxParts   int
	limit      Limit
}

// NewBot checks the literal webhook URL and fills the defaults.
func NewBot(kind, name string, o Options, platform Limit) (Bot, error) {
	if err := httppost.CheckURL("webhook_url", o.WebhookURL); err != nil {
		return Bot{}, err
	}
	creds := Creds{Hook: o.WebhookURL, Secret: o.Secret}
	return newBot(kind, name, func() (Creds, error) { return creds, nil }, o, platform), nil
}

// BuildBot returns a bot that reads its webhook URL and secret from the
// configured keys at every Send: a fixed secret file takes effect on the
// next retry, and a missing one fails that delivery, not the daemon's
// start.
func BuildBot(kind, name string, keys WebhookKeys, deps im.Deps, platform Limit) Bot {
	o := Options{Now: deps.Clock(), MaxParts: keys.MaxParts}
	return newBot(kind, name, func() (Creds, error) { return keys.Read(deps.BaseDir) }, o, platform)
}

func newBot(kind, name string, creds func() (Creds, error), o Options, platform Limit) Bot {
	b := Bot{name: name, kind: kind, creds: creds, Now: o.Now, Client: o.Client,
		MaxParts: o.MaxParts, limit: platform}
	if b.Now == nil {
		b.Now = time.Now
	}
	if b.Client == nil {
		b.Client = &http.Client{Timeout: 15 * time.Second}
	}
	return b
}

func (b *Bot) Name() string { return b.name }
func (b *Bot) Kind() string { return b.kind }

// RateLimit implements im.RateLimited: the dispatcher owns the bucket.
func (b *Bot) RateLimit() (rate.Limit, int) { return b.limit.Rate, b.limit.Burst }

// Creds reads the webhook URL and secret for one Send. A failure is
// permanent (retrying cannot create a file) and says how to recover.
func (b *Bot) Creds() (Creds, error) {
	c, err := b.creds()
	if err != nil {
		return Creds{}, &im.SendError{Reason: im.ReasonAuth,
			Err: fmt.Errorf("%w; fix it, then `aicr dispatch retry` re-sends", err)}
	}
	return c, nil
}

// Signs reports whether the bot has a signing secret configured, without
// reading it.
func (b *Bot) Signs(c Creds) bool { return c.Secret != "" }

// SendAll delivers payloads as the parts of one report, starting after
// the delivered ones, with the credentials the Send read (Creds). rendered
// gives a part's body for the audit trail; post sends one part and
// checks the platform's answer.
func SendAll[P any](ctx context.Context, creds Creds, payloads []P, delivered int,
	rendered func(P) (string, error), post func(context.Context, Creds, P) (httppost.Response, error)) (im.Receipt, error) {
	parts := make([]Part, len(payloads))
	for i, p := range payloads {
		r, err := rendered(p)
		if err != nil {
			return im.Receipt{}, &im.SendError{Reason: im.ReasonClient, Err: fmt.Errorf("encode: %w", err)}
		}
		parts[i] = Part{Rendered: r, Payload: p}
	}
	rec, err := SendParts(ctx, parts, delivered, func(ctx context.Context, p Part) (httppost.Response, error) {
		return post(ctx, creds, p.Payload.(P))
	})
	var se *im.SendError
	if errors.As(err, &se) {
		se.Response = httppost.Redact(se.Response, creds.Redactions()...)
	}
	rec.Response = httppost.Redact(rec.Response, creds.Redactions()...)
	return rec, err
}

// EncodedString is the rendered form of payloads sent as their JSON.
func EncodedString[P any](p P) (string, error) {
	b, err := httppost.Encode(p)
	return string(b), err
}

// Read resolves the webhook URL and the secret (empty when unset). Errors
// name the key and the source, never the value.
func (k WebhookKeys) Read(baseDir string) (Creds, error) {
	hook, err := httppost.ReadKey("webhook_url", k.WebhookURLEnv, k.WebhookURLFile, baseDir)
	if err != nil {
		return Creds{}, err
	}
	if err := httppost.CheckURL("webhook_url", hook); err != nil {
		return Creds{}, err
	}
	sec, err := httppost.ReadKey("secret", k.SecretEnv, k.SecretFile, baseDir)
	if err != nil {
		return Creds{}, err
	}
	return Creds{Hook: hook, Secret: sec}, nil
}

// CheckSecrets implements im.SecretChecker.
func (k WebhookKeys) CheckSecrets(baseDir string) error {
	_, err := k.Read(baseDir)
	return err
}
