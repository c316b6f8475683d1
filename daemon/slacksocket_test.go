package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

const (
	socketAppToken = "xapp-1-A0AICRTEST-42-daemonsockettest"
	socketBotToken = "xoxb-daemon-socket-test-42"
)

// syncBuf is a log the daemon writes to while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// socketDaemon is daemon.Serve with slack channels whose buttons come
// over Socket Mode from the stand-in.
type socketDaemon struct {
	cfg    *config.Config
	addr   string
	slack  *imtest.SlackSocket
	logs   *syncBuf
	reload chan struct{}
	cancel context.CancelFunc
	done   chan error
}

// socketConfig writes the daemon's config: the svn repo, the slack
// channels (tables), the [[user]] of alice.
func socketConfig(t *testing.T, s *imtest.SlackSocket, channels ...string) *config.Config {
	t.Helper()
	cfg, _ := newSVNConfig(t)
	dir := filepath.Dir(cfg.Path)
	for name, v := range map[string]string{"app-token": socketAppToken, "bot-token": socketBotToken} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	extra := "\n[[user]]\nvcs_user = \"alice\"\nslack_id = \"U0ALICE\"\n"
	for i, conv := range channels {
		extra += fmt.Sprintf("\n[[channel]]\nname = \"slack-%d\"\nkind = \"slack\"\ntoken_file = \"bot-token\"\napp_token_file = \"app-token\"\nchannel = %q\napi_url = %q\n",
			i, conv, s.APIURL())
	}
	if err := os.WriteFile(cfg.Path, append(data, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = config.Load(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Daemon.AicrBinary = "/bin/true"
	return cfg
}

func startSocketDaemon(t *testing.T, cfg *config.Config, s *imtest.SlackSocket) *socketDaemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &socketDaemon{cfg: cfg, slack: s, logs: &syncBuf{}, reload: make(chan struct{}), cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		d.done <- Serve(ctx, Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(d.logs, nil)), Stdout: io.Discard,
			Ready: func(a string) { ready <- a }, IdlePoll: 50 * time.Millisecond, Reload: d.reload})
	}()
	select {
	case d.addr = <-ready:
	case err := <-d.done:
		t.Fatalf("daemon did not start: %v", err)
	}
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop is the daemon's SIGTERM: it must not wait on the websocket.
func (d *socketDaemon) stop(t *testing.T) time.Duration {
	if d.cancel == nil {
		return 0
	}
	start := time.Now()
	d.cancel()
	d.cancel = nil
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon did not stop within 20s")
	}
	return time.Since(start)
}

