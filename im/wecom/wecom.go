// Package wecom posts review reports to a WeCom (企业微信) group through
// a group robot webhook, as markdown messages.
package wecom

import (
	"context"
	"net/http"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/botpost"
	"github.com/aicr-dev/aicr/im/internal/httppost"
)

// Channel is one WeCom group robot.
type Channel = botpost.Channel[Payload]

// platform: a group robot may post 20 messages a minute. A report is
// split into as many messages as the 4096-byte content limit needs
// (checked when rendering: the limit is on the content, not the request).
var platform = &botpost.Platform[Payload]{
	Kind:   KindName,
	Signs:  false,
	Limit:  botpost.PerWindow(20, time.Minute, 5),
	Render: func(rep im.Report, _ bool, maxParts int) ([]Payload, error) { return Render(rep, maxParts) },
	// The audit keeps the markdown: WeCom's JSON wrapper adds nothing.
	Rendered: func(p Payload) (string, error) { return p.Markdown.Content, nil },
	Post: func(ctx context.Context, b *botpost.Bot, creds botpost.Creds, p Payload) (httppost.Response, error) {
		return b.PostJSON(ctx, creds.Hook, p, 0, creds, Classify)
	},
}

// New returns a WeCom channel.
func New(name string, o Options) (*Channel, error) { return botpost.New(platform, name, o) }

// Classify turns WeCom's answer into nil (delivered) or a classified
// error (botpost.ErrCodeAnswer, with WeCom's errcode table).
func Classify(status int, header http.Header, body []byte) *im.SendError {
	se, code := botpost.ErrCodeAnswer(status, header, body)
	if se == nil || se.Reason != "" {
		return se
	}
	switch code {
	case 45009: // api freq out of limit (20 per minute per robot)
		se.Reason, se.Retryable = im.ReasonRateLimited, true
	case -1: // system busy
		se.Reason, se.Retryable = im.ReasonServer, true
	case 93000: // invalid webhook url: the key is wrong or the robot removed
		se.Reason = im.ReasonAuth
	case 40058: // markdown.content exceed max length 4096
		se.Reason = im.ReasonTooLarge
	default: // 40008 invalid message type, 44004 empty content, ...
		se.Reason = im.ReasonClient
	}
	return se
}
