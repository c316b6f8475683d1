package botpost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/httppost"
)

// Platform is what one custom-bot kind supplies, and all it supplies:
// its name and rate limit, how a report becomes its requests (markup and
// size limits), and how one request is signed and its answer read. The
// Send loop, the credentials and the report are the same for every kind.
type Platform[P any] struct {
	Kind  string
	Limit Limit
	// Signs says whether the platform has a signing scheme; a secret for
	// one that has none is a config mistake.
	Signs bool
	// Render fits rep into payloads, in order. signed says whether the
	// requests will carry a signature, which some platforms count in
	// the size limit.
	Render func(rep im.Report, signed bool, maxParts int) ([]P, error)
	// Rendered is a payload's body for the audit trail.
	Rendered func(P) (string, error)
	// Post sends one payload with the Send's credentials and reads the
	// platform's answer (usually via Bot.PostJSON).
	Post func(ctx context.Context, b *Bot, creds Creds, p P) (httppost.Response, error)
}

// Channel is a custom-bot channel of one platform.
type Channel[P any] struct {
	Bot
	platform *Platform[P]
}

var (
	_ im.Channel     = (*Channel[struct{}])(nil)
	_ im.RateLimited = (*Channel[struct{}])(nil)
)

// New returns a channel with literal credentials (tests, embedding).
func New[P any](pl *Platform[P], name string, o Options) (*Channel[P], error) {
	b, err := NewBot(pl.Kind, name, o, pl.Limit)
	if err != nil {
		return nil, err
	}
	return &Channel[P]{Bot: b, platform: pl}, nil
}

// Build returns a channel whose webhook URL and secret are read from
// keys at every Send, not here: a wrong or missing secret file fails
// deliveries (until it is fixed, without a restart), never the daemon's
// start.
func Build[P any](pl *Platform[P], name string, keys WebhookKeys, deps im.Deps) *Channel[P] {
	return &Channel[P]{Bot: BuildBot(pl.Kind, name, keys, deps, pl.Limit), platform: pl}
}

// Send builds msg's report once, renders it in the platform's markup
// and posts the parts after msg.PartsDelivered.
func (c *Channel[P]) Send(ctx context.Context, msg im.Message) (im.Receipt, error) {
	creds, err := c.Creds()
	if err != nil {
		return im.Receipt{}, err
	}
	payloads, err := c.platform.Render(im.BuildReport(msg), c.Signs(creds), c.MaxParts)
	if err != nil {
		return im.Receipt{}, &im.SendError{Reason: im.ReasonTooLarge, Err: fmt.Errorf("render: %w", err)}
	}
	return SendAll(ctx, creds, payloads, msg.PartsDelivered, c.platform.Rendered,
		func(ctx context.Context, creds Creds, p P) (httppost.Response, error) {
			return c.platform.Post(ctx, &c.Bot, creds, p)
		})
}

// PostJSON posts payload to url as the platforms receive it (Encode),
// refusing it when it is over maxBytes (0: the platform limits only a
// field, checked when rendering), and reads the answer with classify: a
// platform that answers HTTP 200 with an error code has not delivered.
func (b *Bot) PostJSON(ctx context.Context, url string, payload any, maxBytes int, creds Creds,
	classify func(status int, header http.Header, body []byte) *im.SendError) (httppost.Response, error) {
	body, err := httppost.Encode(payload)
	if err != nil {
		return httppost.Response{}, &im.SendError{Reason: im.ReasonClient, Err: fmt.Errorf("encode: %w", err)}
	}
	if maxBytes > 0 && len(body) > maxBytes {
		return httppost.Response{}, &im.SendError{Reason: im.ReasonTooLarge,
			Err: fmt.Errorf("message is %d bytes, limit %d", len(body), maxBytes)}
	}
	resp, err := httppost.Post(ctx, b.Client, httppost.Request{URL: url, Body: body, Secrets: creds.Redactions()})
	if err != nil {
		return resp, err
	}
	if se := classify(resp.Status, resp.Header, resp.Body); se != nil {
		return resp, se
	}
	return resp, nil
}

// Fit packs rep's blocks (rendered in the platform's markup) into as few
// payloads as the platform takes (im.Split), each headed by the report's
// title and its part label ("(2/3)"); problems cut to fit are counted in
// rep's OmittedNote. fits says whether a part is within the platform's limit,
// measured the way the platform measures; build makes the payload of a
// part (first is the part that carries mentions).
func Fit[P any](rep im.Report, blocks []im.Block, maxParts int,
	fits func(head, body string) bool, build func(head, body string, first bool) P) ([]P, error) {
	parts, err := im.Split(blocks, im.SplitOptions{
		MaxParts: maxParts,
		Head: func(i, n int) string {
			return strings.TrimSpace(rep.Title + " " + im.PartLabel(i, n))
		},
		Fits:    fits,
		Omitted: rep.OmittedNote,
	})
	if err != nil {
		return nil, err
	}
	out := make([]P, len(parts))
	for i, p := range parts {
		out[i] = build(p.Head, p.Body, i == 0)
	}
	return out, nil
}

// ErrCodeAnswer reads the {"errcode": n, "errmsg": "…"} answer DingTalk
// and WeCom share; HTTP 200 with a non-zero errcode is a failure. It
// returns nil when the message was accepted. Otherwise the error's
// Reason is set when the HTTP status or an unreadable body decided it,
// and left for the caller to set from code (the platform's table) when
// the platform refused with an errcode.
func ErrCodeAnswer(status int, header http.Header, body []byte) (se *im.SendError, code int) {
	if se := im.ClassifyStatus(status, header, body); se != nil {
		return se, 0
	}
	var r struct {
		ErrCode *int   `json:"errcode"`
		ErrMsg  string `json:"errmsg"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.ErrCode == nil {
		// Not the platform talking (a proxy's page): whether the message
		// went out is unknown, and a lost report is worse than a duplicate.
		return &im.SendError{Reason: im.ReasonServer, Retryable: true, StatusCode: status,
			Response: im.Excerpt(body), Err: errors.New("response has no errcode")}, 0
	}
	if *r.ErrCode == 0 {
		return nil, 0
	}
	return &im.SendError{StatusCode: status, PlatformCode: strconv.Itoa(*r.ErrCode),
		Response: im.Excerpt(body), Err: errors.New(im.Sanitize(r.ErrMsg))}, *r.ErrCode
}

// Config is a custom-bot kind's [[channel]] table: the shared webhook
// keys, validated and built for the kind's platform. Kinds alias it and
// make it with NewConfig, so the loader decodes into a config that knows
// its platform.
type Config[P any] struct {
	WebhookKeys
	platform *Platform[P]
}

// NewConfig returns an empty config of pl's kind, for the loader to
// decode a [[channel]] table into.
func NewConfig[P any](pl *Platform[P]) *Config[P] { return &Config[P]{platform: pl} }

var errNoPlatform = errors.New("channel config was not made by its kind's NewConfig")

// Validate checks the keys without reading any secret.
func (c *Config[P]) Validate() error {
	if c.platform == nil {
		return errNoPlatform
	}
	return c.WebhookKeys.Validate(c.platform.Signs)
}

// Build returns the channel. The webhook URL and secret are read at
// every Send, not here (Build).
func (c *Config[P]) Build(common im.ChannelConfig, deps im.Deps) (im.Channel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return Build(c.platform, common.Name, c.WebhookKeys, deps), nil
}
