package imtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// socketConn is one Socket Mode websocket. gorilla/websocket allows one
// writer at a time: wmu serialises hello, envelopes, pings and
// disconnect.
type socketConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	done chan struct{}
	once sync.Once
}

func (c *socketConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

func (c *socketConn) ping() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteControl(websocket.PingMessage, []byte("standin"), time.Now().Add(5*time.Second))
}

func (c *socketConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

// link is the websocket URL apps.connections.open handed out: one use
// per ticket.
func (s *SlackSocket) link(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	valid := s.tickets[ticket] && !s.closed
	delete(s.tickets, ticket)
	s.mu.Unlock()
	if !valid {
		http.Error(w, "invalid or used ticket", http.StatusUnauthorized)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &socketConn{ws: ws, done: make(chan struct{})}
	s.mu.Lock()
	s.conns[c] = true
	s.hellos++
	n, ping := len(s.conns), s.pingEvery
	s.mu.Unlock()
	hello := map[string]any{"type": "hello", "num_connections": n,
		"debug_info":      map[string]any{"host": "applink-standin", "build_number": 1, "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": s.AppID}}
	if err := c.write(hello); err != nil {
		s.drop(c)
		return
	}
	go s.pinger(c, ping)
	s.flushPending()
	s.readAcks(c)
}

func (s *SlackSocket) pinger(c *socketConn, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			if c.ping() != nil {
				s.drop(c)
				return
			}
		}
	}
}

// readAcks records what the app sends back: acks by envelope id.
func (s *SlackSocket) readAcks(c *socketConn) {
	defer s.drop(c)
	for {
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if err := c.ws.ReadJSON(&ack); err != nil {
			return
		}
		s.mu.Lock()
		if e, ok := s.envelopes[ack.EnvelopeID]; ok {
			e.Acked, e.AckPayload = true, ack.Payload
			if e.timer != nil {
				e.timer.Stop()
			}
		} else {
			s.strayAcks = append(s.strayAcks, ack.EnvelopeID)
		}
		s.mu.Unlock()
	}
}

func (s *SlackSocket) drop(c *socketConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.close()
}

