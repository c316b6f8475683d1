// Package dingtalk posts review reports to a DingTalk group through a
// custom robot webhook, as markdown messages, signed when the robot has a
// secret.
package dingtalk

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/botpost"
	"github.com/aicr-dev/aicr/im/internal/httppost"
)

// Channel is one DingTalk custom robot.
type Channel = botpost.Channel[Payload]

// platform: a custom robot may post 20 messages a minute. A report is
// split into as many messages as the 20000-byte limit needs.
var platform = &botpost.Platform[Payload]{
	Kind:     KindName,
	Signs:    true,
	Limit:    botpost.PerWindow(20, time.Minute, 5),
	Render:   func(rep im.Report, _ bool, maxParts int) ([]Payload, error) { return Render(rep, maxParts) },
	Rendered: botpost.EncodedString[Payload],
	Post:     post,
}

// New returns a DingTalk channel.
func New(name string, o Options) (*Channel, error) { return botpost.New(platform, name, o) }

func post(ctx context.Context, b *botpost.Bot, creds botpost.Creds, p Payload) (httppost.Response, error) {
	target := creds.Hook
	if creds.Secret != "" {
		// Per request: DingTalk rejects timestamps more than an hour off.
		var err error
		target, err = SignedURL(creds.Hook, creds.Secret, b.Now().UnixMilli())
		if err != nil {
			return httppost.Response{}, &im.SendError{Reason: im.ReasonClient, Err: err}
		}
	}
	return b.PostJSON(ctx, target, p, MaxBodyBytes, creds, Classify)
}

// Sign is DingTalk's robot signature: HMAC-SHA256 keyed by the secret
// over timestamp + "\n" + secret, base64. (Feishu does the opposite.)
func Sign(secret string, timestampMillis int64) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(timestampMillis, 10) + "\n" + secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// SignedURL adds timestamp and sign to the webhook's query, URL-encoded
// exactly once (base64's '+', '/' and '=' must arrive intact).
func SignedURL(hook, secret string, timestampMillis int64) (string, error) {
	u, err := url.Parse(hook)
	if err != nil {
		return "", errors.New("webhook_url: not a URL")
	}
	q := u.Query()
	q.Set("timestamp", strconv.FormatInt(timestampMillis, 10))
	q.Set("sign", Sign(secret, timestampMillis))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Classify turns DingTalk's answer into nil (delivered) or a classified
// error (botpost.ErrCodeAnswer, with DingTalk's errcode table).
func Classify(status int, header http.Header, body []byte) *im.SendError {
	se, code := botpost.ErrCodeAnswer(status, header, body)
	if se == nil || se.Reason != "" {
		return se
	}
	switch code {
	case 130101, // send too fast, exceed 20 times per minute
		410100: // the same limit in the newer error table
		se.Reason, se.Retryable = im.ReasonRateLimited, true
	case -1: // system busy
		se.Reason, se.Retryable = im.ReasonServer, true
	case 310000:
		// One code for every security check: sign not match, invalid
		// timestamp, IP not in whitelist, keywords not in content.
		if strings.Contains(se.Err.Error(), "keywords") {
			se.Reason = im.ReasonClient
		} else {
			se.Reason = im.ReasonAuth
		}
	case 300001, 300005, // token is not exist
		400101, // access_token does not exist
		400102, // robot disabled
		400106: // robot does not exist
		se.Reason = im.ReasonAuth
	case 460101: // message too long
		se.Reason = im.ReasonTooLarge
	default:
		se.Reason = im.ReasonClient
	}
	return se
}
