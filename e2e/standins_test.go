package e2e

// Stand-ins for the platforms internal/imtest has none for: Slack's Web
// API as the bot channel uses it (chat.postMessage, chat.update,
// conversations.history/replies), and incoming-webhook receivers (Slack's
// and the generic webhook's). Each answers as the platform documents:
// HTTP 200 with {"ok":false,"error":…} for Slack API errors.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// slackMessage is a message in the Slack stand-in's channel: a post, and
// its text and blocks as the last chat.update left them.
type slackMessage struct {
	Channel  string
	TS       string
	ThreadTS string
	Text     string
	Blocks   string
	Key      string // metadata dedupe_key
	Part     int    // metadata part
	// Updates counts the chat.update calls that changed it.
	Updates int
}

// slackUpdate is one chat.update call the stand-in answered ok.
type slackUpdate struct {
	Channel, TS, Text, Blocks string
}

// slackAPI stands in for Slack's Web API: form or bearer token, the bot
// token only. In the findings scenario it sits behind the Socket Mode
// stand-in (imtest.SlackSocket), which answers apps.connections.open and
// chat.postEphemeral itself and hands it every other method.
type slackAPI struct {
	token string

	mu       sync.Mutex
	messages []*slackMessage
	updates  []slackUpdate
	calls    map[string]int
	// failUpdates answers that many chat.update calls with HTTP 429 first
	// (ratelimited, Retry-After 1), as Slack does under load.
	failUpdates int
	seq         int
}

func newSlackAPI(t *testing.T, token string) (*slackAPI, *httptest.Server) {
	s := &slackAPI{token: token, calls: map[string]int{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *slackAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if tok == "" {
		tok = r.Form.Get("token")
	}
	if tok != s.token {
		_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
	switch method {
	case "chat.postMessage":
		s.postMessage(w, r)
	case "chat.update":
		s.update(w, r)
	case "conversations.history":
		var msgs []map[string]any
		for i := len(s.messages) - 1; i >= 0; i-- {
			if m := s.messages[i]; m.ThreadTS == "" && m.Channel == r.Form.Get("channel") {
				msgs = append(msgs, m.wire())
			}
		}
		writeSlackJSON(w, map[string]any{"ok": true, "messages": msgs, "has_more": false})
	case "conversations.replies":
		ts := r.Form.Get("ts")
		var msgs []map[string]any
		for _, m := range s.messages {
			if m.TS == ts || m.ThreadTS == ts {
				msgs = append(msgs, m.wire())
			}
		}
		if len(msgs) == 0 {
			_, _ = io.WriteString(w, `{"ok":false,"error":"thread_not_found"}`)
			return
		}
		writeSlackJSON(w, map[string]any{"ok": true, "messages": msgs, "has_more": false})
	case "users.lookupByEmail":
		_, _ = io.WriteString(w, `{"ok":false,"error":"users_not_found"}`)
	default:
		_, _ = io.WriteString(w, `{"ok":false,"error":"unknown_method"}`)
	}
}

func (s *slackAPI) postMessage(w http.ResponseWriter, r *http.Request) {
	m := &slackMessage{Channel: r.Form.Get("channel"), ThreadTS: r.Form.Get("thread_ts"), Text: r.Form.Get("text"), Blocks: r.Form.Get("blocks")}
	if m.Channel == "" {
		_, _ = io.WriteString(w, `{"ok":false,"error":"channel_not_found"}`)
		return
	}
	if m.Text == "" && m.Blocks == "" {
		_, _ = io.WriteString(w, `{"ok":false,"error":"no_text"}`)
		return
	}
	if m.Blocks != "" {
		var blocks []any
		if err := json.Unmarshal([]byte(m.Blocks), &blocks); err != nil || len(blocks) > 50 {
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_blocks"}`)
			return
		}
	}
	if m.ThreadTS != "" && s.find(m.Channel, m.ThreadTS) == nil {
		_, _ = io.WriteString(w, `{"ok":false,"error":"thread_not_found"}`)
		return
	}
	var md struct {
		EventPayload struct {
			Key  string  `json:"dedupe_key"`
			Part float64 `json:"part"`
		} `json:"event_payload"`
	}
	_ = json.Unmarshal([]byte(r.Form.Get("metadata")), &md)
	m.Key, m.Part = md.EventPayload.Key, int(md.EventPayload.Part)
	s.seq++
	m.TS = fmt.Sprintf("1700000000.%06d", s.seq)
	s.messages = append(s.messages, m)
	writeSlackJSON(w, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS, "message": m.wire()})
}

// update is chat.update as Slack documents it: the message named by
// channel and ts gets the new text and blocks; an unknown one is
// message_not_found.
func (s *slackAPI) update(w http.ResponseWriter, r *http.Request) {
	if s.failUpdates > 0 {
		s.failUpdates--
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"ok":false,"error":"ratelimited"}`)
		return
	}
	channel, ts := r.Form.Get("channel"), r.Form.Get("ts")
	if channel == "" {
		_, _ = io.WriteString(w, `{"ok":false,"error":"channel_not_found"}`)
		return
	}
	m := s.find(channel, ts)
	if m == nil {
		_, _ = io.WriteString(w, `{"ok":false,"error":"message_not_found"}`)
		return
	}
	text, blocks := r.Form.Get("text"), r.Form.Get("blocks")
	if text == "" && blocks == "" {
		_, _ = io.WriteString(w, `{"ok":false,"error":"no_text"}`)
		return
	}
	if blocks != "" {
		var bs []any
		if err := json.Unmarshal([]byte(blocks), &bs); err != nil || len(bs) > 50 {
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_blocks"}`)
			return
		}
	}
	m.Text, m.Blocks = text, blocks
	m.Updates++
	s.updates = append(s.updates, slackUpdate{Channel: channel, TS: ts, Text: text, Blocks: blocks})
	writeSlackJSON(w, map[string]any{"ok": true, "channel": channel, "ts": ts, "text": text, "message": m.wire()})
}

