// Package wecom posts review reports to a WeCom (企业微信) group through
// a group robot webhook, as markdown messages.
package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/botpost"
)

// Channel is one WeCom group robot.
type Channel struct {
	name     string
	hook     string
	client   *http.Client
	maxParts int
	limits   botpost.Limits
}

var _ im.Channel = (*Channel)(nil)

// New returns a WeCom channel.
func New(name string, o Options) (*Channel, error) {
	if err := botpost.CheckWebhookURL("webhook_url", o.WebhookURL); err != nil {
		return nil, err
	}
	c := &Channel{name: name, hook: o.WebhookURL, client: o.Client, maxParts: o.MaxParts, limits: o.Limits}
	if c.client == nil {
		c.client = &http.Client{Timeout: 15 * time.Second}
	}
	if c.limits == nil {
		// 20 messages per minute per robot.
		c.limits = botpost.Limits{botpost.PerWindow(20, time.Minute, 5)}
	}
	return c, nil
}

func (c *Channel) Name() string { return c.name }
func (c *Channel) Kind() string { return KindName }

// Send posts the report, split into as many messages as the 4096-byte
// content limit needs, starting after msg.PartsDelivered.
func (c *Channel) Send(ctx context.Context, msg im.Message) (im.Receipt, error) {
	payloads, err := Render(msg, c.maxParts)
	if err != nil {
		return im.Receipt{}, &im.SendError{Reason: im.ReasonTooLarge, Err: fmt.Errorf("render: %w", err)}
	}
	parts := make([]botpost.Part, len(payloads))
	for i, p := range payloads {
		body, err := botpost.Encode(p)
		if err != nil {
			return im.Receipt{}, &im.SendError{Reason: im.ReasonClient, Err: fmt.Errorf("encode: %w", err)}
		}
		parts[i] = botpost.Part{Rendered: p.Markdown.Content, Send: func(ctx context.Context) (botpost.Response, error) {
			resp, err := botpost.Post(ctx, c.client, c.hook, body)
			if err != nil {
				return resp, err
			}
			if se := Classify(resp.Status, resp.Header, resp.Body); se != nil {
				se.Response = botpost.Redact(se.Response, c.hook)
				return resp, se
			}
			return resp, nil
		}}
	}
	return botpost.SendParts(ctx, parts, msg.PartsDelivered, c.limits)
}

type response struct {
	ErrCode *int   `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

// Classify turns WeCom's answer into nil (delivered) or a classified
// error: HTTP 200 with a non-zero errcode is a failure.
func Classify(status int, header http.Header, body []byte) *im.SendError {
	if se := im.ClassifyStatus(status, header, body); se != nil {
		return se
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil || r.ErrCode == nil {
		return &im.SendError{Reason: im.ReasonServer, Retryable: true, StatusCode: status,
			Response: im.Excerpt(body), Err: errors.New("response has no errcode")}
	}
	if *r.ErrCode == 0 {
		return nil
	}
	se := &im.SendError{StatusCode: status, PlatformCode: strconv.Itoa(*r.ErrCode),
		Response: im.Excerpt(body), Err: errors.New(im.Sanitize(r.ErrMsg))}
	switch *r.ErrCode {
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
