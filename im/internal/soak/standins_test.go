package soak

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultHost is one IM host on a fixed loopback address that can go away:
// "refuse" closes the listener (connection refused), "500" answers every
// request with an HTTP 500, "" serves normally. It keeps every request
// body it was sent, whatever it answered, for the credential grep.
type faultHost struct {
	name    string
	addr    string
	handler http.Handler

	mu       sync.Mutex
	mode     string
	srv      *http.Server
	bodies   bytes.Buffer
	hits     int
	accepted []delivery
}

func startHost(t *testing.T, name string, h http.Handler) *faultHost {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &faultHost{name: name, addr: ln.Addr().String(), handler: h}
	f.serve(ln)
	t.Cleanup(func() { f.setMode(t, "refuse") })
	return f
}

func (f *faultHost) URL() string { return "http://" + f.addr }

func (f *faultHost) serve(ln net.Listener) {
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	go func(s *http.Server) { _ = s.Serve(ln) }(f.srv)
}

func (f *faultHost) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	// What a message carries, not how it is addressed: the URL's token and
	// the Slack API token in the form are transport, not content.
	content := body
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if form, err := url.ParseQuery(string(body)); err == nil {
			form.Del("token")
			content = []byte(form.Encode())
		}
	}
	f.mu.Lock()
	fmt.Fprintf(&f.bodies, "%s\n", content)
	f.hits++
	mode := f.mode
	f.mu.Unlock()
	if mode == "500" {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "<html><body>500 Internal Server Error</body></html>")
		return
	}
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	f.handler.ServeHTTP(rec, r)
	if id, ok := identify(r.URL.Path, body); ok && rec.status == http.StatusOK && acceptedRE.Match(rec.head) {
		id.at = time.Now()
		f.mu.Lock()
		f.accepted = append(f.accepted, id)
		f.mu.Unlock()
	}
}

// recorder keeps the status and the start of an answer, to tell an
// accepted message from a refused one.
type recorder struct {
	http.ResponseWriter
	status int
	head   []byte
}

func (r *recorder) WriteHeader(code int) { r.status = code; r.ResponseWriter.WriteHeader(code) }

func (r *recorder) Write(b []byte) (int, error) {
	if len(r.head) < 200 {
		r.head = append(r.head, b[:min(len(b), 200-len(r.head))]...)
	}
	return r.ResponseWriter.Write(b)
}

// acceptedRE matches every platform's success answer.
var acceptedRE = regexp.MustCompile(`^(ok|\{"ok":true.*|.*"code":0[,}].*|.*"errcode":0[,}].*)$`)

// delivery is one accepted message: which channel, run and part, and
// when it arrived.
type delivery struct {
	channel string
	run     int64
	part    int
	at      time.Time
	// title is the report's title without its part label: the parts of
	// a split report before the last carry no run (it is in the footer),
	// so they are the run of the next part with their title (resolveRuns).
	title string
}

var (
	// A bot message's title, with its part label when split: "aicr
	// review: beta r2 by bob (1/2)", ended by the JSON string or a line.
	titleRE = regexp.MustCompile(`aicr review: ([^"\\\n]*?)(?: \((\d+)/(\d+)\))?(?:"|\\n|\n|$)`)
	// The footer's run: "… · run 7", a line "run 7" at the end of a
	// text (a JSON string's or a Markdown body's), or a JSON string of
	// its own (a failed run's Slack footer block names no reviewer).
	footerRunRE = regexp.MustCompile(`(?:· |\\n|\n|")run (\d+)(?:"|\\n|\n|$)`)
	runIDRE     = regexp.MustCompile(`"run_id":(\d+)`)
	slackMDRE   = regexp.MustCompile(`"dedupe_key":"aicr-(\d+)-slack-bot(?:-failure)?","part":(\d+)`)
	pathChanRE  = map[string]string{"/open-apis/": "feishu", "/robot/": "dingtalk", "/cgi-bin/": "wecom",
		"/services/": "slack-hook", "/hooks/": "webhook", "/api/chat.postMessage": "slack-bot"}
)

// identify names the report a request carries, from the request alone.
func identify(path string, body []byte) (delivery, bool) {
	var d delivery
	for prefix, ch := range pathChanRE {
		if strings.HasPrefix(path, prefix) {
			d.channel = ch
		}
	}
	var m [][]byte
	switch d.channel {
	case "":
		return d, false
	case "slack-bot":
		form, _ := url.ParseQuery(string(body))
		if m = slackMDRE.FindSubmatch([]byte(form.Get("metadata"))); m == nil {
			return d, false
		}
		d.part, _ = strconv.Atoi(string(m[2]))
	case "webhook":
		if m = runIDRE.FindSubmatch(body); m == nil {
			return d, false
		}
		d.part = 1
	default:
		t := titleRE.FindSubmatch(body)
		if t == nil {
			return d, false
		}
		d.title = string(t[1])
		d.part = 1
		if len(t[2]) > 0 {
			d.part, _ = strconv.Atoi(string(t[2]))
		}
		if r := footerRunRE.FindAllSubmatch(body, -1); r != nil {
			d.run, _ = strconv.ParseInt(string(r[len(r)-1][1]), 10, 64)
		}
		return d, true
	}
	d.run, _ = strconv.ParseInt(string(m[1]), 10, 64)
	return d, true
}

// resolveRuns gives the parts that name no run (all but the last of a
// split report) the run of the next part of the same channel and title:
// a report's parts are sent in order, and a resumed one continues with
// its remaining parts, so the part that ends it, with the footer, comes
// after them.
func resolveRuns(ds []delivery) []delivery {
	type key struct{ channel, title string }
	next := map[key]int64{}
	for i := len(ds) - 1; i >= 0; i-- {
		k := key{ds[i].channel, ds[i].title}
		if ds[i].title == "" {
			continue
		}
		if ds[i].run > 0 {
			next[k] = ds[i].run
		} else {
			ds[i].run = next[k]
		}
	}
	return ds
}

