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

// DingTalk answers, from DingTalk's custom robot documentation and
// observed responses. The "message too long" body is not documented
// publicly; its code is the one DingTalk's newer error table lists.
const (
	DingTalkOK          = `{"errcode":0,"errmsg":"ok"}`
	DingTalkBadToken    = `{"errcode":300005,"errmsg":"token is not exist"}`
	DingTalkSignFail    = `{"errcode":310000,"errmsg":"sign not match, more: [https://ding-doc.dingtalk.com/doc#/serverapi2/qf2nxq]"}`
	DingTalkBadTime     = `{"errcode":310000,"errmsg":"invalid timestamp"}`
	DingTalkKeywords    = `{"errcode":310000,"errmsg":"keywords not in content"}`
	DingTalkTooFast     = `{"errcode":130101,"errmsg":"send too fast, exceed 20 times per minute"}`
	DingTalkTooLong     = `{"errcode":460101,"errmsg":"message too long, exceed 20000 bytes"}`
	DingTalkMissing     = `{"errcode":40035,"errmsg":"缺少参数 json"}`
	DingTalkSystemBusy  = `{"errcode":-1,"errmsg":"系统繁忙"}`
	DingTalkMaxBodySize = 20000
)

// DingTalkMessage is a received markdown message, decoded.
type DingTalkMessage struct {
	Raw      []byte
	MsgType  string `json:"msgtype"`
	Markdown struct {
		Title string `json:"title"`
		Text  string `json:"text"`
	} `json:"markdown"`
	At struct {
		AtMobiles []string `json:"atMobiles"`
		AtUserIds []string `json:"atUserIds"`
		IsAtAll   bool     `json:"isAtAll"`
	} `json:"at"`
	// Notified is who DingTalk would notify: listed in at AND named with
	// "@" in the text. Either alone notifies nobody.
	Notified []string `json:"-"`
}

// DingTalk is a custom robot: POST /robot/send?access_token=<token>.
type DingTalk struct {
	bot[DingTalkMessage]
	Token    string
	Secret   string
	Keywords []string
}

// NewDingTalk starts a stand-in robot, closed when the test ends.
func NewDingTalk(t testing.TB, token, secret string) *DingTalk {
	d := &DingTalk{Token: token, Secret: secret}
	d.start(t, d.handle, []*window{{limit: 20, period: time.Minute}})
	return d
}

// URL is the robot's webhook URL, token included.
func (d *DingTalk) URL() string { return d.Server.URL + "/robot/send?access_token=" + d.Token }

// DingTalkSign is the stand-in's own reading of the documentation: the
// secret is the HMAC-SHA256 key, timestamp + "\n" + secret the message,
// the digest base64-encoded (the client then URL-encodes it once).
func DingTalkSign(timestamp, secret string) string {
	h := hmac.New(sha256.New, []byte(secret))
	io.WriteString(h, timestamp+"\n"+secret)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// handle runs with mu held, after any scripted answer (bot.start).
func (d *DingTalk) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/robot/send" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	// Query() decodes once, as DingTalk does: a sign encoded twice
	// arrives as "%2B..." and does not match.
	q := r.URL.Query()
	if q.Get("access_token") != d.Token {
		writeJSON(w, DingTalkBadToken)
		return
	}
	if d.Secret != "" {
		ts := q.Get("timestamp")
		ms, err := strconv.ParseInt(ts, 10, 64)
		age := d.clock().Sub(time.UnixMilli(ms))
		if err != nil || age > time.Hour || age < -time.Hour {
			writeJSON(w, DingTalkBadTime)
			return
		}
		if !hmac.Equal([]byte(q.Get("sign")), []byte(DingTalkSign(ts, d.Secret))) {
			writeJSON(w, DingTalkSignFail)
			return
		}
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, DingTalkMaxBodySize+1))
	if len(body) > DingTalkMaxBodySize {
		writeJSON(w, DingTalkTooLong)
		return
	}
	if !d.allow() {
		writeJSON(w, DingTalkTooFast)
		return
	}
	var m DingTalkMessage
	if err := json.Unmarshal(body, &m); err != nil || m.MsgType != "markdown" ||
		m.Markdown.Title == "" || m.Markdown.Text == "" {
		writeJSON(w, DingTalkMissing)
		return
	}
	m.Raw = body
	if len(d.Keywords) > 0 {
		found := false
		for _, k := range d.Keywords {
			found = found || strings.Contains(m.Markdown.Title+m.Markdown.Text, k)
		}
		if !found {
			writeJSON(w, DingTalkKeywords)
			return
		}
	}
	for _, id := range append(append([]string(nil), m.At.AtMobiles...), m.At.AtUserIds...) {
		if strings.Contains(m.Markdown.Text, "@"+id) {
			m.Notified = append(m.Notified, id)
		}
	}
	d.received = append(d.received, m)
	writeJSON(w, DingTalkOK)
}
