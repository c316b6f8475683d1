package imtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The stand-in speaks the protocol as Slack documents it; these tests
// talk to it with a bare websocket client, not slack-go, so a client bug
// cannot hide a stand-in bug.

func openCall(t *testing.T, s *SlackSocket, method, auth string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, s.APIURL()+"apps.connections.open", nil)
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("apps.connections.open: HTTP %d, Slack answers 200", resp.StatusCode)
	}
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSlackSocketOpenRefusesWrongTokens(t *testing.T) {
	s := NewSlackSocket(t, "xapp-1-good", "xoxb-bot")
	for _, c := range []struct{ method, auth, want string }{
		{http.MethodPost, "", SlackNotAuthed},
		{http.MethodPost, "xoxb-bot", SlackWrongTokenType},
		{http.MethodPost, "xapp-1-other", SlackInvalidAuth},
		{http.MethodGet, "xapp-1-good", "insecure_request"},
	} {
		out := openCall(t, s, c.method, c.auth)
		if out["ok"] != false || out["error"] != c.want {
			t.Errorf("%s with %q: %v, want error %s", c.method, c.auth, out, c.want)
		}
	}
	out := openCall(t, s, http.MethodPost, "xapp-1-good")
	u, _ := out["url"].(string)
	if out["ok"] != true || !strings.HasPrefix(u, "ws://") || !strings.Contains(u, "ticket=") || !strings.Contains(u, "app_id=A0AICRTEST") {
		t.Fatalf("open answer %v", out)
	}
	if n := len(s.Opens()); n != 4 {
		t.Errorf("recorded %d POSTs to apps.connections.open, want 4", n)
	}
}

func dial(t *testing.T, s *SlackSocket) *websocket.Conn {
	t.Helper()
	u := openCall(t, s, http.MethodPost, "xapp-1-good")["url"].(string)
	ws, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	// A ticket opens one socket.
	if _, resp, err := websocket.DefaultDialer.Dial(u, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a used ticket dialled again: %v %v", resp, err)
	}
	return ws
}

