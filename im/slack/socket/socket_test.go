package socket_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	aicrslack "github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/im/slack/socket"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/secret"
	"github.com/aicr-dev/aicr/weblink"
)

const (
	appToken = "xapp-1-A0AICRTEST-0123456789-feedfacecafe"
	botToken = "xoxb-socket-test-0123456789"
	conv     = "C0REVIEWS"
)

// logBuf collects the client's log lines for assertions.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// harness is the stand-in, a store with findings, and the real client
// (slack-go's socketmode) running against them.
type harness struct {
	t      *testing.T
	slack  *imtest.SlackSocket
	store  socket.Store
	logs   *logBuf
	dir    string
	counts map[string]int
	mu     sync.Mutex
	stop   func()
}

func newHarness(t *testing.T, store socket.Store) *harness {
	t.Helper()
	h := &harness{t: t, slack: imtest.NewSlackSocket(t, appToken, botToken), store: store, logs: &logBuf{},
		dir: t.TempDir(), counts: map[string]int{}}
	h.slack.SetTiming(500*time.Millisecond, 3, 200*time.Millisecond)
	h.writeSecret("app-token", appToken)
	h.writeSecret("bot-token", botToken)
	return h
}

func (h *harness) writeSecret(name, value string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), []byte(value+"\n"), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) app() socket.App {
	return socket.App{Channels: []string{"slack-reviews"}, APIURL: h.slack.APIURL(),
		Token: secret.Ref{File: filepath.Join(h.dir, "app-token")},
		Bots:  []socket.Bot{{Conversation: conv, Token: secret.Ref{File: filepath.Join(h.dir, "bot-token")}}}}
}

// start runs the client until the test ends (or h.stop).
func (h *harness) start(opts socket.Options) {
	h.t.Helper()
	opts.Store = h.store
	opts.Logger = slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.Counted = func(a findings.Action, v findings.Via) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.counts[string(a)+"/"+string(v)]++
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); socket.Run(ctx, h.app(), opts) }()
	h.stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			h.t.Fatal("socket.Run did not return within 5s of its context ending")
		}
	}
	h.t.Cleanup(h.stop)
}

func (h *harness) connected(n int) {
	h.t.Helper()
	h.slack.WaitFor(h.t, "a Socket Mode connection", 10*time.Second, func() bool {
		return h.slack.Hellos() >= n && h.slack.Connections() > 0
	})
}

func (h *harness) click(user, name, action string, id int64) string {
	return h.slack.Click(imtest.Click{UserID: user, UserName: name, ChannelID: conv, MessageTS: "1700000000.000200",
		ThreadTS: "1700000000.000100", ActionID: aicrslack.ActionID(action), BlockID: "aicr.finding.1",
		Value: aicrslack.ActionValue(id)})
}

func (h *harness) ephemerals(n int) []imtest.Ephemeral {
	h.t.Helper()
	h.slack.WaitFor(h.t, "the answer to the click", 10*time.Second, func() bool { return len(h.slack.Ephemerals()) >= n })
	return h.slack.Ephemerals()
}

func (h *harness) acked(env string) {
	h.t.Helper()
	h.slack.WaitFor(h.t, "the envelope's ack", 10*time.Second, func() bool { ok, _ := h.slack.Acked(env); return ok })
}

func (h *harness) count(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[key]
}

