package e2e

// The steps of the findings scenario (findings_test.go).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im/slack"
)

// scenario is what the steps learn and hand on.
type scenario struct {
	ids  map[string]int64 // finding id per scenario file
	revs []string         // r1..r4 as the VCS names them
	// slackTS is the ts of the Slack message that announced r1.
	slackTS string
	// slackR1 is the Slack channel as r1's report left it.
	slackR1 []slackMessage
	// links are the signed action links of r1's report per file, from
	// the file channel: action → URL.
	links map[string]map[string]string
}

func (f *fixture) run(t *testing.T) {
	f.startDaemon()
	sc := &scenario{ids: map[string]int64{}, links: map[string]map[string]string{}}
	f.stepAnnounce(t, sc)
	f.restart(t)
	f.stepRepeat(t, sc)
	f.restart(t)
	f.stepResolve(t, sc)
	f.stepDismiss(t, sc)
	f.restart(t)
	f.stepSuppressed(t, sc)
	f.restart(t)
	f.stepReopen(t, sc)
	f.stepDigest(t, sc)
	f.checkNoLeak(t)
	f.keepArtifacts(t)
	if f.shotsWanted() && len(sc.slackR1) > 0 {
		f.takeShots(t, sc.slackR1)
	}
}

// keepArtifacts writes what each channel received to $AICR_TEST_ARTIFACTS
// (when set), one file per channel: what a reader saw, for a failure's
// post-mortem and for the README's samples.
func (f *fixture) keepArtifacts(t *testing.T) {
	dir := os.Getenv("AICR_TEST_ARTIFACTS")
	if dir == "" {
		return
	}
	os.MkdirAll(dir, 0o755)
	for ch, msgs := range f.inboxes(t) {
		var b strings.Builder
		for i, m := range msgs {
			fmt.Fprintf(&b, "=== %s message %d (thread %q)\n%s\n\n", ch, i+1, m.Thread, m.Text)
		}
		if ch == "slack-bot" {
			for i, u := range f.slack.Updates() {
				fmt.Fprintf(&b, "=== chat.update %d of %s\n%s\n%s\n\n", i+1, u.TS, u.Text, u.Blocks)
			}
		}
		name := filepath.Join(dir, fmt.Sprintf("findings-%s-%s.txt", f.vcs.name, ch))
		if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
			t.Errorf("keep artifact: %v", err)
		}
	}
}

func (f *fixture) path(file string) string { return f.vcs.root + file }

// stepAnnounce: r1 brings three findings; every channel gets them in
// full, each with its finding id and links (Slack: buttons too).
func (f *fixture) stepAnnounce(t *testing.T, sc *scenario) {
	before := f.counts(t)
	rev := f.vcs.commit("alice", "add the service config, its login fixture and the demo seed",
		map[string]string{fxConfig: fxConfigR1, fxFixture: fxFixtureR1, fxSeed: fxSeedR1})
	sc.revs = append(sc.revs, rev)
	f.settle(t, "r1's reports on every channel", func() bool { return f.everyChannelGot(t, before, reportChannels) })
	got := f.since(t, before)
	for _, name := range []string{fxConfig, fxFixture, fxSeed} {
		fd := f.findingAt(t, name)
		if fd.State != findings.StateOpen || fd.FirstRevision != rev || fd.FirstAuthor != "alice" || fd.Sightings != 1 {
			t.Errorf("r1: finding of %s: %+v", name, fd)
		}
		sc.ids[name] = fd.ID
	}
	for _, ch := range reportChannels {
		msgs := got[ch]
		if len(msgs) != 1 {
			t.Errorf("r1: %s got %d messages, want the one report:\n%s", ch, len(msgs), describe(msgs))
			continue
		}
		m := msgs[0]
		for _, name := range []string{fxConfig, fxFixture, fxSeed} {
			if !has(m.Text, f.path(name)) {
				t.Errorf("r1: %s's report does not name %s:\n%s", ch, f.path(name), m.Text)
			}
		}
		if !structured(ch) && !has(m.Text, fxSuggestion) {
			t.Errorf("r1: %s's report does not show the findings in full:\n%s", ch, m.Text)
		}
		if structured(ch) {
			f.checkEntries(t, ch, m, sc, []string{fxConfig, fxFixture, fxSeed})
		}
	}
	sc.slackR1 = f.slack.Messages()
	if msgs := got["slack-bot"]; len(msgs) == 1 {
		sc.slackTS = msgs[0].TS
		for _, name := range []string{fxConfig, fxFixture, fxSeed} {
			for _, a := range findings.ReportActions {
				button := fmt.Sprintf(`"action_id":%q`, slack.ActionID(string(a)))
				value := fmt.Sprintf(`"value":%q`, slack.ActionValue(sc.ids[name]))
				if !has(msgs[0].Text, button, value) {
					t.Errorf("r1: the Slack report lacks the %s button of finding %d (%s)", a, sc.ids[name], name)
				}
			}
		}
	}
	for _, m := range got["digest"] {
		if len(docList(m, "problems")) > 0 {
			t.Errorf("r1: the digest-only channel got a report: %s", m.Text)
		}
	}
}

