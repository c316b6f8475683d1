package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
)

// Issue 22 A2 and A2b: stopping, restarting and killing the daemon while
// it delivers. Each test runs the built binary against a stand-in that
// speaks the platform's wire format.

// withChannel routes the env's repo to channel name (before the file
// channel), appends its [[channel]] table, and adds daemon keys.
func (e *env) withChannel(name, table, daemonKeys string) {
	e.t.Helper()
	b, err := os.ReadFile(e.config)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := strings.Replace(string(b), `channels = ["reports"]`, fmt.Sprintf(`channels = [%q, "reports"]`, name), 1)
	cfg = strings.Replace(cfg, "spool_drain_every = \"@every 1s\"\n", "spool_drain_every = \"@every 1s\"\n"+daemonKeys, 1)
	cfg += "\n[[channel]]\nname = " + fmt.Sprintf("%q", name) + "\n" + table
	if err := os.WriteFile(e.config, []byte(cfg), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// sigterm stops the daemon with SIGTERM and returns how long it took to exit.
func (e *env) sigterm(limit time.Duration) time.Duration {
	e.t.Helper()
	start := time.Now()
	if err := e.daemon.Process.Signal(syscall.SIGTERM); err != nil {
		e.t.Fatal(err)
	}
	select {
	case <-e.daemonDone:
	case <-time.After(limit):
		e.daemon.Process.Kill()
		<-e.daemonDone
		e.t.Errorf("daemon still running %s after SIGTERM", limit)
	}
	e.daemon = nil
	return time.Since(start)
}

func (e *env) dispatches(s *audit.Store, channel string) []delivery.Dispatch {
	e.t.Helper()
	ds, err := s.ListDispatches(context.Background(), audit.DispatchFilter{Channel: channel, Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	return ds
}

func (e *env) waitDispatch(s *audit.Store, channel string, limit time.Duration, ok func([]delivery.Dispatch) bool) []delivery.Dispatch {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ds := e.dispatches(s, channel)
		if ok(ds) {
			return ds
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(e.daemonLog)
			e.t.Fatalf("dispatches to %s: %+v\ndaemon log:\n%s", channel, ds, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func allSent(n int) func([]delivery.Dispatch) bool {
	return func(ds []delivery.Dispatch) bool {
		sent := 0
		for _, d := range ds {
			if d.Status == delivery.StatusSent {
				sent++
			}
		}
		return sent == n
	}
}

// A send on the wire when SIGTERM comes finishes within the grace and is
// recorded as sent; the next start does not send it again. The daemon
// exits within shutdown_grace.
func TestSIGTERMMidDeliveryThenRestartDeliversOnce(t *testing.T) {
	e := newEnv(t, 1)
	p := &slowPlatform{hold: make(chan struct{}), arrived: make(chan struct{}, 16)}
	srv := httptest.NewServer(p)
	defer srv.Close()
	t.Setenv("AICR_E2E_SLOW_URL", srv.URL+"/x")
	e.withChannel("slow", "kind = \"webhook\"\nurl_env = \"AICR_E2E_SLOW_URL\"\n", "shutdown_grace = \"4s\"\n")
	e.startDaemon()
	e.commit("one", map[string]string{"a.txt": "token = \"tok-1-abcdefgh\"\n"})
	select {
	case <-p.arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("the webhook was never attempted")
	}
	// The platform answers a second after the stop signal.
	go func() { time.Sleep(time.Second); close(p.hold) }()
	took := e.sigterm(15 * time.Second)
	t.Logf("daemon exited %s after SIGTERM (shutdown_grace 4s)", took.Round(time.Millisecond))
	if took > 4*time.Second+500*time.Millisecond {
		t.Errorf("daemon took %s to exit, shutdown_grace is 4s", took)
	}
	s := e.store()
	ds := e.dispatches(s, "slow")
	if len(ds) != 1 || ds[0].Status != delivery.StatusSent {
		t.Fatalf("after the stop: %+v (the send finished within the grace: sent)", ds)
	}
	e.startDaemon()
	time.Sleep(2 * time.Second)
	if got := p.answered(); len(got) != 1 {
		t.Fatalf("the platform got the report %d times: %v", len(got), got)
	}
}

// A send still on the wire when the grace runs out is cut short, and
// the daemon exits within shutdown_grace; the cut send is not an attempt:
// the dispatch stays pending and the next start sends it.
func TestSIGTERMWithStuckSendExitsWithinGrace(t *testing.T) {
	e := newEnv(t, 1)
	p := &slowPlatform{hold: make(chan struct{}), arrived: make(chan struct{}, 16)}
	srv := httptest.NewServer(p)
	defer srv.Close()
	defer close(p.hold)
	t.Setenv("AICR_E2E_SLOW_URL", srv.URL+"/x")
	e.withChannel("slow", "kind = \"webhook\"\nurl_env = \"AICR_E2E_SLOW_URL\"\n", "shutdown_grace = \"3s\"\n")
	e.startDaemon()
	e.commit("one", map[string]string{"a.txt": "token = \"tok-1-abcdefgh\"\n"})
	select {
	case <-p.arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("the webhook was never attempted")
	}
	took := e.sigterm(15 * time.Second)
	t.Logf("daemon exited %s after SIGTERM with a stuck send (shutdown_grace 3s)", took.Round(time.Millisecond))
	if took > 3*time.Second+500*time.Millisecond {
		t.Errorf("daemon took %s to exit, shutdown_grace is 3s", took)
	}
	s := e.store()
	ds := e.dispatches(s, "slow")
	if len(ds) != 1 || ds[0].Status != delivery.StatusPending || ds[0].Attempts != 0 {
		t.Fatalf("after the stop: %+v (cut by our own stop: pending, no attempt)", ds)
	}
}

// A long rate limit over a shutdown: the dispatch waiting for its token
// is left pending with its not-before, no attempt burnt, and the next
// start delivers it.
func TestRateLimitOverShutdownBurnsNoAttempts(t *testing.T) {
	e := newEnv(t, 1)
	p := &slowPlatform{arrived: make(chan struct{}, 16)}
	srv := httptest.NewServer(p)
	defer srv.Close()
	t.Setenv("AICR_E2E_SLOW_URL", srv.URL+"/x")
	// One message per 10 s.
	e.withChannel("slow", "kind = \"webhook\"\nurl_env = \"AICR_E2E_SLOW_URL\"\nrate_per_minute = 6\n", "shutdown_grace = \"3s\"\n")
	e.startDaemon()
	e.commit("one", map[string]string{"a.txt": "token = \"tok-1-abcdefgh\"\n"})
	e.commit("two", map[string]string{"b.txt": "token = \"tok-2-abcdefgh\"\n"})
	s := e.store()
	e.waitFinished(s, 2, 60*time.Second)
	e.waitDispatch(s, "slow", 30*time.Second, allSent(1))
	time.Sleep(500 * time.Millisecond) // the second is waiting for its token
	e.sigterm(15 * time.Second)
	for _, d := range e.dispatches(s, "slow") {
		if d.Status == delivery.StatusSent {
			continue
		}
		atts, err := s.DispatchAttempts(context.Background(), d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != delivery.StatusPending || d.Attempts != 0 || len(atts) != 0 || d.NextAttemptAt.IsZero() {
			t.Fatalf("rate-limited dispatch after the stop: %+v with %d attempt records (want pending, none, a not-before)", d, len(atts))
		}
	}
	e.startDaemon()
	e.waitDispatch(s, "slow", 30*time.Second, allSent(2))
	if got := p.answered(); len(got) != 2 {
		t.Fatalf("platform got %d requests for 2 reports", len(got))
	}
}

// partsPlatform is a WeCom group robot stand-in (the documented
// {"errcode":0} answer) that records the part label of every message it
// accepts and, while hold is set, keeps the request for part holdAt waiting.
type partsPlatform struct {
	mu       sync.Mutex
	holdAt   int // 1-based request number to hold; 0: none
	hold     chan struct{}
	n        int
	accepted []string
	reached  chan struct{}
}

var partLabel = regexp.MustCompile(`\((\d+)/(\d+)\)`)

func (p *partsPlatform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Markdown struct {
			Content string `json:"content"`
		} `json:"markdown"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	p.mu.Lock()
	p.n++
	n, hold := p.n, p.hold
	p.mu.Unlock()
	if n == p.holdAt && hold != nil {
		close(p.reached)
		<-hold
		return // the sender is gone: nothing accepted
	}
	label := partLabel.FindString(body.Markdown.Content)
	p.mu.Lock()
	p.accepted = append(p.accepted, label)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"errcode":0,"errmsg":"ok"}`)
}

func (p *partsPlatform) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.accepted...)
}

// manyProblems is n files the builtin rules find a credential in, one each.
func manyProblems(n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("creds%03d.txt", i)] = fmt.Sprintf("token = \"tok-%d-abcdefgh\"\n", i)
	}
	return files
}

// Issue 22 A2b: a SIGKILL between the parts of a split report; after the
// restart parts 1 and 2 are not sent again and part 3 on arrive.
func TestSIGKILLBetweenPartsResumesAtNextPart(t *testing.T) {
	e := newEnv(t, 1)
	p := &partsPlatform{holdAt: 3, hold: make(chan struct{}), reached: make(chan struct{})}
	srv := httptest.NewServer(p)
	defer srv.Close()
	defer close(p.hold)
	hook := filepath.Join(e.dir, "wecom-hook")
	if err := os.WriteFile(hook, []byte(srv.URL+"/cgi-bin/webhook/send?key=k1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.withChannel("wc", "kind = \"wecom\"\nwebhook_url_file = \"wecom-hook\"\nmax_parts = 5\n", "")
	e.startDaemon()
	e.commit("many", manyProblems(80))
	select {
	case <-p.reached:
	case <-time.After(90 * time.Second):
		log, _ := os.ReadFile(e.daemonLog)
		t.Fatalf("part 3 was never sent; accepted %v\n%s", p.got(), log)
	}
	// The platform has parts 1 and 2; the daemon dies sending part 3.
	s := e.store()
	ds := e.dispatches(s, "wc")
	if len(ds) != 1 || ds[0].PartsDelivered != 2 {
		t.Errorf("while part 3 is on the wire: %+v (want 2 parts delivered recorded)", ds)
	}
	e.killDaemon()
	p.mu.Lock()
	p.hold = nil
	p.mu.Unlock()
	e.startDaemon()
	ds = e.waitDispatch(s, "wc", 90*time.Second, allSent(1))
	got := p.got()
	t.Logf("accepted parts: %v", got)
	m := partLabel.FindStringSubmatch(got[0])
	if m == nil || m[1] != "1" {
		t.Fatalf("first accepted %q is not part 1 of a split report", got[0])
	}
	total := m[2]
	if total < "3" {
		t.Fatalf("report split into %s parts, the test needs 3 or more", total)
	}
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	for i := 1; fmt.Sprint(i) <= total && i < 10; i++ {
		l := fmt.Sprintf("(%d/%s)", i, total)
		if seen[l] != 1 {
			t.Errorf("part %s accepted %d times: %v", l, seen[l], got)
		}
	}
	if ds[0].PartsDelivered != len(seen) {
		t.Errorf("dispatch says %d parts delivered, the platform has %d", ds[0].PartsDelivered, len(seen))
	}
	show := e.aicr("dispatch", "show", fmt.Sprint(ds[0].ID), "--config", e.config)
	if want := fmt.Sprintf("%d parts delivered", len(seen)); !strings.Contains(show, want) {
		t.Errorf("dispatch show does not say %q:\n%s", want, show)
	}
}

// slackPlatform is a Slack Web API stand-in: chat.postMessage answers
// {"ok":true,"ts":…} and records (ts or thread_ts, part) of every post;
// conversations.history and .replies answer empty; the post numbered
// holdAt is held while hold is set.
type slackPlatform struct {
	mu      sync.Mutex
	holdAt  int
	hold    chan struct{}
	reached chan struct{}
	n       int
	posts   []slackPost
}

type slackPost struct{ ts, threadTS string }

func (p *slackPlatform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat.postMessage"):
	case strings.HasSuffix(r.URL.Path, "/conversations.history"), strings.HasSuffix(r.URL.Path, "/conversations.replies"):
		io.WriteString(w, `{"ok":true,"messages":[],"has_more":false}`)
		return
	default:
		io.WriteString(w, `{"ok":false,"error":"unknown_method"}`)
		return
	}
	p.mu.Lock()
	p.n++
	n, hold := p.n, p.hold
	p.mu.Unlock()
	if n == p.holdAt && hold != nil {
		close(p.reached)
		<-hold
		return
	}
	p.mu.Lock()
	ts := fmt.Sprintf("1700000000.%06d", n)
	p.posts = append(p.posts, slackPost{ts: ts, threadTS: r.Form.Get("thread_ts")})
	p.mu.Unlock()
	fmt.Fprintf(w, `{"ok":true,"channel":"C0123ABCD","ts":%q}`, ts)
}

func (p *slackPlatform) got() []slackPost {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]slackPost(nil), p.posts...)
}

// Issue 22 A2b for Slack: killed after the summary and one thread reply;
// the restart posts only the missing replies, in the same thread.
func TestSIGKILLBetweenSlackRepliesResumesInThread(t *testing.T) {
	e := newEnv(t, 1)
	p := &slackPlatform{holdAt: 3, hold: make(chan struct{}), reached: make(chan struct{})}
	srv := httptest.NewServer(p)
	defer srv.Close()
	defer close(p.hold)
	if err := os.WriteFile(filepath.Join(e.dir, "slack-token"), []byte("xoxb-e2e-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.withChannel("sl", fmt.Sprintf("kind = \"slack\"\ntoken_file = \"slack-token\"\nchannel = \"C0123ABCD\"\napi_url = %q\nproblems_per_reply = 2\nrate_per_minute = 600\n", srv.URL+"/api/"), "")
	e.startDaemon()
	e.commit("many", manyProblems(8))
	select {
	case <-p.reached:
	case <-time.After(90 * time.Second):
		log, _ := os.ReadFile(e.daemonLog)
		t.Fatalf("reply 2 was never posted; posts %v\n%s", p.got(), log)
	}
	e.killDaemon()
	p.mu.Lock()
	p.hold = nil
	p.mu.Unlock()
	e.startDaemon()
	s := e.store()
	ds := e.waitDispatch(s, "sl", 90*time.Second, allSent(1))
	posts := p.got()
	t.Logf("posts: %+v", posts)
	if len(posts) < 3 || posts[0].threadTS != "" {
		t.Fatalf("posts %+v: want the summary, then replies", posts)
	}
	summaries := 0
	for _, po := range posts {
		if po.threadTS == "" {
			summaries++
		} else if po.threadTS != posts[0].ts {
			t.Errorf("reply %+v is not in the summary's thread %s", po, posts[0].ts)
		}
	}
	if summaries != 1 {
		t.Errorf("summary posted %d times", summaries)
	}
	// 8 problems, 2 per reply: the summary and 4 replies, each once.
	if len(posts) != 5 || ds[0].PartsDelivered != 5 {
		t.Errorf("%d posts, %d parts recorded; want 5 (summary + 4 replies, none twice)", len(posts), ds[0].PartsDelivered)
	}
}
