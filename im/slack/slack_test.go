package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

const token = "xoxb-test-token-0123456789"

// fakeSlack implements the Web API methods the channel uses, as Slack
// documents them: form-encoded requests, bearer or form token, HTTP 200
// with {"ok":false,"error":...} for API errors, 429 + Retry-After when
// rate limited, and the Block Kit limits enforced as invalid_blocks /
// msg_too_long.
type fakeSlack struct {
	mu       sync.Mutex
	posts    []post
	fail     map[int]string // post number (0-based) → error to answer
	lookups  int
	users    map[string]string
	nextTS   int
	messages []map[string]any // history, newest first
	// updates are the messages chat.update edited, as edited.
	updates    []post
	updateFail string
}

// update answers chat.update as Slack documents it: the message must
// exist in the conversation (message_not_found), and updateFail scripts
// the refusals of a message that cannot be edited.
func (f *fakeSlack) update(w http.ResponseWriter, r *http.Request) {
	if f.updateFail != "" {
		fmt.Fprintf(w, `{"ok":false,"error":%q}`, f.updateFail)
		return
	}
	ch, ts := r.Form.Get("channel"), r.Form.Get("ts")
	for i, p := range f.posts {
		if p.TS != ts || p.Channel != ch {
			continue
		}
		var blocks []map[string]any
		if err := json.Unmarshal([]byte(r.Form.Get("blocks")), &blocks); err != nil || checkBlocks(blocks) != nil {
			fmt.Fprint(w, `{"ok":false,"error":"invalid_blocks"}`)
			return
		}
		f.posts[i].Blocks, f.posts[i].Text = blocks, r.Form.Get("text")
		f.updates = append(f.updates, f.posts[i])
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q,"text":%q}`, ch, ts, r.Form.Get("text"))
		return
	}
	fmt.Fprint(w, `{"ok":false,"error":"message_not_found"}`)
}

type post struct {
	Channel  string
	ThreadTS string
	Text     string
	Blocks   []map[string]any
	Metadata map[string]any
	TS       string
	// Unfurl is unfurl_links and unfurl_media as sent ("" when absent).
	Unfurl [2]string
}

func (f *fakeSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", 400)
		return
	}
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if tok == "" {
		tok = r.Form.Get("token")
	}
	w.Header().Set("Content-Type", "application/json")
	if tok != token {
		fmt.Fprint(w, `{"ok":false,"error":"invalid_auth"}`)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch strings.TrimPrefix(r.URL.Path, "/api/") {
	case "chat.postMessage":
		f.postMessage(w, r)
	case "chat.update":
		f.update(w, r)
	case "users.lookupByEmail":
		f.lookups++
		if id, ok := f.users[r.Form.Get("email")]; ok {
			fmt.Fprintf(w, `{"ok":true,"user":{"id":%q}}`, id)
			return
		}
		fmt.Fprint(w, `{"ok":false,"error":"users_not_found"}`)
	case "conversations.history":
		b, _ := json.Marshal(map[string]any{"ok": true, "messages": f.messages})
		w.Write(b)
	case "conversations.replies":
		ts := r.Form.Get("ts")
		var out []map[string]any
		for _, p := range f.posts {
			if p.TS == ts || p.ThreadTS == ts {
				out = append(out, map[string]any{"ts": p.TS, "thread_ts": ts, "metadata": p.Metadata})
			}
		}
		b, _ := json.Marshal(map[string]any{"ok": true, "messages": out})
		w.Write(b)
	default:
		fmt.Fprint(w, `{"ok":false,"error":"unknown_method"}`)
	}
}

func (f *fakeSlack) postMessage(w http.ResponseWriter, r *http.Request) {
	n := len(f.posts)
	if code, ok := f.fail[n]; ok {
		delete(f.fail, n)
		switch code {
		case "429":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"ok":false,"error":"ratelimited"}`)
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "<html>oops</html>")
		default:
			fmt.Fprintf(w, `{"ok":false,"error":%q}`, code)
		}
		return
	}
	p := post{Channel: r.Form.Get("channel"), ThreadTS: r.Form.Get("thread_ts"), Text: r.Form.Get("text"),
		Unfurl: [2]string{r.Form.Get("unfurl_links"), r.Form.Get("unfurl_media")}}
	if err := json.Unmarshal([]byte(r.Form.Get("blocks")), &p.Blocks); err != nil {
		fmt.Fprint(w, `{"ok":false,"error":"invalid_blocks"}`)
		return
	}
	if md := r.Form.Get("metadata"); md != "" {
		_ = json.Unmarshal([]byte(md), &p.Metadata)
	}
	if err := checkBlocks(p.Blocks); err != nil || utf8.RuneCountInString(p.Text) > 40000 {
		code := "msg_too_long"
		if err != nil {
			code = "invalid_blocks"
		}
		fmt.Fprintf(w, `{"ok":false,"error":%q}`, code)
		return
	}
	f.nextTS++
	p.TS = fmt.Sprintf("1700000000.%06d", f.nextTS)
	f.posts = append(f.posts, p)
	if p.ThreadTS == "" {
		f.messages = append([]map[string]any{{"ts": p.TS, "metadata": p.Metadata}}, f.messages...)
	}
	fmt.Fprintf(w, `{"ok":true,"channel":"C0TEST001","ts":%q}`, p.TS)
}

