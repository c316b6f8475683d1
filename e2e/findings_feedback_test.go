package e2e

// The later steps of the findings scenario: the fix and its
// acknowledgement, the team's dismissals (a Slack button, a signed web
// link), the review that must not raise them again, a reopen, the
// digest.

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/findings"
)

// stepResolve: bob's r3 fixes A. Slack's first chat.update is refused
// (429) and the daemon is SIGKILLed with the resolution pending; after
// the restart the original message is edited once and one reply goes to
// its thread, and every other channel gets the resolution once.
func (f *fixture) stepResolve(t *testing.T, sc *scenario) {
	before := f.counts(t)
	tried := f.slack.Calls("chat.update")
	f.slack.FailUpdates(1)
	rev := f.vcs.commit("bob", "read the access key from the environment", map[string]string{fxConfig: fxConfigR3})
	sc.revs = append(sc.revs, rev)
	waitFor(t, f.env, "the first chat.update", func() bool { return f.slack.Calls("chat.update") > tried })
	f.killDaemon()
	f.startDaemon()
	f.settle(t, "r3's resolutions", func() bool {
		return len(f.slack.Updates()) > before["slack chat.update"] && f.everyChannelGot(t, before, reportChannels)
	})
	got := f.since(t, before)
	a := f.findingAt(t, fxConfig)
	if a.State != findings.StateResolved || a.ResolvedRevision != rev || a.ResolvedAuthor != "bob" || a.ResolvedRunID == 0 {
		t.Errorf("r3: finding A should be resolved in %s by bob: %+v", rev, a)
	}
	f.checkSlackResolution(t, sc, before, got["slack-bot"])
	for _, ch := range reportChannels[1:] {
		var resolutions []chatMsg
		for _, m := range got[ch] {
			if isResolution(m, f.path(fxConfig)) {
				resolutions = append(resolutions, m)
			}
		}
		if len(resolutions) != 1 {
			t.Errorf("r3: %s got %d resolutions, want one:\n%s", ch, len(resolutions), describe(got[ch]))
			continue
		}
		m := resolutions[0]
		if !has(m.Text, f.vcs.label(rev)) {
			t.Errorf("r3: %s's resolution does not name %s:\n%s", ch, f.vcs.label(rev), m.Text)
		}
		if structured(ch) && !slicesHas(resolvedIDs(m), a.ID) {
			t.Errorf("r3: %s's resolution has no resolved record of finding %d:\n%s", ch, a.ID, m.Text)
		}
	}
	for _, ch := range omitChannels {
		if n := len(got[ch]); n != 1 {
			t.Errorf("r3: %s (no_problems = suppress) got %d messages, want only the resolution:\n%s", ch, n, describe(got[ch]))
		}
	}
}

// checkSlackResolution: r1's message is edited once to mark A resolved
// (and the thread reply that carries A's entry, once, if at all), and one
// reply goes to its thread.
func (f *fixture) checkSlackResolution(t *testing.T, sc *scenario, before map[string]int, got []chatMsg) {
	t.Helper()
	parts := map[string]bool{sc.slackTS: true}
	for _, m := range f.slack.Messages() {
		if m.ThreadTS == sc.slackTS && m.Key != "" && m.Key == f.slackKey(sc.slackTS) {
			parts[m.TS] = true
		}
	}
	edits := map[string]int{}
	for _, u := range f.slack.Updates()[before["slack chat.update"]:] {
		edits[u.TS]++
		if u.Channel != fxSlackChannel || !parts[u.TS] {
			t.Errorf("r3: chat.update of %s %s, which is no part of r1's report %s %s", u.Channel, u.TS, fxSlackChannel, sc.slackTS)
		}
		if edits[u.TS] > 1 {
			t.Errorf("r3: message %s edited %d times", u.TS, edits[u.TS])
		}
		if body := u.Text + u.Blocks; u.TS == sc.slackTS && !has(body, "Resolved", "bob") {
			t.Errorf("r3: the edited Slack report should mark A resolved by bob:\n%s", body)
		}
	}
	if edits[sc.slackTS] != 1 {
		t.Errorf("r3: r1's Slack message edited %d times, want once", edits[sc.slackTS])
	}
	var replies int
	for _, m := range got {
		switch {
		case m.Thread == sc.slackTS && isResolution(m, f.path(fxConfig)):
			replies++
		case m.Thread == "" && isResolution(m, f.path(fxConfig)):
			t.Errorf("r3: the resolution was posted as a new Slack message, not in r1's thread:\n%s", m.Text)
		}
	}
	if replies != 1 {
		t.Errorf("r3: %d resolution replies in r1's Slack thread, want 1:\n%s", replies, describe(got))
	}
}