func (s *slackAPI) find(channel, ts string) *slackMessage {
	for _, m := range s.messages {
		if m.Channel == channel && m.TS == ts {
			return m
		}
	}
	return nil
}

func (m *slackMessage) wire() map[string]any {
	event := "aicr_review"
	if m.ThreadTS != "" {
		event = "aicr_review_part"
	}
	out := map[string]any{"type": "message", "ts": m.TS, "text": m.Text,
		"metadata": map[string]any{"event_type": event, "event_payload": map[string]any{"dedupe_key": m.Key, "part": m.Part}}}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
	}
	if m.Blocks != "" {
		out["blocks"] = json.RawMessage(m.Blocks)
	}
	return out
}

// Messages returns copies of the channel's messages, in posting order.
func (s *slackAPI) Messages() []slackMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]slackMessage, len(s.messages))
	for i, m := range s.messages {
		out[i] = *m
	}
	return out
}

// Updates returns the chat.update calls answered ok.
func (s *slackAPI) Updates() []slackUpdate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]slackUpdate(nil), s.updates...)
}

// Calls counts the calls of a Web API method, failed ones too.
func (s *slackAPI) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// FailUpdates makes the next n chat.update calls fail with 429.
func (s *slackAPI) FailUpdates(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failUpdates = n
}

func writeSlackJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	_, _ = w.Write(b)
}

// hookSink is an incoming-webhook receiver at path: Slack's (plain "ok")
// and the generic webhook's (JSON, with an Idempotency-Key header).
type hookSink struct {
	path string

	mu       sync.Mutex
	received []hookDelivery
}

type hookDelivery struct {
	IdempotencyKey string
	Body           []byte
}

func newHookSink(t *testing.T, path string) (*hookSink, *httptest.Server) {
	h := &hookSink{path: path}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != h.path {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "no_service")
		return
	}
	body, _ := io.ReadAll(r.Body)
	if !json.Valid(body) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "invalid_payload")
		return
	}
	h.mu.Lock()
	h.received = append(h.received, hookDelivery{IdempotencyKey: r.Header.Get("Idempotency-Key"), Body: body})
	h.mu.Unlock()
	_, _ = io.WriteString(w, "ok")
}

func (h *hookSink) Received() []hookDelivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookDelivery(nil), h.received...)
}
