package e2e

// What each channel of the findings scenario received, read back from
// its stand-in, and the scenario's waits on the daemon's database.

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chatMsg is one message a channel received.
type chatMsg struct {
	// Text is what a reader sees (Slack: text and blocks; Feishu: the
	// card; JSON channels: the whole body).
	Text string
	// Doc is the decoded body of a JSON channel (webhook, file).
	Doc map[string]any
	// TS and Thread are Slack's: the message's ts and the thread it
	// replies in ("" for a top-level post).
	TS, Thread string
	key        string
}

// The scenario's channels by how they show a finding they already got.
var (
	reportChannels  = []string{"slack-bot", "slack-hook", "feishu", "dingtalk", "wecom", "webhook", "reports", "archive"}
	mentionChannels = []string{"slack-bot", "feishu", "wecom", "webhook", "reports"}
	omitChannels    = []string{"slack-hook", "dingtalk"}
)

func structured(channel string) bool {
	return channel == "webhook" || channel == "reports" || channel == "archive" || channel == "digest"
}

// inboxes reads every stand-in and file channel.
func (f *fixture) inboxes(t *testing.T) map[string][]chatMsg {
	t.Helper()
	out := map[string][]chatMsg{}
	out["slack-bot"] = slackReports(f.slack.Messages())
	for _, d := range f.slackHook.Received() {
		out["slack-hook"] = append(out["slack-hook"], jsonMsg(t, d.Body))
	}
	for _, d := range f.webhook.Received() {
		out["webhook"] = append(out["webhook"], jsonMsg(t, d.Body))
	}
	for _, c := range f.feishu.Received() {
		out["feishu"] = append(out["feishu"], chatMsg{Text: c.Card.Header.Title.Content + "\n" + c.Markdown()})
	}
	for _, m := range f.ding.Received() {
		out["dingtalk"] = append(out["dingtalk"], chatMsg{Text: m.Markdown.Title + "\n" + m.Markdown.Text})
	}
	for _, m := range f.wecom.Received() {
		out["wecom"] = append(out["wecom"], chatMsg{Text: m.Markdown.Content})
	}
	for name, file := range map[string]string{"reports": f.reports, "archive": filepath.Join(f.dir, "archive.jsonl"), "digest": f.digestPath} {
		out[name] = readJSONLines(t, file)
	}
	return out
}

// slackReports groups the Slack channel's messages by report: a bot
// report is its summary plus the replies in its thread that carry the
// same dedupe key (the problems, ten per reply). Another reply in the
// thread (a resolution) is a message of its own.
func slackReports(msgs []slackMessage) []chatMsg {
	var out []chatMsg
	for _, m := range msgs {
		text := m.Text + "\n" + m.Blocks
		if n := len(out); n > 0 && m.ThreadTS != "" && m.Key != "" && out[n-1].TS == m.ThreadTS && out[n-1].key == m.Key {
			out[n-1].Text += "\n" + text
			continue
		}
		out = append(out, chatMsg{Text: text, TS: m.TS, Thread: m.ThreadTS, key: m.Key})
	}
	return out
}

func jsonMsg(t *testing.T, body []byte) chatMsg {
	t.Helper()
	m := chatMsg{Text: string(body)}
	if err := json.Unmarshal(body, &m.Doc); err != nil {
		t.Fatalf("a JSON channel received no JSON object: %v: %s", err, body)
	}
	return m
}

func readJSONLines(t *testing.T, path string) []chatMsg {
	t.Helper()
	file, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var out []chatMsg
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		out = append(out, jsonMsg(t, append([]byte(nil), sc.Bytes()...)))
	}
	return out
}

// counts is how many messages each channel holds, plus Slack's edits.
func (f *fixture) counts(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for ch, msgs := range f.inboxes(t) {
		if ch != "digest" {
			out[ch] = len(msgs)
		}
	}
	out["slack chat.update"] = len(f.slack.Updates())
	out["slack posts"] = len(f.slack.Messages())
	return out
}

// since returns what each channel received after the counts in before.
func (f *fixture) since(t *testing.T, before map[string]int) map[string][]chatMsg {
	t.Helper()
	out := map[string][]chatMsg{}
	for ch, msgs := range f.inboxes(t) {
		if n := before[ch]; n <= len(msgs) {
			out[ch] = msgs[n:]
		}
	}
	return out
}

// settle waits until every run is finished and no delivery but a
// digest's is pending, then until cond holds; it fails with the
// daemon's log after limit.
func (f *fixture) settle(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if f.idle(t) && (cond == nil || cond()) {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(f.daemonLog)
			t.Fatalf("%s: not there after 90s (runs or deliveries pending: %v); daemon log:\n%s", what, !f.idle(t), log)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// idle reports whether the daemon has nothing to do: no run queued or
// running, no report or resolution waiting to be sent.
func (f *fixture) idle(t *testing.T) bool {
	t.Helper()
	if f.db == nil {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(f.dir, "data", "aicr.db")+"?mode=ro&_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		f.db = db
	}
	var busy int
	err := f.db.QueryRow(`SELECT (SELECT COUNT(*) FROM runs WHERE status IN ('queued', 'running')) +
		(SELECT COUNT(*) FROM dispatches WHERE status IN ('pending', 'unknown') AND purpose <> 'digest')`).Scan(&busy)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return false
		}
		t.Fatalf("read the daemon's queue: %v", err)
	}
	return busy == 0
}

// restart SIGKILLs the daemon and starts it again: nothing it had sent
// may be sent again, nothing it had planned may be lost.
func (f *fixture) restart(t *testing.T) {
	t.Helper()
	before := f.counts(t)
	f.killDaemon()
	f.startDaemon()
	f.settle(t, "after the restart", nil)
	after := f.counts(t)
	for ch, n := range before {
		if after[ch] != n {
			t.Errorf("after a SIGKILL and a restart %s has %d messages, had %d: a delivery was repeated", ch, after[ch], n)
		}
	}
}

// has reports whether s contains every one of subs.
func has(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// docList is the list under key of a JSON channel's body (nil when absent).
func docList(m chatMsg, key string) []map[string]any {
	raw, _ := m.Doc[key].([]any)
	var out []map[string]any
	for _, v := range raw {
		if o, ok := v.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// describe renders a channel's messages for a failure message.
func describe(msgs []chatMsg) string {
	var b strings.Builder
	for i, m := range msgs {
		text := m.Text
		if len(text) > 1500 {
			text = text[:1500] + "…"
		}
		fmt.Fprintf(&b, "  [%d] %s\n", i, text)
	}
	return b.String()
}