// addFinding reports a problem in a review, as the pipeline does, and
// returns the finding's id.
func addFinding(t *testing.T, cfg *config.Config) int64 {
	t.Helper()
	store, err := audit.Open(context.Background(), config.DBPath(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lines := []string{"package a", "", "func f() {", "\tdb.Query(\"SELECT \" + name)", "}"}
	ch := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "1", Author: "carol",
		Files: []vcs.FileChange{{Path: "a.go", Action: vcs.ActionModify, NodeKind: vcs.NodeFile}}}
	out, err := store.TrackFindings(context.Background(), findings.Review{Repo: "main", VCS: vcs.KindSVN, RunID: 1, Revision: "1",
		Author: "carol", Change: ch, Complete: true, Source: func(string) ([]string, error) { return lines, nil },
		Problems: []review.Problem{{File: "a.go", Line: 4, Severity: review.SeverityHigh, Category: "security", Message: "SQL injection"}}})
	if err != nil || len(out.Seen) != 1 {
		t.Fatalf("track: %+v, %v", out, err)
	}
	return out.Seen[0].Finding.ID
}

func getFinding(t *testing.T, cfg *config.Config, id int64) findings.Finding {
	t.Helper()
	store, err := audit.Open(context.Background(), config.DBPath(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	f, err := store.GetFinding(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (d *socketDaemon) click(action string, id int64) string {
	return d.slack.Click(imtest.Click{UserID: "U0ALICE", UserName: "alice.smith", ChannelID: "C0REVIEWS",
		MessageTS: "1700000000.000200", ThreadTS: "1700000000.000100", ActionID: slack.ActionID(action), BlockID: "b",
		Value: slack.ActionValue(id)})
}

func (d *socketDaemon) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + d.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// A click on a report's button, over Socket Mode into the daemon,
// dismisses the finding as the person who clicked; a re-delivered
// envelope does not apply twice; a reload replaces the connection and
// the stop ends it without hanging.
func TestSocketModeDaemonAppliesClicks(t *testing.T) {
	s := imtest.NewSlackSocket(t, socketAppToken, socketBotToken)
	// Two channels of one app share its connection.
	cfg := socketConfig(t, s, "C0REVIEWS", "C0OTHER")
	d := startSocketDaemon(t, cfg, s)
	id := addFinding(t, cfg)
	s.WaitFor(t, "the daemon's Socket Mode connection", 10*time.Second, func() bool { return s.Hellos() == 1 })

	env := d.click("false_positive", id)
	s.WaitFor(t, "the answer", 10*time.Second, func() bool { return len(s.Ephemerals()) == 1 })
	f := getFinding(t, cfg, id)
	if f.State != findings.StateDismissed || f.ActedBy != "alice (slack:U0ALICE alice.smith)" || f.ActedVia != findings.ViaSlack {
		t.Fatalf("after the click: %s by %q via %s", f.State, f.ActedBy, f.ActedVia)
	}
	if acked, _ := s.Acked(env); !acked {
		t.Error("the envelope was not acked")
	}
	s.Redeliver(env)
	s.WaitFor(t, "the re-delivery's ack", 5*time.Second, func() bool { _, n := s.Acked(env); return n == 2 })
	time.Sleep(300 * time.Millisecond)
	if n := len(s.Ephemerals()); n != 1 {
		t.Errorf("a re-delivered envelope was applied again: %d answers", n)
	}
	if m := d.metrics(t); !strings.Contains(m, `aicr_finding_actions_total{action="false_positive",via="slack"} 1`) {
		t.Errorf("metrics lack the action:\n%s", grepLines(m, "finding_actions"))
	}
	if s.Hellos() != 1 || s.Connections() != 1 {
		t.Errorf("two channels of one app: %d connections (%d hellos), want 1", s.Connections(), s.Hellos())
	}

	// A reload ends the generation's connection and opens the new one's.
	d.reload <- struct{}{}
	s.WaitFor(t, "the reloaded daemon's connection", 10*time.Second, func() bool { return s.Hellos() == 2 && s.Connections() == 1 })
	if took := d.stop(t); took > 10*time.Second {
		t.Errorf("stop took %s", took)
	}
	s.WaitFor(t, "the connection to close at stop", 5*time.Second, func() bool { return s.Connections() == 0 })
	imtest.AssertNoLeak(t, "daemon log", d.logs.String(), socketAppToken, socketBotToken)
}

// A wrong app token is one clear ERROR, then retries with backoff, not
// a spin; the daemon serves on.
func TestSocketModeDaemonWrongTokenBacksOff(t *testing.T) {
	s := imtest.NewSlackSocket(t, "xapp-1-the-right-one", socketBotToken)
	cfg := socketConfig(t, s, "C0REVIEWS")
	d := startSocketDaemon(t, cfg, s)
	time.Sleep(3500 * time.Millisecond)
	opens := s.Opens()
	if len(opens) < 2 || len(opens) > 4 {
		t.Errorf("%d apps.connections.open in 3.5s with a refused token, want 2 to 4", len(opens))
	}
	logs := d.logs.String()
	if n := strings.Count(logs, "level=ERROR"); n != 1 || !strings.Contains(logs, "invalid_auth") {
		t.Errorf("want one ERROR naming invalid_auth, got %d:\n%s", n, logs)
	}
	if resp, err := http.Get("http://" + d.addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("healthz while Slack refuses the token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	imtest.AssertNoLeak(t, "daemon log", logs, socketAppToken, socketBotToken)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