func TestSocketClickDismissesAsTheUser(t *testing.T) {
	store := newStore(t)
	id := store.add(t, findings.Finding{Repo: "main", Path: "src/db.go", Line: 42, Category: "security"})
	h := newHarness(t, store)
	h.start(socket.Options{Users: []im.Identity{{VCSUser: "alice", SlackID: "U0ALICE"}}})
	h.connected(1)

	env := h.click("U0ALICE", "alice.smith", string(findings.ActionFalsePositive), id)
	h.acked(env)
	answer := h.ephemerals(1)[0]

	f, err := store.GetFinding(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if f.State != findings.StateDismissed || f.Dismissal != findings.ActionFalsePositive {
		t.Fatalf("finding after the click: state %s dismissal %s, want dismissed false_positive", f.State, f.Dismissal)
	}
	if f.ActedBy != "alice (slack:U0ALICE alice.smith)" || f.ActedVia != findings.ViaSlack {
		t.Errorf("actor %q via %q, want the [[user]] behind the Slack id, via slack", f.ActedBy, f.ActedVia)
	}
	if answer.Channel != conv || answer.User != "U0ALICE" || answer.ThreadTS != "1700000000.000100" {
		t.Errorf("answer went to %+v, want the clicking user in the button's thread", answer)
	}
	if !strings.Contains(answer.Text, "You dismissed finding #") || !strings.Contains(answer.Text, "false positive") ||
		!strings.Contains(answer.Text, "src/db.go:42") || !strings.Contains(answer.Blocks, aicrslack.ActionID("reopen")) {
		t.Errorf("answer does not say what was done and offer Reopen:\n%s\n%s", answer.Text, answer.Blocks)
	}
	if n := h.count("false_positive/slack"); n != 1 {
		t.Errorf("counted %d false_positive/slack actions, want 1", n)
	}
	imtest.AssertNoLeak(t, "log", h.logs.String(), appToken, botToken)

	// The Reopen button of the answer takes the dismissal back.
	env = h.slack.Click(imtest.Click{UserID: "U0BOB", UserName: "bob", ChannelID: conv, MessageTS: "1700000000.000300",
		ActionID: aicrslack.ActionID("reopen"), BlockID: "aicr.undo.1", Value: aicrslack.ActionValue(id), Ephemeral: true})
	h.acked(env)
	answer = h.ephemerals(2)[1]
	f, _ = store.GetFinding(context.Background(), id)
	if f.State != findings.StateReopened || f.ActedBy != "slack:U0BOB (bob)" {
		t.Errorf("after Reopen: state %s by %q, want reopened by slack:U0BOB (bob)", f.State, f.ActedBy)
	}
	if !strings.Contains(answer.Text, "You reopened finding #") {
		t.Errorf("reopen answer: %s", answer.Text)
	}
}

func TestSocketEnvelopeSeenTwiceAppliesOnce(t *testing.T) {
	store := newStore(t)
	id := store.add(t, findings.Finding{Repo: "main", Path: "a.go", Line: 1})
	h := newHarness(t, store)
	h.start(socket.Options{})
	h.connected(1)

	env := h.click("U0ALICE", "alice", string(findings.ActionUseful), id)
	h.acked(env)
	h.ephemerals(1)
	// Slack re-sends an envelope whose ack it did not get: same id,
	// retry_attempt 1. And the same click in a new envelope.
	h.slack.Redeliver(env)
	h.slack.WaitFor(t, "the re-delivery's ack", 5*time.Second, func() bool { _, n := h.slack.Acked(env); return n == 2 })
	time.Sleep(300 * time.Millisecond)

	f, _ := store.GetFinding(context.Background(), id)
	if f.Useful != 1 {
		t.Errorf("useful votes after one click delivered twice: %d, want 1", f.Useful)
	}
	if n := len(h.slack.Ephemerals()); n != 1 {
		t.Errorf("%d answers to one click, want 1", n)
	}
	if strays := h.slack.StrayAcks(); len(strays) > 0 {
		t.Errorf("acks for envelopes never sent: %v", strays)
	}
	// Another person's click counts.
	h.acked(h.click("U0BOB", "bob", string(findings.ActionUseful), id))
	h.ephemerals(2)
	if f, _ := store.GetFinding(context.Background(), id); f.Useful != 2 {
		t.Errorf("useful votes after a second click: %d, want 2", f.Useful)
	}
}

func TestSocketReconnectsAfterRefreshAndNetworkLoss(t *testing.T) {
	store := newStore(t)
	id := store.add(t, findings.Finding{Repo: "main", Path: "a.go", Line: 1})
	h := newHarness(t, store)
	h.start(socket.Options{})
	h.connected(1)

	h.slack.Disconnect("refresh_requested")
	h.connected(2)
	h.slack.Drop()
	h.connected(3)
	h.acked(h.click("U0ALICE", "alice", string(findings.ActionWontFix), id))
	h.ephemerals(1)
	if f, _ := store.GetFinding(context.Background(), id); f.State != findings.StateDismissed {
		t.Fatalf("click after two reconnects: state %s, want dismissed", f.State)
	}
	// A refresh reconnects at once; a network loss after a stable
	// connection too: no error is logged for either.
	if strings.Contains(h.logs.String(), "level=ERROR") {
		t.Errorf("a refresh logged an error:\n%s", h.logs.String())
	}
}

func TestSocketStopEndsTheConnection(t *testing.T) {
	h := newHarness(t, newStore(t))
	h.start(socket.Options{})
	h.connected(1)
	start := time.Now()
	h.stop()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stop took %s", d)
	}
	h.slack.WaitFor(t, "the connection to close", 5*time.Second, func() bool { return h.slack.Connections() == 0 })
	opens := len(h.slack.Opens())
	time.Sleep(1500 * time.Millisecond)
	if n := len(h.slack.Opens()); n != opens {
		t.Errorf("%d apps.connections.open after the stop", n-opens)
	}
}