// isResolution reports whether m tells that the finding in path was
// resolved.
func isResolution(m chatMsg, path string) bool {
	if m.Doc != nil && len(resolvedIDs(m)) > 0 {
		return true
	}
	return has(m.Text, path) && strings.Contains(strings.ToLower(m.Text), "resolved")
}

// resolvedIDs are the finding ids of a JSON channel's resolved records,
// at the top ("resolved") or per earlier report ("followups").
func resolvedIDs(m chatMsg) []int64 {
	var ids []int64
	for _, r := range docList(m, "resolved") {
		ids = append(ids, num(r["finding_id"]))
	}
	for _, fu := range docList(m, "followups") {
		for _, r := range docList(chatMsg{Doc: fu}, "resolved") {
			ids = append(ids, num(r["finding_id"]))
		}
	}
	return ids
}

func slicesHas(ids []int64, id int64) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

// waitFor polls cond for 90 seconds: a digest comes at the next minute.
func waitFor(t *testing.T, e *env, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(e.daemonLog)
			t.Fatalf("%s: not there after 90s; daemon log:\n%s", what, log)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// stepDismiss: dana dismisses B as a false positive with the Slack
// button; erin dismisses C as won't fix from the signed link of r1's
// report. The CLI lists both with their actors.
func (f *fixture) stepDismiss(t *testing.T, sc *scenario) {
	f.socket.click(t, "U0E2EDANA", "dana", sc.slackTS, sc.ids[fxFixture], string(findings.ActionFalsePositive))
	waitFor(t, f.env, "B dismissed from Slack", func() bool { return f.findingAt(t, fxFixture).State == findings.StateDismissed })
	b := f.findingAt(t, fxFixture)
	if b.ActedVia != findings.ViaSlack || !strings.Contains(b.ActedBy, "U0E2EDANA") || b.Dismissal != findings.ActionFalsePositive {
		t.Errorf("B dismissed from Slack: acted by %q via %q as %q", b.ActedBy, b.ActedVia, b.Dismissal)
	}
	f.socket.checkAnswered(t, "U0E2EDANA")

	f.dismissFromLink(t, sc.links[fxSeed][string(findings.ActionWontFix)], "erin")
	c := f.findingAt(t, fxSeed)
	if c.State != findings.StateDismissed || c.ActedVia != findings.ViaWeb || !strings.Contains(c.ActedBy, "erin") || c.Dismissal != findings.ActionWontFix {
		t.Errorf("C dismissed from the web link: %+v", c)
	}
	f.checkReadPages(t, c)
	byPath := map[string]findings.Finding{}
	for _, fd := range f.listFindings(t, "--state", "dismissed") {
		byPath[fd.Path] = fd
	}
	if len(byPath) != 2 || byPath[f.path(fxFixture)].ActedBy != b.ActedBy || byPath[f.path(fxSeed)].ActedBy != c.ActedBy {
		t.Errorf("aicr findings list --state dismissed: want B by %q and C by %q, got %+v", b.ActedBy, c.ActedBy, byPath)
	}
}

// formRE finds a POST form and its fields on the finding's page.
var (
	formRE  = regexp.MustCompile(`(?is)<form\b([^>]*)>(.*?)</form>`)
	attrRE  = regexp.MustCompile(`(?i)([a-z-]+)="([^"]*)"`)
	inputRE = regexp.MustCompile(`(?i)<(?:input|button)\b([^>]*)>`)
)

// dismissFromLink opens a signed action link as a reader's browser
// would: the GET shows the finding and a confirmation form and changes
// nothing; a forged signature is refused; posting the form (with its
// CSRF token) as name does the action.
func (f *fixture) dismissFromLink(t *testing.T, link, name string) {
	t.Helper()
	if link == "" {
		t.Fatal("no signed won't-fix link for C in r1's report")
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	forged := *u
	q := forged.Query()
	q.Set("sig", strings.Repeat("A", len(q.Get("sig"))))
	forged.RawQuery = q.Encode()
	if code, _ := httpGet(t, client, forged.String()); code != http.StatusForbidden {
		t.Errorf("a forged link: HTTP %d, want 403", code)
	}
	code, page := httpGet(t, client, link)
	if code != http.StatusOK || !has(page, f.path(fxSeed)) {
		t.Fatalf("GET of the signed link: HTTP %d, want 200 and the finding:\n%s", code, page)
	}
	if st := f.findingAt(t, fxSeed).State; st != findings.StateOpen {
		t.Fatalf("a GET of the action link changed the finding to %s", st)
	}
	action, form := postForm(t, u, page)
	if _, ok := form["name"]; ok {
		form.Set("name", name)
	} else {
		t.Logf("the confirmation form asks no name; fields %v", form)
	}
	resp, err := client.PostForm(action, form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		t.Fatalf("POST of the confirmation form: HTTP %d:\n%s", resp.StatusCode, body)
	}
	if again, err := client.PostForm(action, form); err == nil {
		again.Body.Close()
		if again.StatusCode < 400 && f.findingAt(t, fxSeed).State != findings.StateDismissed {
			t.Errorf("a second POST of the same form changed the finding again")
		}
	}
}

func httpGet(t *testing.T, client *http.Client, link string) (int, string) {
	t.Helper()
	resp, err := client.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// postForm reads the page's POST form: its absolute action and fields.
func postForm(t *testing.T, page *url.URL, body string) (string, url.Values) {
	t.Helper()
	for _, m := range formRE.FindAllStringSubmatch(body, -1) {
		attrs := attrMap(m[1])
		if !strings.EqualFold(attrs["method"], "post") {
			continue
		}
		action, err := page.Parse(attrs["action"])
		if err != nil {
			t.Fatalf("form action %q: %v", attrs["action"], err)
		}
		form := url.Values{}
		for _, in := range inputRE.FindAllStringSubmatch(m[2], -1) {
			a := attrMap(in[1])
			if a["name"] != "" {
				form.Set(a["name"], a["value"])
			}
		}
		return action.String(), form
	}
	t.Fatalf("the finding's page has no POST form:\n%s", body)
	return "", nil
}

func attrMap(s string) map[string]string {
	out := map[string]string{}
	for _, a := range attrRE.FindAllStringSubmatch(s, -1) {
		out[strings.ToLower(a[1])] = html.UnescapeString(a[2])
	}
	return out
}

// stepSuppressed: r4 touches B's and C's lines and adds D. The review
// sees all three; the channels get D alone, never B or C.
func (f *fixture) stepSuppressed(t *testing.T, sc *scenario) {
	before := f.counts(t)
	rev := f.vcs.commit("alice", "tidy the fixtures, add the deploy key",
		map[string]string{fxFixture: fxFixtureR4, fxSeed: fxSeedR4, fxDeploy: fxDeployR4})
	sc.revs = append(sc.revs, rev)
	f.settle(t, "r4's reports", func() bool { return f.everyChannelGot(t, before, reportChannels) })
	got := f.since(t, before)
	d := f.findingAt(t, fxDeploy)
	sc.ids[fxDeploy] = d.ID
	if d.State != findings.StateOpen || d.FirstRevision != rev {
		t.Errorf("r4: D should be new in %s: %+v", rev, d)
	}
	for _, name := range []string{fxFixture, fxSeed} {
		if fd := f.findingAt(t, name); fd.State != findings.StateDismissed || fd.ID != sc.ids[name] {
			t.Errorf("r4: the finding in %s should stay dismissed: %+v", name, fd)
		}
	}
	for _, ch := range reportChannels {
		msgs := got[ch]
		if len(msgs) != 1 {
			t.Errorf("r4: %s got %d messages, want the one report:\n%s", ch, len(msgs), describe(msgs))
			continue
		}
		m := msgs[0]
		if !has(m.Text, f.path(fxDeploy)) || has(m.Text, f.path(fxFixture)) || has(m.Text, f.path(fxSeed)) {
			t.Errorf("r4: %s should report D and neither dismissed finding:\n%s", ch, m.Text)
		}
		if structured(ch) && (len(docList(m, "problems")) != 1 || len(docList(m, "repeats")) != 0) {
			t.Errorf("r4: %s: want D alone:\n%s", ch, m.Text)
		}
	}
}

// stepReopen: an operator takes C's dismissal back from the CLI; the
// history keeps both actions and their actors, and only B stays
// dismissed. Reopening it again is a clear conflict.
func (f *fixture) stepReopen(t *testing.T, sc *scenario) {
	id := fmt.Sprint(sc.ids[fxSeed])
	if _, errOut, code := runAicr(t, f.dir, "findings", "reopen", id, "--config", f.config, "--note", "the demo seed ships to staging now"); code != 0 {
		t.Fatalf("aicr findings reopen %s: exit %d: %s", id, code, errOut)
	}
	c := f.findingAt(t, fxSeed)
	if c.State != findings.StateReopened || c.ActedVia != findings.ViaCLI {
		t.Errorf("after aicr findings reopen: %+v", c)
	}
	history := f.history(t, id)
	var kinds []string
	for _, ev := range history {
		kinds = append(kinds, fmt.Sprintf("%s/%s/%s", ev.Kind, ev.Via, ev.Actor))
	}
	joined := strings.Join(kinds, " ")
	if !has(joined, "reported/review", "dismissed/web/", "reopened/cli/") || !strings.Contains(joined, "erin") {
		t.Errorf("C's history should hold the report, erin's dismissal and the reopen: %s", joined)
	}
	dismissed := f.listFindings(t, "--state", "dismissed")
	if len(dismissed) != 1 || dismissed[0].ID != sc.ids[fxFixture] {
		t.Errorf("after the reopen only B is dismissed: %+v", dismissed)
	}
	// Reopening it again changes nothing and says so.
	out, errOut, code := runAicr(t, f.dir, "findings", "reopen", id, "--config", f.config)
	if code != 0 || !strings.Contains(out+errOut, "already reopened") {
		t.Errorf("reopening a reopened finding: exit %d, %q %q; want a note that it is already reopened", code, out, errOut)
	}
	if h := f.history(t, id); len(h) != len(history) {
		t.Errorf("reopening a reopened finding added %d events", len(h)-len(history))
	}
}

// history is a finding's history from `aicr findings show --format json`.
func (f *fixture) history(t *testing.T, id string) []findings.Event {
	t.Helper()
	out, errOut, code := runAicr(t, f.dir, "findings", "show", id, "--config", f.config, "--format", "json")
	if code != 0 {
		t.Fatalf("aicr findings show %s: exit %d: %s", id, code, errOut)
	}
	var shown struct {
		Finding findings.Finding `json:"finding"`
		History []findings.Event `json:"history"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatalf("aicr findings show --format json: %v\n%s", err, out)
	}
	return shown.History
}

// slackKey is the dedupe key of the Slack message at ts.
func (f *fixture) slackKey(ts string) string {
	for _, m := range f.slack.Messages() {
		if m.TS == ts {
			return m.Key
		}
	}
	return ""
}

// checkReadPages: the finding list needs the [web] token, and with it
// shows the finding erin dismissed, and her name.
func (f *fixture) checkReadPages(t *testing.T, c findings.Finding) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	list := "http://" + f.webAddr + "/findings?state=dismissed"
	if code, _ := httpGet(t, client, list); code != http.StatusUnauthorized {
		t.Errorf("GET /findings without the token: HTTP %d, want 401", code)
	}
	req, _ := http.NewRequest(http.MethodGet, list, nil)
	req.Header.Set("Authorization", "Bearer "+fxWebToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !has(string(body), f.path(fxSeed)) {
		t.Errorf("GET /findings?state=dismissed with the token: HTTP %d, want 200 listing %s:\n%s", resp.StatusCode, f.path(fxSeed), body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("the finding list's Content-Security-Policy is %q", csp)
	}
	code, page := f.authedGet(t, client, fmt.Sprintf("http://%s/findings/%d", f.webAddr, c.ID))
	if code != http.StatusOK || !has(page, "erin") {
		t.Errorf("the finding's page: HTTP %d, want 200 with erin's dismissal in its history", code)
	}
}

func (f *fixture) authedGet(t *testing.T, client *http.Client, link string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, link, nil)
	req.Header.Set("Authorization", "Bearer "+fxWebToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