// checkEntries checks a JSON channel's report: one problem per file, and
// an entry per problem with its finding id, page and action links to
// the daemon's web page. The file channel's links are kept for later.
func (f *fixture) checkEntries(t *testing.T, ch string, m chatMsg, sc *scenario, files []string) {
	t.Helper()
	problems, entries := docList(m, "problems"), docList(m, "entries")
	if len(problems) != len(files) || len(entries) != len(problems) {
		t.Errorf("%s: %d problems and %d entries, want %d of each:\n%s", ch, len(problems), len(entries), len(files), m.Text)
		return
	}
	base := "http://" + f.webAddr + "/"
	for i, p := range problems {
		name := strings.TrimPrefix(str(p["file"]), f.vcs.root)
		e := entries[i]
		if want := sc.ids[name]; want == 0 || num(e["finding_id"]) != want {
			t.Errorf("%s: entry %d (%s) has finding %v, want %d", ch, i, name, e["finding_id"], want)
		}
		if !strings.HasPrefix(str(e["page"]), base) {
			t.Errorf("%s: entry %d's page link %q is not on %s", ch, i, e["page"], base)
		}
		links := map[string]string{}
		for _, a := range e["actions"].([]any) {
			al, _ := a.(map[string]any)
			links[str(al["action"])] = str(al["url"])
		}
		for _, a := range findings.ReportActions {
			if !strings.HasPrefix(links[string(a)], base) {
				t.Errorf("%s: entry %d (%s) has no %s link on %s: %v", ch, i, name, a, base, links)
			}
		}
		if ch == "reports" {
			sc.links[name] = links
		}
	}
}

// stepRepeat: r2 reformats the line of A and edits the file elsewhere
// without fixing it. No channel gets A in full again: mention channels
// a "still open since r1" line, omit channels nothing at all, the
// archive (repeat = "full") the whole finding as before.
func (f *fixture) stepRepeat(t *testing.T, sc *scenario) {
	before := f.counts(t)
	rev := f.vcs.commit("alice", "align the constants, add Zone", map[string]string{fxConfig: fxConfigR2})
	sc.revs = append(sc.revs, rev)
	f.settle(t, "r2's reports", func() bool {
		return f.everyChannelGot(t, before, append(append([]string{}, mentionChannels...), "archive"))
	})
	got := f.since(t, before)
	a := f.findingAt(t, fxConfig)
	if a.ID != sc.ids[fxConfig] || a.State != findings.StateOpen || a.Sightings != 2 || a.LastRevision != rev {
		t.Errorf("r2: finding A should be the same open finding seen twice: %+v", a)
	}
	since := "still open since " + f.vcs.label(sc.revs[0])
	for _, ch := range mentionChannels {
		msgs := got[ch]
		if len(msgs) != 1 {
			t.Errorf("r2: %s got %d messages, want one with the repeat line:\n%s", ch, len(msgs), describe(msgs))
			continue
		}
		m := msgs[0]
		if !has(m.Text, f.path(fxConfig), since) || has(m.Text, fxSuggestion) {
			t.Errorf("r2: %s should mention %s as %q, not in full:\n%s", ch, f.path(fxConfig), since, m.Text)
		}
		if structured(ch) {
			repeats := docList(m, "repeats")
			if len(docList(m, "problems")) != 0 || len(repeats) != 1 || num(repeats[0]["finding_id"]) != a.ID {
				t.Errorf("r2: %s: want no problem in full and finding %d as a repeat:\n%s", ch, a.ID, m.Text)
			}
		}
	}
	for _, ch := range omitChannels {
		if msgs := got[ch]; len(msgs) != 0 {
			t.Errorf("r2: %s (repeat = omit, no_problems = suppress) got %d messages, want none:\n%s", ch, len(msgs), describe(msgs))
		}
	}
	if msgs := got["archive"]; len(msgs) != 1 || len(docList(msgs[0], "problems")) != 1 || !has(msgs[0].Text, f.path(fxConfig)) {
		t.Errorf("r2: the archive (repeat = full) should get A in full again:\n%s", describe(msgs))
	}
}

// everyChannelGot reports whether every one of channels received a
// message since before.
func (f *fixture) everyChannelGot(t *testing.T, before map[string]int, channels []string) bool {
	now := f.counts(t)
	for _, ch := range channels {
		if now[ch] <= before[ch] {
			return false
		}
	}
	return true
}

// findingAt is the repo's finding in a scenario file, from `aicr
// findings list --format json`.
func (f *fixture) findingAt(t *testing.T, file string) findings.Finding {
	t.Helper()
	var match []findings.Finding
	for _, fd := range f.listFindings(t) {
		if fd.Path == f.path(file) {
			match = append(match, fd)
		}
	}
	if len(match) != 1 {
		t.Fatalf("want one finding in %s, got %d: %+v\ndaemon log:\n%s", f.path(file), len(match), match, f.logTail())
	}
	return match[0]
}

func (f *fixture) listFindings(t *testing.T, args ...string) []findings.Finding {
	t.Helper()
	out, errOut, code := runAicr(t, f.dir, append([]string{"findings", "list", "--config", f.config, "--repo", f.repo, "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("aicr findings list %v: exit %d: %s", args, code, errOut)
	}
	var list []findings.Finding
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("aicr findings list --format json: %v\n%s", err, out)
	}
	return list
}

// logTail is the end of the daemon's log, for a failure message.
func (f *fixture) logTail() string {
	raw, _ := os.ReadFile(f.daemonLog)
	lines := strings.Split(string(raw), "\n")
	if len(lines) > 80 {
		lines = lines[len(lines)-80:]
	}
	return strings.Join(lines, "\n")
}