// checkBlocks enforces Block Kit's documented limits.
func checkBlocks(blocks []map[string]any) error {
	if len(blocks) > 50 {
		return fmt.Errorf("%d blocks", len(blocks))
	}
	for _, b := range blocks {
		t, _ := b["text"].(map[string]any)
		s, _ := t["text"].(string)
		switch b["type"] {
		case "header":
			if t["type"] != "plain_text" || utf8.RuneCountInString(s) > 150 {
				return errors.New("header")
			}
		case "section":
			if utf8.RuneCountInString(s) > 3000 || s == "" {
				return errors.New("section")
			}
		}
	}
	return nil
}

func newChannel(t *testing.T, f *fakeSlack, mutate func(*slack.Config)) *slack.Channel {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Setenv("AICR_TEST_SLACK_TOKEN", token)
	cfg := &slack.Config{TokenEnv: "AICR_TEST_SLACK_TOKEN", Channel: "C0TEST001", APIURL: srv.URL + "/api/", RatePerMinute: 6000}
	if mutate != nil {
		mutate(cfg)
	}
	ch, err := cfg.Build(im.ChannelConfig{Name: "team", Kind: "slack"}, im.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return ch.(*slack.Channel)
}

func message(problems int) im.Message {
	res := review.Result{Summaries: []review.Summary{{Title: "Overview", Markdown: "Looks **mostly** fine; see `cfg.go` & <script>."}}}
	for i := 0; i < problems; i++ {
		res.Problems = append(res.Problems, review.Problem{File: fmt.Sprintf("src/f%02d.go", i), Line: i + 1,
			Severity: review.Severities[i%len(review.Severities)], Category: "bug", Message: fmt.Sprintf("problem %d: a < b && c > d", i)})
	}
	return im.Message{RunID: 7, Result: res, DedupeKey: "aicr-7-team",
		Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "42", Author: "alice", Description: "Fix <the> thing & more"}}
}

func TestFortyProblemsAreASummaryAndFourThreadReplies(t *testing.T) {
	f := &fakeSlack{}
	ch := newChannel(t, f, nil)
	rec, err := ch.Send(context.Background(), message(40))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.posts) != 5 || rec.Parts != 5 {
		t.Fatalf("%d posts (%d parts), want a summary and 4 replies", len(f.posts), rec.Parts)
	}
	summary := f.posts[0]
	// The id names the conversation too: chat.update needs both.
	if summary.ThreadTS != "" || rec.MessageID != "C0TEST001:"+summary.TS {
		t.Fatalf("summary: %+v, receipt ts %q", summary, rec.MessageID)
	}
	seen := 0
	for i, p := range f.posts[1:] {
		if p.ThreadTS != summary.TS {
			t.Errorf("reply %d is not in the summary's thread", i)
		}
		seen += len(p.Blocks) - 1 // the first block is the "(i/n)" context
		if p.Metadata["event_type"] != slack.EventReply {
			t.Errorf("reply %d metadata %v", i, p.Metadata)
		}
	}
	if seen != 40 {
		t.Fatalf("%d problems in replies, want 40", seen)
	}
	// Review text quotes URLs; Slack must not fetch them (issue 22 C10).
	for i, p := range f.posts {
		if p.Unfurl != [2]string{"false", "false"} {
			t.Errorf("post %d: unfurl_links, unfurl_media = %q, want both false", i, p.Unfurl)
		}
	}
	// Untrusted text is escaped; our own markup is not.
	all := rawJSON(f.posts)
	for _, raw := range []string{"a < b", "<script>", "Fix <the>"} {
		if strings.Contains(string(all), raw) {
			t.Errorf("unescaped %q reached Slack", raw)
		}
	}
	if !strings.Contains(string(all), "a &lt; b &amp;&amp; c &gt; d") {
		t.Errorf("escaped problem text missing")
	}
}

