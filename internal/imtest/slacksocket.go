package imtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// SlackSocket stands in for Slack's Socket Mode as an app uses it, and
// for the Web API calls the app makes after an interaction, as Slack
// documents them (api.slack.com/apis/connections/socket-implement):
//
//   - POST apps.connections.open with `Authorization: Bearer xapp-…`
//     answers {"ok":true,"url":"ws://…/link/?ticket=…&app_id=…"}; a
//     missing token is not_authed, a bot or user token
//     not_allowed_token_type, any other token invalid_auth (all HTTP 200,
//     as Slack answers). A ticket opens one websocket, once.
//   - The websocket greets with hello (num_connections, debug_info,
//     connection_info), pings every PingEvery (slack-go drops a
//     connection that goes 30 s without one), delivers interactive
//     envelopes, records acks ({"envelope_id": …}) and re-delivers an
//     envelope not acked within AckTimeout, up to MaxRetries times, with
//     retry_attempt and retry_reason "timeout". Disconnect sends Slack's
//     disconnect (refresh_requested) and closes the socket soon after.
//   - chat.postEphemeral (bot token) and the interaction's response_url
//     answer as Slack does and are recorded.
//
// Other Web API methods go to Fallback (a chat.postMessage stand-in),
// else unknown_method.
type SlackSocket struct {
	Server *httptest.Server
	// AppID names the app in hello and in the payloads.
	AppID  string
	TeamID string
	// Fallback serves every Web API method the stand-in does not; set it
	// before the first request, or use SetFallback.
	Fallback http.Handler

	mu          sync.Mutex
	fallback    http.Handler
	appToken    string
	botToken    string
	ackTimeout  time.Duration
	maxRetries  int
	pingEvery   time.Duration
	closeGrace  time.Duration
	tickets     map[string]bool
	conns       map[*socketConn]bool
	hellos      int
	opens       []OpenCall
	envelopes   map[string]*envelope
	order       []string
	pending     []string // envelopes waiting for a connection
	strayAcks   []string
	ephemerals  []Ephemeral
	responses   []ResponsePost
	responseURL map[string]int // response_url path → uses left
	seq         int
	closed      bool
}

// OpenCall is one apps.connections.open the stand-in answered: when,
// and the error it gave ("" when it opened).
type OpenCall struct {
	At    time.Time
	Error string
}

// Ephemeral is one chat.postEphemeral the stand-in accepted.
type Ephemeral struct {
	Channel  string
	User     string
	Text     string
	Blocks   string
	ThreadTS string
}

// ResponsePost is one message posted to an interaction's response_url.
type ResponsePost struct {
	Path string
	Body map[string]any
}

// envelope is one interactive envelope and its delivery record.
type envelope struct {
	ID         string
	Payload    json.RawMessage
	Deliveries int
	Acked      bool
	AckPayload json.RawMessage
	timer      *time.Timer
}

// Slack's answers to a bad apps.connections.open.
const (
	SlackNotAuthed      = "not_authed"
	SlackInvalidAuth    = "invalid_auth"
	SlackWrongTokenType = "not_allowed_token_type"
)