// liveConns lists the open connections. Callers hold mu.
func (s *SlackSocket) liveConns() []*socketConn {
	out := make([]*socketConn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// Click is a person pressing a button of a message the app posted.
type Click struct {
	UserID, UserName  string
	ChannelID         string
	MessageTS         string
	ThreadTS          string // the thread the message is in, if any
	ActionID, BlockID string
	Value             string
	ButtonText        string
	Ephemeral         bool // the button is on an ephemeral message
}

// Click delivers the block_actions payload of c in an interactive
// envelope, as Slack sends it, and returns the envelope id.
func (s *SlackSocket) Click(c Click) string {
	payload, _ := json.Marshal(s.blockActions(c))
	return s.Deliver(payload)
}

// Deliver sends payload (any JSON, for hostile tests) as an interactive
// envelope on a live connection, or on the next one, and returns its id.
func (s *SlackSocket) Deliver(payload json.RawMessage) string {
	s.mu.Lock()
	e := &envelope{ID: randomID(), Payload: payload}
	s.envelopes[e.ID] = e
	s.order = append(s.order, e.ID)
	s.mu.Unlock()
	s.send(e, 0, "")
	return e.ID
}

// Redeliver sends an envelope again with its id (Slack does so when
// an ack was lost), whether or not it was acked.
func (s *SlackSocket) Redeliver(envelopeID string) {
	s.mu.Lock()
	e, ok := s.envelopes[envelopeID]
	attempt := 0
	if ok {
		attempt = e.Deliveries
	}
	s.mu.Unlock()
	if ok {
		s.send(e, attempt, "timeout")
	}
}

// send writes one delivery of e to one of the live connections (Slack
// picks one of the app's connections) and arms the ack timer.
func (s *SlackSocket) send(e *envelope, attempt int, reason string) {
	s.mu.Lock()
	conns := s.liveConns()
	if len(conns) == 0 {
		s.pending = append(s.pending, e.ID)
		s.mu.Unlock()
		return
	}
	e.Deliveries++
	timeout, maxRetries := s.ackTimeout, s.maxRetries
	if e.timer != nil {
		e.timer.Stop()
	}
	e.timer = time.AfterFunc(timeout, func() { s.expire(e, attempt, maxRetries) })
	s.mu.Unlock()
	msg := map[string]any{"envelope_id": e.ID, "type": "interactive", "payload": e.Payload,
		"accepts_response_payload": false, "retry_attempt": attempt, "retry_reason": reason}
	if conns[0].write(msg) != nil {
		s.drop(conns[0])
	}
}

// expire re-delivers an envelope its ack did not come back for.
func (s *SlackSocket) expire(e *envelope, attempt, maxRetries int) {
	s.mu.Lock()
	again := !e.Acked && !s.closed && attempt < maxRetries
	s.mu.Unlock()
	if again {
		s.send(e, attempt+1, "timeout")
	}
}

func (s *SlackSocket) flushPending() {
	s.mu.Lock()
	ids := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, id := range ids {
		s.mu.Lock()
		e := s.envelopes[id]
		s.mu.Unlock()
		s.send(e, 0, "")
	}
}

// Disconnect sends Slack's disconnect with reason (refresh_requested,
// warning, link_disabled) on every connection, and closes them after a
// short grace, as Slack does before it rotates a connection.
func (s *SlackSocket) Disconnect(reason string) {
	s.mu.Lock()
	conns, grace := s.liveConns(), s.closeGrace
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.write(map[string]any{"type": "disconnect", "reason": reason,
			"debug_info": map[string]any{"host": "applink-standin"}})
		time.AfterFunc(grace, func() { s.drop(c) })
	}
}

// Drop closes every connection without a word: a network loss.
func (s *SlackSocket) Drop() {
	s.mu.Lock()
	conns := s.liveConns()
	s.mu.Unlock()
	for _, c := range conns {
		s.drop(c)
	}
}

// blockActions is a block_actions payload as Slack sends it for a
// button on a message the app posted.
func (s *SlackSocket) blockActions(c Click) map[string]any {
	s.mu.Lock()
	responsePath := s.responsePath()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	now := time.Now()
	actionTS := fmt.Sprintf("%d.%06d", now.Unix(), seq)
	container := map[string]any{"type": "message", "message_ts": c.MessageTS, "channel_id": c.ChannelID, "is_ephemeral": c.Ephemeral}
	message := map[string]any{"type": "message", "subtype": "bot_message", "ts": c.MessageTS, "bot_id": "B0AICRTEST",
		"app_id": s.AppID, "team": s.TeamID, "text": "aicr review"}
	if c.ThreadTS != "" {
		container["thread_ts"] = c.ThreadTS
		message["thread_ts"] = c.ThreadTS
	}
	text := c.ButtonText
	if text == "" {
		text = c.ActionID
	}
	return map[string]any{
		"type":                  "block_actions",
		"user":                  map[string]any{"id": c.UserID, "username": c.UserName, "name": c.UserName, "team_id": s.TeamID},
		"api_app_id":            s.AppID,
		"token":                 "standinVerificationToken",
		"container":             container,
		"trigger_id":            fmt.Sprintf("%d.%d.%s", now.Unix(), seq, randomID()[:8]),
		"team":                  map[string]any{"id": s.TeamID, "domain": "aicr-standin"},
		"enterprise":            nil,
		"is_enterprise_install": false,
		"channel":               map[string]any{"id": c.ChannelID, "name": "reviews"},
		"message":               message,
		"state":                 map[string]any{"values": map[string]any{}},
		"response_url":          s.Server.URL + responsePath,
		"actions": []map[string]any{{"action_id": c.ActionID, "block_id": c.BlockID, "value": c.Value, "type": "button",
			"action_ts": actionTS, "text": map[string]any{"type": "plain_text", "text": text, "emoji": true}}},
	}
}