func (f *faultHost) deliveries() []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return resolveRuns(append([]delivery(nil), f.accepted...))
}

// setMode switches the host between "", "500" and "refuse"; leaving
// "refuse" listens on the same address again.
func (f *faultHost) setMode(t *testing.T, mode string) {
	f.mu.Lock()
	old := f.mode
	f.mode = mode
	srv := f.srv
	f.mu.Unlock()
	switch {
	case mode == "refuse" && old != "refuse":
		_ = srv.Close()
	case mode != "refuse" && old == "refuse":
		var ln net.Listener
		var err error
		for range 50 { // the old socket may linger a moment
			if ln, err = net.Listen("tcp", f.addr); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("%s: listen again on %s: %v", f.name, f.addr, err)
			return
		}
		f.mu.Lock()
		f.serve(ln)
		f.mu.Unlock()
	}
}

func (f *faultHost) allBodies() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies.String()
}

// proxyTo forwards a path prefix to one of the imtest stand-ins, which
// listen on their own httptest servers; the fault host in front of them
// is what the daemon is configured with.
func proxyTo(raw string) http.Handler {
	u, _ := url.Parse(raw)
	return httputil.NewSingleHostReverseProxy(u)
}

// slackPost is one chat.postMessage the Slack stand-in accepted.
type slackPost struct {
	Channel  string
	TS       string
	ThreadTS string
	Text     string
	Blocks   string
	Key      string // metadata dedupe_key
	Part     int    // metadata part
}

// slackAPI stands in for Slack's Web API as the bot channel uses it
// (chat.postMessage with Block Kit and metadata, conversations.history and
// conversations.replies to find a report after a crash, users.lookupByEmail):
// form or bearer token, HTTP 200 with {"ok":false,"error":…} for API errors.
type slackAPI struct {
	token string

	mu    sync.Mutex
	posts []slackPost
	seq   int
	// updates counts the chat.update edits (resolutions).
	updates int
}

func (s *slackAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	switch strings.TrimPrefix(r.URL.Path, "/api/") {
	case "chat.postMessage":
		p := slackPost{Channel: r.Form.Get("channel"), ThreadTS: r.Form.Get("thread_ts"), Text: r.Form.Get("text"), Blocks: r.Form.Get("blocks")}
		var blocks []any
		if err := json.Unmarshal([]byte(p.Blocks), &blocks); err != nil || len(blocks) > 50 {
			_, _ = io.WriteString(w, `{"ok":false,"error":"invalid_blocks"}`)
			return
		}
		var md struct {
			EventPayload struct {
				Key  string  `json:"dedupe_key"`
				Part float64 `json:"part"`
			} `json:"event_payload"`
		}
		_ = json.Unmarshal([]byte(r.Form.Get("metadata")), &md)
		p.Key, p.Part = md.EventPayload.Key, int(md.EventPayload.Part)
		s.seq++
		p.TS = fmt.Sprintf("1700000000.%06d", s.seq)
		s.posts = append(s.posts, p)
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, p.Channel, p.TS)
	case "conversations.history":
		var msgs []map[string]any
		for i := len(s.posts) - 1; i >= 0; i-- {
			if p := s.posts[i]; p.ThreadTS == "" {
				msgs = append(msgs, s.message(p, "aicr_review"))
			}
		}
		b, _ := json.Marshal(map[string]any{"ok": true, "messages": msgs})
		_, _ = w.Write(b)
	case "conversations.replies":
		ts := r.Form.Get("ts")
		var msgs []map[string]any
		for _, p := range s.posts {
			if p.TS == ts {
				msgs = append(msgs, s.message(p, "aicr_review"))
			} else if p.ThreadTS == ts {
				msgs = append(msgs, s.message(p, "aicr_review_part"))
			}
		}
		b, _ := json.Marshal(map[string]any{"ok": true, "messages": msgs})
		_, _ = w.Write(b)
	case "chat.update":
		// A resolution edits the report it follows up, as Slack documents
		// chat.update: the message must exist in the conversation.
		for i, p := range s.posts {
			if p.TS == r.Form.Get("ts") && p.Channel == r.Form.Get("channel") {
				s.posts[i].Text, s.posts[i].Blocks = r.Form.Get("text"), r.Form.Get("blocks")
				s.updates++
				fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, p.Channel, p.TS)
				return
			}
		}
		_, _ = io.WriteString(w, `{"ok":false,"error":"message_not_found"}`)
	case "users.lookupByEmail":
		_, _ = io.WriteString(w, `{"ok":false,"error":"users_not_found"}`)
	default:
		_, _ = io.WriteString(w, `{"ok":false,"error":"unknown_method"}`)
	}
}

func (s *slackAPI) message(p slackPost, event string) map[string]any {
	m := map[string]any{"type": "message", "ts": p.TS, "text": p.Text,
		"metadata": map[string]any{"event_type": event, "event_payload": map[string]any{"dedupe_key": p.Key, "part": p.Part}}}
	if p.ThreadTS != "" {
		m["thread_ts"] = p.ThreadTS
	}
	return m
}

func (s *slackAPI) Posts() []slackPost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]slackPost(nil), s.posts...)
}

// hookSink is an incoming-webhook receiver: Slack's (plain "ok") and the
// generic webhook's (JSON with run_id and an Idempotency-Key header).
type hookSink struct {
	path string

	mu       sync.Mutex
	received []hookDelivery
}

type hookDelivery struct {
	IdempotencyKey string
	Body           []byte
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
