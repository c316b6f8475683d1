package imtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Feishu answers, verbatim from Feishu's custom bot documentation and
// observed responses.
const (
	FeishuOK          = `{"StatusCode":0,"StatusMessage":"success","code":0,"data":{},"msg":"success"}`
	FeishuBadRequest  = `{"code":9499,"msg":"Bad Request","data":{}}`
	FeishuBadToken    = `{"code":19001,"data":{},"msg":"param invalid: incoming webhook access token invalid"}`
	FeishuSignFail    = `{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time","data":{}}`
	FeishuIPNotAllow  = `{"code":19022,"msg":"Ip Not Allowed","data":{}}`
	FeishuKeywords    = `{"code":19024,"msg":"Key Words Not Found","data":{}}`
	FeishuRateLimited = `{"code":11232,"data":{},"msg":"frequency limited psm[lark.oapi.app_platform_runtime]appID[1500]"}`
)

// FeishuMaxBody is the documented request limit ("20 K").
const FeishuMaxBody = 20 * 1024

// FeishuCard is a received interactive card, decoded.
type FeishuCard struct {
	Raw       []byte
	Timestamp string `json:"timestamp"`
	Sign      string `json:"sign"`
	MsgType   string `json:"msg_type"`
	Card      struct {
		Schema string `json:"schema"`
		Header struct {
			Title struct {
				Tag     string `json:"tag"`
				Content string `json:"content"`
			} `json:"title"`
			Template string `json:"template"`
		} `json:"header"`
		Body struct {
			Elements []struct {
				Tag     string `json:"tag"`
				Content string `json:"content"`
			} `json:"elements"`
		} `json:"body"`
	} `json:"card"`
}

// Markdown joins the card's markdown elements.
func (c FeishuCard) Markdown() string {
	var parts []string
	for _, e := range c.Card.Body.Elements {
		parts = append(parts, e.Content)
	}
	return strings.Join(parts, "\n")
}

// Feishu is a custom bot: POST /open-apis/bot/v2/hook/<token>.
type Feishu struct {
	bot[FeishuCard]
	Token    string
	Secret   string   // non-empty: signature verification is on
	Keywords []string // non-empty: the keyword filter is on
}

// NewFeishu starts a stand-in bot, closed when the test ends.
func NewFeishu(t testing.TB, token, secret string) *Feishu {
	f := &Feishu{Token: token, Secret: secret}
	// Per bot: 5 per second and 100 per minute.
	f.start(t, f.handle, []*window{{limit: 5, period: time.Second}, {limit: 100, period: time.Minute}})
	return f
}

// URL is the bot's webhook URL, token included.
func (f *Feishu) URL() string { return f.Server.URL + "/open-apis/bot/v2/hook/" + f.Token }

// FeishuSign is the stand-in's own reading of the documentation: the
// string timestamp + "\n" + secret is the HMAC-SHA256 key, the message
// is empty, the digest is base64-encoded.
func FeishuSign(timestamp, secret string) string {
	h := hmac.New(sha256.New, []byte(timestamp+"\n"+secret))
	h.Write(nil)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// handle runs with mu held, after any scripted answer (bot.start).
func (f *Feishu) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	token, ok := strings.CutPrefix(r.URL.Path, "/open-apis/bot/v2/hook/")
	if !ok || token != f.Token {
		writeJSON(w, FeishuBadToken)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, FeishuMaxBody+1))
	if len(body) > FeishuMaxBody {
		writeJSON(w, FeishuBadRequest)
		return
	}
	var card FeishuCard
	if err := json.Unmarshal(body, &card); err != nil {
		writeJSON(w, FeishuBadRequest)
		return
	}
	card.Raw = body
	if f.Secret != "" {
		ts, err := strconv.ParseInt(card.Timestamp, 10, 64)
		age := f.clock().Sub(time.Unix(ts, 0))
		if err != nil || age > time.Hour || age < -time.Hour ||
			!hmac.Equal([]byte(card.Sign), []byte(FeishuSign(card.Timestamp, f.Secret))) {
			writeJSON(w, FeishuSignFail)
			return
		}
	}
	if !f.allow() {
		writeJSON(w, FeishuRateLimited)
		return
	}
	if !validCard(card) {
		writeJSON(w, FeishuBadRequest)
		return
	}
	if len(f.Keywords) > 0 {
		text := card.Card.Header.Title.Content + "\n" + card.Markdown()
		found := false
		for _, k := range f.Keywords {
			found = found || strings.Contains(text, k)
		}
		if !found {
			writeJSON(w, FeishuKeywords)
			return
		}
	}
	f.received = append(f.received, card)
	writeJSON(w, FeishuOK)
}

func validCard(c FeishuCard) bool {
	if c.MsgType != "interactive" || c.Card.Schema != "2.0" ||
		c.Card.Header.Title.Tag != "plain_text" || c.Card.Header.Title.Content == "" ||
		len(c.Card.Body.Elements) == 0 {
		return false
	}
	for _, e := range c.Card.Body.Elements {
		if e.Tag != "markdown" || e.Content == "" {
			return false
		}
	}
	return true
}
