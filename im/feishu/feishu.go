// Package feishu posts review reports to a Feishu (Lark) group through a
// custom bot webhook, as interactive cards (card JSON 2.0), signed when
// the bot has a secret.
package feishu

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/botpost"
	"github.com/aicr-dev/aicr/im/internal/httppost"
)

// Channel is one Feishu custom bot.
type Channel = botpost.Channel[Payload]

// platform: custom bots may post 5 times a second and 100 times a
// minute; the minute's count is the one a sustained stream meets. A
// report is split into as many cards as the 20 KB limit needs.
var platform = &botpost.Platform[Payload]{
	Kind:     KindName,
	Signs:    true,
	Limit:    botpost.PerWindow(100, time.Minute, 5),
	Render:   Render,
	Rendered: botpost.EncodedString[Payload],
	Post:     post,
}

// New returns a Feishu channel.
func New(name string, o Options) (*Channel, error) { return botpost.New(platform, name, o) }

func post(ctx context.Context, b *botpost.Bot, creds botpost.Creds, p Payload) (httppost.Response, error) {
	if creds.Secret != "" {
		// Per request: Feishu rejects timestamps more than an hour old, and
		// a retry may come much later than the first attempt.
		ts := b.Now().Unix()
		p.Timestamp = strconv.FormatInt(ts, 10)
		p.Sign = Sign(creds.Secret, ts)
	}
	return b.PostJSON(ctx, creds.Hook, p, MaxBodyBytes, creds, Classify)
}

// Sign is Feishu's custom-bot signature: HMAC-SHA256 keyed with
// timestamp + "\n" + secret over an empty message, base64. (DingTalk
// does the opposite: keyed by the secret over that string.)
func Sign(secret string, timestamp int64) string {
	mac := hmac.New(sha256.New, []byte(strconv.FormatInt(timestamp, 10)+"\n"+secret))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// response is Feishu's answer. StatusCode/StatusMessage are the legacy
// fields older bots still return alongside or instead of code/msg.
type response struct {
	Code          *int   `json:"code"`
	Msg           string `json:"msg"`
	StatusCode    *int   `json:"StatusCode"`
	StatusMessage string `json:"StatusMessage"`
}

// Classify turns Feishu's answer into nil (delivered) or a classified
// error. HTTP 200 is not success by itself: the body's code must be 0.
func Classify(status int, header http.Header, body []byte) *im.SendError {
	if se := im.ClassifyStatus(status, header, body); se != nil {
		return se
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		// Not Feishu talking (a proxy's page); whether the card went out
		// is unknown, and a lost report is worse than a duplicate.
		return &im.SendError{Reason: im.ReasonServer, Retryable: true, StatusCode: status,
			Response: im.Excerpt(body), Err: errors.New("response is not JSON")}
	}
	code, msg := r.Code, r.Msg
	if code == nil {
		code, msg = r.StatusCode, r.StatusMessage
	}
	if code == nil {
		return &im.SendError{Reason: im.ReasonServer, Retryable: true, StatusCode: status,
			Response: im.Excerpt(body), Err: errors.New("response has no code")}
	}
	if *code == 0 {
		return nil
	}
	se := &im.SendError{StatusCode: status, PlatformCode: strconv.Itoa(*code),
		Response: im.Excerpt(body), Err: errors.New(im.Sanitize(msg))}
	switch *code {
	case 11232: // frequency limited
		se.Reason, se.Retryable = im.ReasonRateLimited, true
	case 9499:
		// "Bad Request", but also "too many request" under load.
		if strings.Contains(strings.ToLower(msg), "too many request") {
			se.Reason, se.Retryable = im.ReasonRateLimited, true
		} else {
			se.Reason = im.ReasonClient
		}
	case 19001, // incoming webhook access token invalid
		19007, // bot not enabled
		19021, // sign match fail or timestamp not within one hour
		19022: // ip not allowed
		se.Reason = im.ReasonAuth
	case 19024: // key words not found: the bot's keyword filter
		se.Reason = im.ReasonClient
	default:
		se.Reason = im.ReasonClient
	}
	return se
}
