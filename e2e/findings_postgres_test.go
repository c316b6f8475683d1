package e2e

// Findings across commits with two daemons on one PostgreSQL store: a
// resolution is announced once per channel, whichever daemon reviews the
// fix, and a report's signed link works on either daemon's web page
// (they share [web] link_key_file).

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/internal/svntest"
)

// fxClusterChannels adds the Slack bot channel and the web page to a
// cluster member's config; %[1]s is the Slack API, %[2]s this member's
// web address, %[3]s the shared base_url.
const fxClusterChannels = `
[web]
listen = %[2]q
base_url = %[3]q
auth = "token"
token_file = "web-token"
link_key_file = "web-link.key"

[[channel]]
name = "slack-bot"
kind = "slack"
token_file = "slack-token"
channel = "C0E2EFIND1"
api_url = %[1]q
no_problems = "suppress"
`

func TestFindingsTwoDaemonsOnPostgres(t *testing.T) {
	c := newCluster(t, 2, 1)
	slack, slackSrv := newSlackAPI(t, fxSlackBotToken)
	for name, v := range map[string]string{"slack-token": fxSlackBotToken, "web-token": fxWebToken,
		"web-link.key": "e2e-shared-link-key-0123456789abcdef0123456789"} {
		if err := os.WriteFile(filepath.Join(c.dir, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	webs := []string{freeAddr(t), freeAddr(t)}
	for i, m := range c.daemons {
		raw, err := os.ReadFile(m.config)
		if err != nil {
			t.Fatal(err)
		}
		cfg := strings.Replace(string(raw), `channels = ["reports"]`, `channels = ["reports", "slack-bot"]`, 1)
		// A Slack follow-up is several calls (edit, then reply): the
		// cluster's one-second attempt is too short for it on a busy host.
		cfg = strings.Replace(cfg, "[dispatch]\ntimeout = \"1s\"", "[dispatch]\ntimeout = \"5s\"", 1)
		cfg += fmt.Sprintf(fxClusterChannels, slackSrv.URL+"/api/", webs[i], "http://"+webs[0])
		if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		c.start(m)
	}
	commit := func(author, msg string, files map[string]string) {
		for name, content := range files {
			p := filepath.Join(c.wc, "src", name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		svntest.Run(t, c.wc, "svn", "add", "-q", "--force", ".")
		svntest.Run(t, c.wc, "svn", "commit", "-q", "-m", msg, "--username", author)
	}
	lines := func() []chatMsg { return readJSONLines(t, c.reports) }

	commit("alice", "add the service config and the demo seed", map[string]string{fxConfig: fxConfigR1, fxSeed: fxSeedR1})
	waitCluster(t, c, "r1's report", func() bool { return len(lines()) >= 1 && len(slack.Messages()) >= 2 })
	r1 := lines()[0]
	links := map[string]string{}
	for i, e := range docList(r1, "entries") {
		if strings.HasSuffix(str(docList(r1, "problems")[i]["file"]), fxSeed) {
			for _, a := range e["actions"].([]any) {
				al, _ := a.(map[string]any)
				links[str(al["action"])] = str(al["url"])
			}
		}
	}
	// Either daemon verifies the links the other signed.
	for _, web := range webs {
		u, err := url.Parse(links["wont_fix"])
		if err != nil || u.Host == "" {
			t.Fatalf("no signed link for the seed's finding in r1's report: %v\n%s", links, r1.Text)
		}
		u.Host = web
		if code, _ := httpGet(t, &http.Client{Timeout: 10 * time.Second}, u.String()); code != http.StatusOK {
			t.Errorf("the signed link on the daemon at %s: HTTP %d, want 200", web, code)
		}
	}

	// Both daemons are up; either may review the fix and plan its
	// resolution: it is announced once.
	commit("bob", "read the access key from the environment", map[string]string{fxConfig: fxConfigR3})
	resolutions := func() (n int) {
		for _, l := range lines() {
			if len(resolvedIDs(l)) > 0 {
				n++
			}
		}
		return n
	}
	waitCluster(t, c, "r2's resolution", func() bool { return resolutions() >= 1 && len(slack.Updates()) >= 1 })
	// Kill one daemon, perhaps in the middle of the Slack follow-up (the
	// edit done, the reply not yet): the delivery's lease runs out and
	// one of them finishes it, posting the reply once.
	c.kill(c.daemons[0])
	killed := time.Now()
	c.start(c.daemons[0])
	// A reply that is no part of r1's report (another dedupe key).
	threadReplies := func() (n int) {
		msgs := slack.Messages()
		for _, m := range msgs {
			if m.ThreadTS != "" && m.Key != msgs[0].Key && strings.Contains(strings.ToLower(m.Text), "resolved") {
				n++
			}
		}
		return n
	}
	waitCluster(t, c, "the resolution's reply in the Slack thread", func() bool {
		if threadReplies() >= 1 {
			return true
		}
		if time.Since(killed) > 115*time.Second {
			for _, m := range slack.Messages() {
				t.Logf("slack %s thread %q key %q: %.300s", m.TS, m.ThreadTS, m.Key, m.Text)
			}
		}
		return false
	})
	time.Sleep(2 * time.Second)
	if n := resolutions(); n != 1 {
		t.Errorf("the file channel got %d resolutions, want 1 (two daemons on one store)", n)
	}
	replies, summaries := threadReplies(), 0
	for _, m := range slack.Messages() {
		if m.ThreadTS == "" {
			summaries++
		}
	}
	// A follow-up cut short after its edit is resumed from the edit (the
	// same content again, harmless); the reply is posted once.
	edits := map[string][]string{}
	for _, u := range slack.Updates() {
		edits[u.TS] = append(edits[u.TS], u.Text+u.Blocks)
	}
	if len(edits[lines0TS(slack)]) == 0 {
		t.Errorf("r1's Slack message was not edited")
	}
	for ts, bodies := range edits {
		for _, b := range bodies[1:] {
			if b != bodies[0] {
				t.Errorf("Slack message %s was edited %d times with different content", ts, len(bodies))
			}
		}
	}
	if replies != 1 || summaries != 1 {
		t.Errorf("Slack: %d resolution replies and %d reports, want 1 and 1 (r2's no-problems report is suppressed)", replies, summaries)
	}
	for _, m := range slack.Messages() {
		imtest.AssertNoLeak(t, "slack", m.Text+m.Blocks, fxSecrets...)
	}
}

// waitCluster waits up to two minutes for cond, failing with both
// daemons' logs.
func waitCluster(t *testing.T, c *cluster, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, m := range c.daemons {
				raw, _ := os.ReadFile(m.log)
				fmt.Fprintf(&logs, "--- %s\n%s\n", m.addr, raw)
			}
			t.Fatalf("%s: not there after 2 minutes; daemon logs:\n%s", what, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lines0TS is the ts of the first message the Slack stand-in got.
func lines0TS(s *slackAPI) string {
	if msgs := s.Messages(); len(msgs) > 0 {
		return msgs[0].TS
	}
	return ""
}