func TestSocketWrongTokenBacksOffThenRotationConnects(t *testing.T) {
	h := newHarness(t, newStore(t))
	h.writeSecret("app-token", "xapp-1-A0AICRTEST-wrong-000000")
	h.start(socket.Options{MinBackoff: 400 * time.Millisecond, MaxBackoff: 2 * time.Second})
	time.Sleep(2500 * time.Millisecond)
	opens := h.slack.Opens()
	// 0, ~0.4, ~1.2, ~2.8 s: a few attempts, not a spin.
	if len(opens) < 2 || len(opens) > 4 {
		t.Errorf("%d apps.connections.open in 2.5s with a wrong token, want 2 to 4 (backoff)", len(opens))
	}
	for _, o := range opens {
		if o.Error != imtest.SlackInvalidAuth {
			t.Errorf("open answered %q, want invalid_auth", o.Error)
		}
	}
	logs := h.logs.String()
	if n := strings.Count(logs, "level=ERROR"); n != 1 || !strings.Contains(logs, "invalid_auth") ||
		!strings.Contains(logs, "app_token_env/app_token_file") {
		t.Errorf("want one clear ERROR naming invalid_auth and the keys, got %d:\n%s", n, logs)
	}
	imtest.AssertNoLeak(t, "log", logs, "xapp-1-A0AICRTEST-wrong-000000", appToken)

	// The token is read at each connect: fixing the file is enough.
	h.writeSecret("app-token", appToken)
	h.connected(1)
}

func TestSocketBotTokenAsAppTokenIsAClearError(t *testing.T) {
	h := newHarness(t, newStore(t))
	h.writeSecret("app-token", botToken)
	h.start(socket.Options{MinBackoff: 200 * time.Millisecond})
	time.Sleep(700 * time.Millisecond)
	if n := len(h.slack.Opens()); n != 0 {
		t.Errorf("a bot token was sent to apps.connections.open %d times", n)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "bot token (xoxb-…), not an app-level token (xapp-…)") {
		t.Errorf("log does not say the token is a bot token:\n%s", logs)
	}
	imtest.AssertNoLeak(t, "log", logs, botToken)
}

func TestSocketHostilePayloadsChangeNothing(t *testing.T) {
	store := newStore(t)
	id := store.add(t, findings.Finding{Repo: "main", Path: "a.go", Line: 1})
	h := newHarness(t, store)
	h.start(socket.Options{})
	h.connected(1)

	huge := strings.Repeat("9", 200_000)
	var envs []string
	for _, c := range []imtest.Click{
		{ActionID: "aicr.finding.delete_everything", Value: aicrslack.ActionValue(id)},
		{ActionID: aicrslack.ActionID("false_positive"), Value: huge},
		{ActionID: aicrslack.ActionID("false_positive"), Value: "-1"},
		{ActionID: "some.other.button", Value: aicrslack.ActionValue(id)},
	} {
		c.UserID, c.UserName, c.ChannelID, c.MessageTS, c.BlockID = "U0MALLORY", "mallory", conv, "1.2", "b"
		envs = append(envs, h.slack.Click(c))
	}
	envs = append(envs,
		h.slack.Deliver(json.RawMessage(`{"type":"block_actions","user":{"id":"<!channel>"},"actions":[{"action_id":"aicr.finding.false_positive","block_id":"b","value":"1"}]}`)),
		h.slack.Deliver(json.RawMessage(`"just a string"`)),
		h.slack.Deliver(json.RawMessage(`{"type":"view_submission","user":{"id":"U0MALLORY"}}`)))
	for _, env := range envs {
		h.acked(env)
	}
	time.Sleep(300 * time.Millisecond)
	if f, _ := store.GetFinding(context.Background(), id); f.State != findings.StateOpen || f.Useful != 0 {
		t.Errorf("hostile payloads changed the finding: %+v", f)
	}
	if n := len(h.slack.Ephemerals()); n != 0 {
		t.Errorf("%d answers to payloads aicr did not make", n)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "ignored a button aicr did not make") {
		t.Errorf("forged buttons not logged:\n%s", logs)
	}
	for _, line := range strings.Split(logs, "\n") {
		if len(line) > 1000 {
			t.Errorf("a log line of %d bytes: a payload's text is not bounded", len(line))
		}
	}
}