// NewSlackSocket starts the stand-in, accepting appToken on
// apps.connections.open and botToken on chat.postEphemeral, until the
// test ends.
func NewSlackSocket(t testing.TB, appToken, botToken string) *SlackSocket {
	s := &SlackSocket{AppID: "A0AICRTEST", TeamID: "T0AICRTEST", appToken: appToken, botToken: botToken,
		ackTimeout: 3 * time.Second, maxRetries: 3, pingEvery: 5 * time.Second, closeGrace: 500 * time.Millisecond,
		tickets: map[string]bool{}, conns: map[*socketConn]bool{}, envelopes: map[string]*envelope{},
		responseURL: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/apps.connections.open", s.open)
	mux.HandleFunc("/api/chat.postEphemeral", s.postEphemeral)
	mux.HandleFunc("/api/", s.serveOther)
	mux.HandleFunc("/link/", s.link)
	mux.HandleFunc("/actions/", s.respond)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// APIURL is the Web API base to configure as the channel's api_url.
func (s *SlackSocket) APIURL() string { return s.Server.URL + "/api/" }

// SetAppToken changes the app-level token the stand-in accepts (a
// rotation: connections already open stay open, as on Slack).
func (s *SlackSocket) SetAppToken(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appToken = tok
}

// SetTiming sets how long an envelope waits for its ack before it is
// re-delivered, how many times it is, and how often the socket pings.
func (s *SlackSocket) SetTiming(ackTimeout time.Duration, maxRetries int, pingEvery time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ackTimeout, s.maxRetries, s.pingEvery = ackTimeout, maxRetries, pingEvery
}

// Close ends every connection and the server.
func (s *SlackSocket) Close() {
	s.mu.Lock()
	s.closed = true
	conns := s.liveConns()
	for _, e := range s.envelopes {
		if e.timer != nil {
			e.timer.Stop()
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.Server.Close()
}

func (s *SlackSocket) open(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, `{"ok":false,"error":"insecure_request"}`)
		return
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	defer s.mu.Unlock()
	code := ""
	switch {
	case tok == "":
		code = SlackNotAuthed
	case strings.HasPrefix(tok, "xox"):
		code = SlackWrongTokenType
	case tok != s.appToken:
		code = SlackInvalidAuth
	}
	s.opens = append(s.opens, OpenCall{At: time.Now(), Error: code})
	if code != "" {
		writeJSON(w, `{"ok":false,"error":"`+code+`"}`)
		return
	}
	ticket := randomID()
	s.tickets[ticket] = true
	u := "ws" + strings.TrimPrefix(s.Server.URL, "http") + "/link/?ticket=" + ticket + "&app_id=" + s.AppID
	body, _ := json.Marshal(map[string]any{"ok": true, "url": u})
	writeJSON(w, string(body))
}

// botAuth checks a Web API call's bot token, in the Authorization
// header or the form, and answers Slack's error if it is wrong.
func (s *SlackSocket) botAuth(w http.ResponseWriter, r *http.Request) bool {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if tok == "" {
		tok = r.Form.Get("token")
	}
	code := ""
	switch {
	case tok == "":
		code = SlackNotAuthed
	case strings.HasPrefix(tok, "xapp-"):
		code = SlackWrongTokenType
	case tok != s.botToken:
		code = SlackInvalidAuth
	}
	if code != "" {
		writeJSON(w, `{"ok":false,"error":"`+code+`"}`)
		return false
	}
	return true
}

func (s *SlackSocket) postEphemeral(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, `{"ok":false,"error":"invalid_form_data"}`)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.botAuth(w, r) {
		return
	}
	e := Ephemeral{Channel: r.Form.Get("channel"), User: r.Form.Get("user"), Text: r.Form.Get("text"),
		Blocks: r.Form.Get("blocks"), ThreadTS: r.Form.Get("thread_ts")}
	switch {
	case e.Channel == "":
		writeJSON(w, `{"ok":false,"error":"channel_not_found"}`)
		return
	case e.User == "":
		writeJSON(w, `{"ok":false,"error":"user_not_found"}`)
		return
	case e.Text == "" && e.Blocks == "":
		writeJSON(w, `{"ok":false,"error":"no_text"}`)
		return
	case e.Blocks != "" && !json.Valid([]byte(e.Blocks)):
		writeJSON(w, `{"ok":false,"error":"invalid_blocks"}`)
		return
	}
	s.ephemerals = append(s.ephemerals, e)
	s.seq++
	writeJSON(w, fmt.Sprintf(`{"ok":true,"message_ts":"%d.%06d"}`, time.Now().Unix(), s.seq))
}

// respond is an interaction's response_url: JSON in, {"ok":true} out,
// at most five times, as Slack allows.
func (s *SlackSocket) respond(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	left, ok := s.responseURL[r.URL.Path]
	if !ok || left <= 0 || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, `{"ok":false,"error":"expired_url"}`)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil {
		writeJSON(w, `{"ok":false,"error":"invalid_payload"}`)
		return
	}
	if body["text"] == nil && body["blocks"] == nil {
		writeJSON(w, `{"ok":false,"error":"no_text"}`)
		return
	}
	s.responseURL[r.URL.Path] = left - 1
	s.responses = append(s.responses, ResponsePost{Path: r.URL.Path, Body: body})
	writeJSON(w, `{"ok":true}`)
}

// SetFallback routes every Web API method the stand-in does not serve
// (chat.postMessage, chat.update, conversations.history) to h, so one
// api_url serves the channel's posts and its Socket Mode.
func (s *SlackSocket) SetFallback(h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = h
}

func (s *SlackSocket) serveOther(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.fallback
	s.mu.Unlock()
	if h == nil {
		h = s.Fallback
	}
	if h != nil {
		h.ServeHTTP(w, r)
		return
	}
	w.WriteHeader(http.StatusNotFound)
	writeJSON(w, `{"ok":false,"error":"unknown_method","req_method":`+jsonString(strings.TrimPrefix(r.URL.Path, "/api/"))+`}`)
}

// Opens lists the apps.connections.open calls answered so far.
func (s *SlackSocket) Opens() []OpenCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]OpenCall(nil), s.opens...)
}

// Hellos counts the websockets greeted so far.
func (s *SlackSocket) Hellos() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hellos
}

// Connections counts the websockets open now.
func (s *SlackSocket) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Ephemerals lists the chat.postEphemeral calls accepted so far.
func (s *SlackSocket) Ephemerals() []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ephemeral(nil), s.ephemerals...)
}

// Responses lists the response_url posts accepted so far.
func (s *SlackSocket) Responses() []ResponsePost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ResponsePost(nil), s.responses...)
}

// Acked reports whether the envelope was acknowledged, and how many
// times it was delivered.
func (s *SlackSocket) Acked(envelopeID string) (acked bool, deliveries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.envelopes[envelopeID]
	if !ok {
		return false, 0
	}
	return e.Acked, e.Deliveries
}

// StrayAcks lists acks for envelopes the stand-in never sent.
func (s *SlackSocket) StrayAcks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.strayAcks...)
}

// WaitFor polls cond until it holds or timeout passes, then fails the
// test naming what it waited for.
func (s *SlackSocket) WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("slack socket stand-in: timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// responsePath is a fresh response_url path for one interaction.
func (s *SlackSocket) responsePath() string {
	p := "/actions/" + s.TeamID + "/" + fmt.Sprint(time.Now().UnixNano()) + "/" + url.PathEscape(randomID())
	s.responseURL[p] = 5
	return p
}

var upgrader = websocket.Upgrader{
	// slack-go sends Origin: https://api.slack.com, which is not this
	// host; Slack's own endpoint does not check it either.
	CheckOrigin: func(*http.Request) bool { return true },
}