func TestBlockLimitsHoldForHugeInput(t *testing.T) {
	msg := message(0)
	long := strings.Repeat("word ", 2000)
	msg.Result.Summaries = nil
	for i := 0; i < 30; i++ {
		msg.Result.Summaries = append(msg.Result.Summaries, review.Summary{Title: strings.Repeat("T", 200), Markdown: long + "\n\n```\n" + long + "\n```"})
	}
	msg.Change.Description = strings.Repeat("长", 400)
	f := &fakeSlack{}
	if _, err := newChannel(t, f, nil).Send(context.Background(), msg); err != nil {
		t.Fatalf("the stand-in refused: %v", err)
	}
	// The note ends the body; only the footer (the run) follows it.
	blocks := f.posts[0].Blocks
	if last := blocks[len(blocks)-2]; !strings.Contains(fmt.Sprint(last), "left out") {
		t.Errorf("truncation is not said explicitly: %v", last)
	}
}

func TestSplitMrkdwnKeepsFencesBalanced(t *testing.T) {
	text := "intro\n\n```\n" + strings.Repeat("code line\n", 800) + "```\nafter"
	chunks := slack.SplitMrkdwn(text, 3000)
	if len(chunks) < 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c); n > 3000 {
			t.Errorf("chunk %d is %d chars", i, n)
		}
		if strings.Count(c, "```")%2 != 0 {
			t.Errorf("chunk %d has an unbalanced fence", i)
		}
	}
}

