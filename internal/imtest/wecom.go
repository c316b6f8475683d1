package imtest

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"
)

// WeCom answers, as the group robot returns them (with its hint and
// the caller's address appended).
const (
	WeComOK         = `{"errcode":0,"errmsg":"ok"}`
	WeComBadKey     = `{"errcode":93000,"errmsg":"invalid webhook url, hint: [1700000000000000000000000], from ip: 127.0.0.1, more info at https://open.work.weixin.qq.com/devtool/query?e=93000"}`
	WeComTooLong    = `{"errcode":40058,"errmsg":"markdown.content exceed max length 4096. Invalid input invalid Request Parameter, hint: [1700000000000000000000001], from ip: 127.0.0.1, more info at https://open.work.weixin.qq.com/devtool/query?e=40058"}`
	WeComBadType    = `{"errcode":40008,"errmsg":"invalid message type, hint: [1700000000000000000000002], from ip: 127.0.0.1, more info at https://open.work.weixin.qq.com/devtool/query?e=40008"}`
	WeComEmpty      = `{"errcode":44004,"errmsg":"empty content, hint: [1700000000000000000000003], from ip: 127.0.0.1, more info at https://open.work.weixin.qq.com/devtool/query?e=44004"}`
	WeComFreqLimit  = `{"errcode":45009,"errmsg":"api freq out of limit, hint: [1700000000000000000000004], from ip: 127.0.0.1, more info at https://open.work.weixin.qq.com/devtool/query?e=45009"}`
	WeComMaxContent = 4096
)

// WeComMessage is a received markdown message.
type WeComMessage struct {
	MsgType  string `json:"msgtype"`
	Markdown struct {
		Content string `json:"content"`
	} `json:"markdown"`
	// Mentioned are the <@userid> tags in the content.
	Mentioned []string `json:"-"`
}

var weComMentionRE = regexp.MustCompile(`<@([^>\s]+)>`)

// WeCom is a group robot: POST /cgi-bin/webhook/send?key=<key>.
type WeCom struct {
	bot[WeComMessage]
	Key string
}

// NewWeCom starts a stand-in robot, closed when the test ends.
func NewWeCom(t testing.TB, key string) *WeCom {
	w := &WeCom{Key: key}
	w.start(t, w.handle, []*window{{limit: 20, period: time.Minute}})
	return w
}

// URL is the robot's webhook URL, key included.
func (s *WeCom) URL() string { return s.Server.URL + "/cgi-bin/webhook/send?key=" + s.Key }

// handle runs with mu held, after any scripted answer (bot.start).
func (s *WeCom) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/cgi-bin/webhook/send" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if r.URL.Query().Get("key") != s.Key {
		writeJSON(w, WeComBadKey)
		return
	}
	if !s.allow() {
		writeJSON(w, WeComFreqLimit)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var m WeComMessage
	if err := json.Unmarshal(body, &m); err != nil || m.MsgType != "markdown" {
		writeJSON(w, WeComBadType)
		return
	}
	switch n := len(m.Markdown.Content); {
	case n == 0:
		writeJSON(w, WeComEmpty)
		return
	case n > WeComMaxContent: // bytes, not characters
		writeJSON(w, WeComTooLong)
		return
	}
	for _, sm := range weComMentionRE.FindAllStringSubmatch(m.Markdown.Content, -1) {
		m.Mentioned = append(m.Mentioned, sm[1])
	}
	s.received = append(s.received, m)
	writeJSON(w, WeComOK)
}
