package botpost

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/aicr-dev/aicr/im"
)

// Options configure a custom-bot channel built without a config file
// (tests); the kinds re-export it as their own Options.
type Options struct {
	WebhookURL string
	Secret     string // empty: requests are not signed
	Now        func() time.Time
	Client     *http.Client // nil: a client with a 15 s timeout
	MaxParts   int
	// Limits overrides the platform's rate (tests); nil means the
	// platform's own, an empty non-nil list means none.
	Limits Limits
}

// Bot is what every custom-bot channel has: its name and kind, the
// webhook, the signing secret, a clock, an HTTP client, the split cap and
// the platform's rate limits. Channels embed it and add only rendering,
// signing and the reading of their platform's answer.
type Bot struct {
	name, kind string
	Hook       string
	Secret     string
	Now        func() time.Time
	Client     *http.Client
	MaxParts   int
	Limits     Limits
}

// NewBot checks the webhook URL and fills the defaults; platform is the
// rate the platform allows one bot.
func NewBot(kind, name string, o Options, platform Limits) (Bot, error) {
	if err := CheckWebhookURL("webhook_url", o.WebhookURL); err != nil {
		return Bot{}, err
	}
	b := Bot{name: name, kind: kind, Hook: o.WebhookURL, Secret: o.Secret, Now: o.Now,
		Client: o.Client, MaxParts: o.MaxParts, Limits: o.Limits}
	if b.Now == nil {
		b.Now = time.Now
	}
	if b.Client == nil {
		b.Client = &http.Client{Timeout: 15 * time.Second}
	}
	if b.Limits == nil {
		b.Limits = platform
	}
	return b, nil
}

func (b *Bot) Name() string { return b.name }
func (b *Bot) Kind() string { return b.kind }

// SendAll delivers payloads as the parts of one report, starting after
// the delivered ones, waiting on the rate limits before each request.
// rendered gives a part's body for the audit trail; post sends one part
// and checks the platform's answer.
func SendAll[P any](ctx context.Context, b *Bot, payloads []P, delivered int,
	rendered func(P) (string, error), post func(context.Context, P) (Response, error)) (im.Receipt, error) {
	parts := make([]Part, len(payloads))
	for i, p := range payloads {
		r, err := rendered(p)
		if err != nil {
			return im.Receipt{}, &im.SendError{Reason: im.ReasonClient, Err: fmt.Errorf("encode: %w", err)}
		}
		parts[i] = Part{Rendered: r, Send: func(ctx context.Context) (Response, error) { return post(ctx, p) }}
	}
	return SendParts(ctx, parts, delivered, b.Limits)
}

// EncodedString is the rendered form of payloads sent as their JSON.
func EncodedString[P any](p P) (string, error) {
	b, err := Encode(p)
	return string(b), err
}