func read(t *testing.T, ws *websocket.Conn) map[string]any {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var m map[string]any
	if err := ws.ReadJSON(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSlackSocketHelloEnvelopesAcksAndRetries(t *testing.T) {
	s := NewSlackSocket(t, "xapp-1-good", "xoxb-bot")
	s.SetTiming(200*time.Millisecond, 2, time.Hour)
	ws := dial(t, s)
	hello := read(t, ws)
	if hello["type"] != "hello" || hello["num_connections"] != float64(1) ||
		hello["connection_info"].(map[string]any)["app_id"] != "A0AICRTEST" || hello["debug_info"].(map[string]any)["host"] == "" {
		t.Fatalf("hello: %v", hello)
	}

	id := s.Click(Click{UserID: "U1", UserName: "ann", ChannelID: "C1", MessageTS: "1.2", ActionID: "a", BlockID: "b", Value: "7"})
	env := read(t, ws)
	if env["type"] != "interactive" || env["envelope_id"] != id || env["retry_attempt"] != float64(0) || env["accepts_response_payload"] != false {
		t.Fatalf("envelope: %v", env)
	}
	p := env["payload"].(map[string]any)
	act := p["actions"].([]any)[0].(map[string]any)
	if p["type"] != "block_actions" || p["user"].(map[string]any)["id"] != "U1" || p["trigger_id"] == "" ||
		act["type"] != "button" || act["value"] != "7" || act["action_ts"] == "" || !strings.HasPrefix(p["response_url"].(string), s.Server.URL) {
		t.Fatalf("payload: %v", p)
	}
	// Not acked: Slack sends it again with the same id, then gives up.
	for attempt := 1; attempt <= 2; attempt++ {
		again := read(t, ws)
		if again["envelope_id"] != id || again["retry_attempt"] != float64(attempt) || again["retry_reason"] != "timeout" {
			t.Fatalf("re-delivery %d: %v", attempt, again)
		}
	}
	_ = ws.SetReadDeadline(time.Now().Add(600 * time.Millisecond))
	var extra map[string]any
	if err := ws.ReadJSON(&extra); err == nil {
		t.Fatalf("a delivery beyond the retries: %v", extra)
	}
	if acked, n := s.Acked(id); acked || n != 3 {
		t.Errorf("acked %v after %d deliveries, want false after 3", acked, n)
	}

	// An ack stops the retries.
	ws.Close()
	s.WaitFor(t, "the first socket to close", 2*time.Second, func() bool { return s.Connections() == 0 })
	ws2 := dial(t, s)
	read(t, ws2) // hello
	id = s.Click(Click{UserID: "U1", ChannelID: "C1", MessageTS: "1.2", ActionID: "a", BlockID: "b", Value: "7"})
	if env := read(t, ws2); env["envelope_id"] != id {
		t.Fatalf("envelope %v", env)
	}
	if err := ws2.WriteJSON(map[string]any{"envelope_id": id}); err != nil {
		t.Fatal(err)
	}
	s.WaitFor(t, "the ack", 2*time.Second, func() bool { a, _ := s.Acked(id); return a })
	_ = ws2.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if err := ws2.ReadJSON(&extra); err == nil {
		t.Fatalf("re-delivered after the ack: %v", extra)
	}
}

func TestSlackSocketDisconnectThenClose(t *testing.T) {
	s := NewSlackSocket(t, "xapp-1-good", "xoxb-bot")
	ws := dial(t, s)
	read(t, ws)
	s.Disconnect("refresh_requested")
	if m := read(t, ws); m["type"] != "disconnect" || m["reason"] != "refresh_requested" {
		t.Fatalf("disconnect: %v", m)
	}
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("the socket stayed open after disconnect")
	}
	s.WaitFor(t, "no connection", 2*time.Second, func() bool { return s.Connections() == 0 })
}

func TestSlackSocketEphemeralAndResponseURL(t *testing.T) {
	s := NewSlackSocket(t, "xapp-1-good", "xoxb-bot")
	post := func(token string, form url.Values) string {
		req, _ := http.NewRequest(http.MethodPost, s.APIURL()+"chat.postEphemeral", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	good := url.Values{"channel": {"C1"}, "user": {"U1"}, "text": {"hi"}, "thread_ts": {"1.1"}}
	if got := post("xapp-1-good", good); !strings.Contains(got, SlackWrongTokenType) {
		t.Errorf("an app token on chat.postEphemeral: %s", got)
	}
	if got := post("xoxb-bot", url.Values{"channel": {"C1"}, "user": {"U1"}}); !strings.Contains(got, "no_text") {
		t.Errorf("no text: %s", got)
	}
	if got := post("xoxb-bot", good); !strings.Contains(got, `"ok":true`) || !strings.Contains(got, "message_ts") {
		t.Errorf("postEphemeral: %s", got)
	}
	if e := s.Ephemerals(); len(e) != 1 || e[0].ThreadTS != "1.1" || e[0].User != "U1" {
		t.Errorf("recorded %+v", e)
	}

	var payload map[string]any
	_ = json.Unmarshal(mustJSON(s.blockActions(Click{UserID: "U1"})), &payload)
	ru := payload["response_url"].(string)
	for i := range 6 {
		resp, err := http.Post(ru, "application/json", strings.NewReader(`{"text":"done","response_type":"ephemeral"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := http.StatusOK; i == 5 {
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("a sixth use of a response_url: HTTP %d, want 404", resp.StatusCode)
			}
		} else if resp.StatusCode != want {
			t.Errorf("response_url use %d: HTTP %d", i+1, resp.StatusCode)
		}
	}
	if n := len(s.Responses()); n != 5 {
		t.Errorf("recorded %d responses, want 5", n)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