func TestSocketConflictAndUnknownFindingAnswerClearly(t *testing.T) {
	store := newStore(t)
	id := store.add(t, findings.Finding{Repo: "main", Path: "<!channel> http://" + imtest.Evil + "/@here.go", Line: 7})
	h := newHarness(t, store)
	signer := weblink.Signer{Key: bytes.Repeat([]byte("k"), weblink.MinKeyBytes), BaseURL: "https://aicr.example.com"}
	h.start(socket.Options{Links: signer})
	h.connected(1)

	h.acked(h.click("U0ALICE", "alice", "false_positive", id))
	h.ephemerals(1)
	h.acked(h.click("U0BOB", "bob", "wont_fix", id))
	second := h.ephemerals(2)[1]
	if !strings.HasPrefix(second.Text, "Nothing changed:") || !strings.Contains(second.Text, "already dismissed as a false positive by slack:U0ALICE (alice)") {
		t.Errorf("a dismissal of a dismissed finding: %s", second.Text)
	}
	if !strings.Contains(second.Blocks, "https://aicr.example.com/f/") {
		t.Errorf("the answer lacks the link to the finding's page: %s", second.Blocks)
	}
	f, _ := store.GetFinding(context.Background(), id)
	if f.Dismissal != findings.ActionFalsePositive || f.ActedBy != "slack:U0ALICE (alice)" {
		t.Errorf("a conflicting click changed the finding: %+v", f)
	}
	h.acked(h.click("U0ALICE", "alice", "false_positive", 999))
	third := h.ephemerals(3)[2]
	if !strings.Contains(third.Text, "Nothing changed: aicr has no finding #999") {
		t.Errorf("unknown finding: %s", third.Text)
	}
	for _, e := range h.slack.Ephemerals() {
		imtest.AssertInertMrkdwn(t, "answer text", e.Text)
		imtest.AssertInertMrkdwn(t, "answer blocks", e.Blocks)
	}
}

func TestSocketAnswersThroughResponseURLWhenTheBotCannot(t *testing.T) {
	store := newStore(t)
	id := store.add(t, findings.Finding{Repo: "main", Path: "a.go", Line: 1})
	h := newHarness(t, store)
	h.writeSecret("bot-token", "xoxb-revoked-000")
	h.start(socket.Options{})
	h.connected(1)
	h.acked(h.click("U0ALICE", "alice", "useful", id))
	h.slack.WaitFor(t, "the response_url answer", 10*time.Second, func() bool { return len(h.slack.Responses()) == 1 })
	r := h.slack.Responses()[0]
	if r.Body["response_type"] != "ephemeral" || !strings.Contains(r.Body["text"].(string), "counted as useful") {
		t.Errorf("response_url answer: %v", r.Body)
	}
	imtest.AssertNoLeak(t, "log", h.logs.String(), "xoxb-revoked-000", appToken)
}

// A frame over the read limit ends the connection, not the process:
// the client reconnects and the next click works.
func TestSocketOversizedFrameReconnects(t *testing.T) {
	store := newStore(t)
	id := store.add(t, findings.Finding{Repo: "main", Path: "a.go", Line: 1})
	h := newHarness(t, store)
	h.slack.SetTiming(time.Hour, 0, 200*time.Millisecond) // no re-delivery of the big one
	h.start(socket.Options{})
	h.connected(1)
	big, _ := json.Marshal(map[string]any{"type": "block_actions", "padding": strings.Repeat("x", 2<<20)})
	h.slack.Deliver(big)
	h.connected(2)
	h.acked(h.click("U0ALICE", "alice", "false_positive", id))
	h.ephemerals(1)
	if f, _ := store.GetFinding(context.Background(), id); f.State != findings.StateDismissed {
		t.Errorf("click after the oversized frame: %s", f.State)
	}
}

// A connection that goes quiet (no ping from Slack: a half-open TCP
// connection) is taken for dead and replaced.
func TestSocketMissedPingsReconnect(t *testing.T) {
	h := newHarness(t, newStore(t))
	h.slack.SetTiming(time.Second, 3, time.Hour)
	h.start(socket.Options{PingInterval: 300 * time.Millisecond})
	h.connected(1)
	h.connected(2)
}

// A store that does not answer changes nothing, and the person is told
// to try again; the error is logged for the operator.
func TestSocketStoreDownAnswersTryAgain(t *testing.T) {
	store := newStore(t)
	id := store.add(t, findings.Finding{Repo: "main", Path: "a.go", Line: 1})
	store.Close()
	h := newHarness(t, store)
	h.start(socket.Options{})
	h.connected(1)
	h.acked(h.click("U0ALICE", "alice", "false_positive", id))
	if a := h.ephemerals(1)[0]; !strings.Contains(a.Text, "Nothing changed: aicr could not record this just now") {
		t.Errorf("answer with the store down: %s", a.Text)
	}
	if !strings.Contains(h.logs.String(), `level=ERROR msg="finding action from slack not recorded"`) {
		t.Errorf("the store's failure is not logged:\n%s", h.logs.String())
	}
	if h.count("false_positive/slack") != 0 {
		t.Error("an action that was not recorded was counted")
	}
}