func TestMarkdownToMrkdwn(t *testing.T) {
	cases := []struct{ in, want string }{
		{"**bold** and *em*", "*bold* and _em_"},
		{"# Title\n\ntext", "*Title*\n\ntext"},
		{"- a\n- b", "• a\n• b"},
		{"1. a\n2. b", "1. a\n2. b"},
		{"[docs](https://example.com/a?b=1&c=2)", "<https://example.com/a?b=1&amp;c=2|docs>"},
		{"[bad](javascript:alert(1))", "bad"},
		{"use `a<b>` & go", "use `a&lt;b&gt;` &amp; go"},
		{"```go\nif a < b {}\n```", "```\nif a &lt; b {}\n```"},
		{"> quoted", "> quoted"},
		{"<b>raw</b> html", "&lt;b&gt;raw&lt;/b&gt; html"},
		{"中文 **粗体** 🎉", "中文 *粗体* 🎉"},
	}
	for _, c := range cases {
		if got := slack.MarkdownToMrkdwn(c.in); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestRenderGolden(t *testing.T) {
	rep := im.BuildReport(message(3))
	post := slack.RenderSummary(rep, "<@U123>", false)
	replies := slack.RenderReplies(rep, 2)
	got, err := json.MarshalIndent(map[string]any{"summary": post, "replies": replies}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	imtest.Golden(t, "render.golden.json", string(got)+"\n")
}

func TestErrorsAreClassified(t *testing.T) {
	cases := []struct {
		code      string
		reason    im.Reason
		retryable bool
		after     time.Duration
	}{
		{"429", im.ReasonRateLimited, true, 3 * time.Second},
		{"500", im.ReasonServer, true, 0},
		{"invalid_auth", im.ReasonAuth, false, 0},
		{"not_authed", im.ReasonAuth, false, 0},
		{"account_inactive", im.ReasonAuth, false, 0},
		{"token_revoked", im.ReasonAuth, false, 0},
		{"channel_not_found", im.ReasonClient, false, 0},
		{"not_in_channel", im.ReasonClient, false, 0},
		{"is_archived", im.ReasonClient, false, 0},
		{"msg_too_long", im.ReasonTooLarge, false, 0},
		{"invalid_blocks", im.ReasonClient, false, 0},
	}
	for _, c := range cases {
		f := &fakeSlack{fail: map[int]string{0: c.code}}
		rec, err := newChannel(t, f, nil).Send(context.Background(), message(1))
		var se *im.SendError
		if !errors.As(err, &se) {
			t.Fatalf("%s: %v", c.code, err)
		}
		imtest.AssertSendLeaksNothing(t, rec, err, token)
		if se.Reason != c.reason || se.Retryable != c.retryable || se.RetryAfter != c.after {
			t.Errorf("%s: got %s retryable=%v after=%v", c.code, se.Reason, se.Retryable, se.RetryAfter)
		}
	}
	// A wrong token is Slack's invalid_auth, inside an HTTP 200.
	f := &fakeSlack{}
	ch := newChannel(t, f, nil)
	t.Setenv("AICR_TEST_SLACK_TOKEN", "xoxb-wrong")
	rec, err := ch.Send(context.Background(), message(1))
	var se *im.SendError
	if !errors.As(err, &se) || se.PlatformCode != "invalid_auth" || se.Retryable || se.StatusCode != 200 {
		t.Fatalf("wrong token: %#v", err)
	}
	imtest.AssertSendLeaksNothing(t, rec, err, token, "xoxb-wrong")
}

// The dispatcher owns the rate limit; a Send that makes several requests
// (summary, then thread replies) asks its pacer before every one.
func TestPacesEveryRequest(t *testing.T) {
	f := &fakeSlack{}
	ch := newChannel(t, f, nil)
	waits := 0
	ctx := im.WithPacer(context.Background(), func(context.Context) error { waits++; return nil })
	if _, err := ch.Send(ctx, message(25)); err != nil { // summary + 3 replies
		t.Fatal(err)
	}
	if waits != 4 || len(f.posts) != 4 {
		t.Fatalf("%d waits for %d posts, want 4 each", waits, len(f.posts))
	}
	if r, burst := ch.RateLimit(); float64(r) != 100 || burst != 1 { // RatePerMinute 6000 in newChannel
		t.Fatalf("RateLimit = %v, %d", r, burst)
	}
	// A pacer that gives up (the delivery's deadline) stops the Send
	// before the next request, retryably, with the progress recorded.
	calls := 0
	ctx = im.WithPacer(context.Background(), func(context.Context) error {
		calls++
		if calls == 2 {
			return context.DeadlineExceeded
		}
		return nil
	})
	_, err := ch.Send(ctx, message(25))
	var se *im.SendError
	if !errors.As(err, &se) || !se.Retryable || se.PartsDelivered != 1 {
		t.Fatalf("pacer failure: %#v", err)
	}
}

// A reply rate-limited halfway resumes from where it stopped: the summary
// and the replies already in the thread are not posted again.
func TestRetryResumesThread(t *testing.T) {
	f := &fakeSlack{fail: map[int]string{2: "429"}}
	ch := newChannel(t, f, nil)
	msg := message(25) // summary + 3 replies
	_, err := ch.Send(context.Background(), msg)
	var se *im.SendError
	if !errors.As(err, &se) || !se.Retryable || se.PartsDelivered != 2 || se.MessageID != "C0TEST001:"+f.posts[0].TS {
		t.Fatalf("partial failure: %#v", err)
	}
	msg.PartsDelivered, msg.PriorMessageID, msg.MaybeDelivered = se.PartsDelivered, se.MessageID, true
	if _, err := ch.Send(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if len(f.posts) != 4 {
		t.Fatalf("%d posts, want 4 (no repeats)", len(f.posts))
	}
	for _, p := range f.posts[1:] {
		if p.ThreadTS != f.posts[0].TS {
			t.Errorf("reply outside the thread: %+v", p)
		}
	}
}

// After a crash the dispatcher knows only that an attempt may have gone
// out; the channel finds its summary by metadata and finishes the thread.
func TestCrashRetryFindsPostedSummary(t *testing.T) {
	f := &fakeSlack{fail: map[int]string{1: "500"}}
	ch := newChannel(t, f, nil)
	msg := message(15) // summary + 2 replies
	if _, err := ch.Send(context.Background(), msg); err == nil {
		t.Fatal("want the injected failure")
	}
	// The dispatcher lost the partial progress (crash): only MaybeDelivered.
	msg.MaybeDelivered = true
	if _, err := ch.Send(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	summaries := 0
	for _, p := range f.posts {
		if p.ThreadTS == "" {
			summaries++
		}
	}
	if summaries != 1 || len(f.posts) != 3 {
		t.Fatalf("%d summaries in %d posts, want 1 in 3", summaries, len(f.posts))
	}
}

func TestMentionLookupIsCached(t *testing.T) {
	f := &fakeSlack{users: map[string]string{"alice@example.com": "U0ALICE"}}
	ch := newChannel(t, f, nil)
	for i := 0; i < 3; i++ {
		msg := message(0)
		msg.Author = &im.Identity{VCSUser: "alice", Email: "Alice@Example.com"}
		if _, err := ch.Send(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
		msg.Author = &im.Identity{VCSUser: "bob", Email: "bob@example.com"}
		if _, err := ch.Send(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	if f.lookups != 2 {
		t.Fatalf("%d lookups for 2 distinct emails over 6 sends", f.lookups)
	}
	if b := rawJSON(f.posts[0].Blocks); !strings.Contains(string(b), "<@U0ALICE>") {
		t.Errorf("no mention in %s", b)
	}
	if b := rawJSON(f.posts[1].Blocks); strings.Contains(string(b), "<@") {
		t.Errorf("unknown user mentioned: %s", b)
	}
}

func TestIncomingWebhookPostsSummaryOnly(t *testing.T) {
	var got []map[string]any
	var mu sync.Mutex
	answer := "ok"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		got = append(got, body)
		mu.Unlock()
		if answer != "ok" {
			w.WriteHeader(http.StatusNotFound)
		}
		fmt.Fprint(w, answer)
	}))
	defer srv.Close()
	t.Setenv("AICR_TEST_SLACK_HOOK", srv.URL+"/services/T000/B000/XXXXSECRET")
	ch, err := (&slack.Config{WebhookURLEnv: "AICR_TEST_SLACK_HOOK"}).Build(im.ChannelConfig{Name: "hook", Kind: "slack"}, im.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	hookURL := srv.URL + "/services/T000/B000/XXXXSECRET"
	rec, err := ch.Send(context.Background(), message(80))
	if err != nil {
		t.Fatal(err)
	}
	imtest.AssertSendLeaksNothing(t, rec, err, hookURL, "XXXXSECRET")
	if got[0]["unfurl_links"] != false || got[0]["unfurl_media"] != false {
		t.Errorf("webhook body: unfurl_links %v, unfurl_media %v; want both false", got[0]["unfurl_links"], got[0]["unfurl_media"])
	}
	blocks, _ := got[0]["blocks"].([]any)
	if len(got) != 1 || len(blocks) > 50 || !strings.Contains(fmt.Sprint(blocks[len(blocks)-2]), "36 more problems were left out") {
		t.Fatalf("%d posts, %d blocks, before the footer %v", len(got), len(blocks), blocks[len(blocks)-2])
	}
	answer = "channel_not_found"
	rec, err = ch.Send(context.Background(), message(1))
	var se *im.SendError
	if !errors.As(err, &se) || se.PlatformCode != "channel_not_found" || se.Retryable {
		t.Fatalf("webhook error: %#v", err)
	}
	imtest.AssertSendLeaksNothing(t, rec, err, hookURL, "XXXXSECRET")

	// No answer at all: the transport error names the host, not the URL.
	srv.Close()
	rec, err = ch.Send(context.Background(), message(1))
	if !errors.As(err, &se) || se.Reason != im.ReasonNetwork || !se.Retryable {
		t.Fatalf("transport error: %#v", err)
	}
	imtest.AssertSendLeaksNothing(t, rec, err, hookURL, "XXXXSECRET", "/services/T000")
}

func rawJSON(v any) []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return []byte(b.String())
}

// Committer text never becomes a link, a mention or an automatically
// parsed @here in the summary, the replies or the fallback text (issue 22
// C9).
func TestHostileCommitTextIsInert(t *testing.T) {
	rep := im.BuildReport(imtest.HostileMessage())
	posts := append([]slack.Post{slack.RenderSummary(rep, "", true)}, slack.RenderReplies(rep, 2)...)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "mrkdwn" {
				s, _ := v["text"].(string)
				imtest.AssertInertMrkdwn(t, "mrkdwn text object", s)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, p := range posts {
		imtest.AssertInertMrkdwn(t, "fallback text", p.Text)
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		walk(v)
	}
}
