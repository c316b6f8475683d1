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
	"github.com/aicr-dev/aicr/im/internal/httppost"
)

// Channel is one WeCom group robot.
type Channel struct {
	botpost.Bot
}

var (
	_ im.Channel     = (*Channel)(nil)
	_ im.RateLimited = (*Channel)(nil)
)

// platformLimit: a group robot may post 20 messages a minute.
var platformLimit = botpost.PerWindow(20, time.Minute, 5)

// New returns a WeCom channel.
func New(name string, o Options) (*Channel, error) {
	b, err := botpost.NewBot(KindName, name, o, platformLimit)
	if err != nil {
		return nil, err
	}
	return &Channel{b}, nil
}

// Send posts the report, split into as many messages as the 4096-byte
// content limit needs, starting after msg.PartsDelivered.
func (c *Channel) Send(ctx context.Context, msg im.Message) (im.Receipt, error) {
	creds, err := c.Creds()
	if err != nil {
		return im.Receipt{}, err
	}
	payloads, err := Render(msg, c.MaxParts)
	if err != nil {
		return im.Receipt{}, &im.SendError{Reason: im.ReasonTooLarge, Err: fmt.Errorf("render: %w", err)}
	}
	// The audit keeps the markdown: WeCom's JSON wrapper adds nothing.
	markdown := func(p Payload) (string, error) { return p.Markdown.Content, nil }
	return botpost.SendAll(ctx, creds, payloads, msg.PartsDelivered, markdown, c.post)
}

func (c *Channel) post(ctx context.Context, creds botpost.Creds, p Payload) (httppost.Response, error) {
	body, err := botpost.Encode(p)
	if err != nil {
		return httppost.Response{}, &im.SendError{Reason: im.ReasonClient, Err: fmt.Errorf("encode: %w", err)}
	}
	resp, err := httppost.Post(ctx, c.Client, httppost.Request{URL: creds.Hook, Body: body})
	if err != nil {
		return resp, err
	}
	if se := Classify(resp.Status, resp.Header, resp.Body); se != nil {
		return resp, se
	}
	return resp, nil
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
