package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aicr-dev/aicr/audit"
	// The package has a delivery type of its own (one accepted message).
	deliverypkg "github.com/aicr-dev/aicr/delivery"
)

// received is what one channel's stand-in accepted for one run: how many
// times each part arrived, how many parts the report says it has (0 when
// it does not say), and the text of every part, for the content checks.
type received struct {
	parts map[int]int
	of    int
	text  strings.Builder
	// threadBroken: a Slack reply not in the thread of the summary.
	threadBroken bool
}

var (
	partRE = regexp.MustCompile(`\((\d+)/(\d+)\)`)
	// A failed run's delivery (its notice or partial review) carries the
	// key with "-failure" (delivery: the retry's full report is another
	// message); it is still that run's one delivery to the channel.
	dedupeRE  = regexp.MustCompile(`^aicr-(\d+)-(.+?)(?:-failure)?$`)
	refusalRE = regexp.MustCompile(`40058|460101|19024|9499|msg_too_long|invalid_blocks|44004|40008`)
)

// isResolution spots a resolution follow-up (a finding a later change
// fixed), by its dedupe key or its title: it is the resolving run's
// second message to the channel, not part of its report, so the report
// checks leave it out.
func isResolution(key, head string) bool {
	return strings.HasSuffix(key, "-resolution") || strings.Contains(head, "aicr: resolved in ")
}

type index map[string]map[int64]*received

func (ix index) add(channel string, run int64, part, of int, text string) *received {
	if ix[channel] == nil {
		ix[channel] = map[int64]*received{}
	}
	r := ix[channel][run]
	if r == nil {
		r = &received{parts: map[int]int{}}
		ix[channel][run] = r
	}
	r.parts[part]++
	if of > r.of {
		r.of = of
	}
	r.text.WriteString(text + "\n")
	return r
}

// botMsg is one bot message as collect reads it.
type botMsg struct {
	d    delivery
	of   int
	text string
}

// byHead reads a bot message's part label ("(2/3)") from its head and
// its run from its footer; the parts before the last name no run and
// get theirs from resolveRuns. A message whose run stays unknown is
// filed under 0.
func byHead(channel, head, text string) botMsg {
	b := botMsg{d: delivery{channel: channel, part: 1}, of: 1, text: text}
	if m := partRE.FindStringSubmatch(head); m != nil {
		b.d.part, _ = strconv.Atoi(m[1])
		b.of, _ = strconv.Atoi(m[2])
	}
	b.d.title = strings.TrimSpace(partRE.ReplaceAllString(head, ""))
	if m := footerRunRE.FindAllStringSubmatch(text, -1); m != nil {
		b.d.run, _ = strconv.ParseInt(m[len(m)-1][1], 10, 64)
	}
	return b
}

// hookTitle is the title of a Slack incoming-webhook post, which is
// never split: its footer names the run.
func hookTitle(body []byte) string {
	if m := titleRE.FindSubmatch(body); m != nil {
		return string(m[1])
	}
	return ""
}

// addBots files bot messages, in arrival order, under their runs.
func (ix index) addBots(msgs []botMsg) {
	ds := make([]delivery, len(msgs))
	for i, m := range msgs {
		ds[i] = m.d
	}
	for i, d := range resolveRuns(ds) {
		ix.add(d.channel, d.run, d.part, msgs[i].of, msgs[i].text)
	}
}

// collect reads what every stand-in accepted, deduplicated by report
// identity (run and channel), counting each part.
func (s *soak) collect() (index, []string) {
	ix := index{}
	var odd []string
	var bots []botMsg
	summaries := map[string]string{} // dedupe key → summary ts
	for _, p := range s.slack.Posts() {
		if p.Part == 0 {
			summaries[p.Key] = p.TS
		}
	}
	for _, p := range s.slack.Posts() {
		if isResolution(p.Key, p.Text) {
			continue
		}
		m := dedupeRE.FindStringSubmatch(p.Key)
		if m == nil {
			odd = append(odd, fmt.Sprintf("slack-bot: a post without aicr metadata: %.80q", p.Text))
			continue
		}
		run, _ := strconv.ParseInt(m[1], 10, 64)
		r := ix.add(m[2], run, p.Part, 0, p.Text+"\n"+p.Blocks)
		if p.Part > 0 && p.ThreadTS != summaries[p.Key] {
			r.threadBroken = true
		}
	}
	for _, d := range s.slackHook.Received() {
		if isResolution("", string(d.Body)) {
			continue
		}
		bots = append(bots, byHead("slack-hook", hookTitle(d.Body), string(d.Body)))
	}
	for _, d := range s.hook.Received() {
		var body struct {
			RunID int64 `json:"run_id"`
		}
		_ = json.Unmarshal(d.Body, &body)
		if isResolution(d.IdempotencyKey, "") {
			continue
		}
		if key := fmt.Sprintf("aicr-%d-webhook", body.RunID); d.IdempotencyKey != key && d.IdempotencyKey != key+"-failure" {
			odd = append(odd, fmt.Sprintf("webhook: run %d came with Idempotency-Key %q", body.RunID, d.IdempotencyKey))
		}
		ix.add("webhook", body.RunID, 1, 1, string(d.Body))
	}
	for _, c := range s.feishu.Received() {
		if isResolution("", c.Card.Header.Title.Content) {
			continue
		}
		bots = append(bots, byHead("feishu", c.Card.Header.Title.Content, c.Card.Header.Title.Content+"\n"+c.Markdown()))
	}
	for _, m := range s.ding.Received() {
		if isResolution("", m.Markdown.Title) {
			continue
		}
		bots = append(bots, byHead("dingtalk", m.Markdown.Title, m.Markdown.Title+"\n"+m.Markdown.Text))
	}
	for _, m := range s.wecom.Received() {
		head, _, _ := strings.Cut(m.Markdown.Content, "\n")
		if isResolution("", head) {
			continue
		}
		bots = append(bots, byHead("wecom", strings.TrimPrefix(head, "### "), m.Markdown.Content))
	}
	ix.addBots(bots)
	if f, err := os.Open(filepath.Join(s.root, "reports.jsonl")); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var line struct {
				RunID      int64  `json:"run_id"`
				ReportKind string `json:"report_kind"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				odd = append(odd, fmt.Sprintf("file: a line that is not JSON: %v", err))
				continue
			}
			if line.ReportKind == "resolution" {
				continue
			}
			ix.add("file", line.RunID, 1, 1, sc.Text())
		}
		f.Close()
	}
	return ix, odd
}

// complete says whether r holds every part exactly once. Bot channels
// label parts 1..n; Slack numbers the summary 0 and its replies 1..n.
func (r *received) complete(channel string) (string, bool) {
	var idx []int
	dup := false
	for p, n := range r.parts {
		idx = append(idx, p)
		dup = dup || n > 1
	}
	sort.Ints(idx)
	first, last := 1, r.of
	if channel == "slack-bot" {
		first, last = 0, idx[len(idx)-1]
	}
	want := last - first + 1
	ok := !dup && len(idx) == want && idx[0] == first && !r.threadBroken
	if ok {
		return "", true
	}
	var b strings.Builder
	for _, p := range idx {
		fmt.Fprintf(&b, "part %d×%d ", p, r.parts[p])
	}
	if r.of > 0 && channel != "slack-bot" {
		fmt.Fprintf(&b, "of %d", r.of)
	}
	if r.threadBroken {
		b.WriteString(" (a reply outside the summary's thread)")
	}
	return strings.TrimSpace(b.String()), false
}

type verdict struct {
	name   string
	bad    []string
	detail string
}

func (v *verdict) fail(format string, args ...any) {
	v.bad = append(v.bad, fmt.Sprintf(format, args...))
}

// check evaluates the invariants and prints them as a table.
func (s *soak) check() {
	t := s.t
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runs, err := s.store.ListRuns(ctx, audit.ListOptions{Limit: 1 << 20})
	if err != nil {
		t.Fatalf("list runs: %v", err)
	}
	disps, err := s.store.ListDispatches(ctx, audit.DispatchFilter{Limit: 1 << 20})
	if err != nil {
		t.Fatalf("list dispatches: %v", err)
	}
	ix, odd := s.collect()
	s.commitsMu.Lock()
	commits := slices.Clone(s.commits)
	commitErrs := slices.Clone(s.commitErrs)
	s.commitsMu.Unlock()

	runsOf := map[string][]audit.RunSummary{}
	runByID := map[int64]audit.RunSummary{}
	for _, r := range runs {
		runsOf[r.Repo+"@"+r.Revision] = append(runsOf[r.Repo+"@"+r.Revision], r)
		runByID[r.ID] = r
	}
	dispsOf := map[int64][]deliverypkg.Dispatch{}
	for _, d := range disps {
		dispsOf[d.RunID] = append(dispsOf[d.RunID], d)
	}
	label := func(r audit.RunSummary) string { return fmt.Sprintf("%s r%s (run %d)", r.Repo, r.Revision, r.ID) }

	// 1. Every revision reviewed exactly once.
	once := &verdict{name: "every revision reviewed exactly once"}
	want := map[string]*commit{}
	for _, c := range commits {
		key := c.repo + "@" + c.rev
		want[key] = c
		rs := runsOf[key]
		switch {
		case len(rs) == 0:
			once.fail("%s r%s (%s): no run", c.repo, c.rev, c.id)
		case len(rs) > 1:
			var ids []string
			for _, r := range rs {
				ids = append(ids, strconv.FormatInt(r.ID, 10))
			}
			once.fail("%s r%s: %d runs (%s)", c.repo, c.rev, len(rs), strings.Join(ids, ", "))
		case rs[0].Status == audit.RunQueued || rs[0].Status == audit.RunRunning:
			once.fail("%s: still %s (attempts %d, %s)", label(rs[0]), rs[0].Status, rs[0].Attempts, rs[0].Error)
		case rs[0].Status == audit.RunFailed && c.model != "auth":
			once.fail("%s: failed though the model only failed transiently (model=%s): %s", label(rs[0]), c.model, rs[0].Error)
		}
	}
	for key, rs := range runsOf {
		if want[key] == nil {
			once.fail("%s: a run for a revision nobody committed (%d runs)", label(rs[0]), len(rs))
		}
	}
	once.fail2(commitErrs)
	once.detail = fmt.Sprintf("%d commits, %d runs", len(commits), len(runs))

	// 2. Every report delivered exactly once to every channel whose
	// policy publishes it, parts complete; what the stand-ins received
	// agrees with the audit trail.
	exactly := &verdict{name: "every report delivered exactly once, parts complete"}
	tolerated := s.crashWindowResends(ix)
	sent, parts := 0, 0
	for _, d := range disps {
		if d.Purpose == deliverypkg.PurposeResolution {
			continue // a follow-up, not the run's report: check 3 sees it settled
		}
		r := ix[d.Channel][d.RunID]
		who := fmt.Sprintf("%s → %s", label(runByID[d.RunID]), d.Channel)
		switch d.Status {
		case "sent":
			sent++
			if r == nil {
				exactly.fail("%s: audit says sent (%d attempts), the stand-in never got it", who, d.Attempts)
				continue
			}
			parts += len(r.parts)
			if got, ok := r.complete(d.Channel); !ok {
				exactly.fail("%s: %s", who, got)
			}
		case "suppressed":
			if r != nil {
				exactly.fail("%s: suppressed by policy, yet the stand-in got it", who)
			}
		}
	}
	for channel, byRun := range ix {
		for run := range byRun {
			found := false
			for _, d := range dispsOf[run] {
				found = found || (d.Channel == channel && d.Status == "sent")
			}
			if !found {
				exactly.fail("%s → %s: the stand-in got it, the audit has no sent dispatch for it", label(runByID[run]), channel)
			}
		}
	}
	exactly.fail2(odd)
	exactly.detail = fmt.Sprintf("%d sent dispatches, %d messages", sent, parts)
	if len(tolerated) > 0 {
		exactly.detail += fmt.Sprintf("; %d resent after a SIGKILL within %s of acceptance (tolerated: %s)",
			len(tolerated), crashWindow, strings.Join(tolerated, ", "))
	}

	// 3. No dispatch left pending or failed, except a platform's
	// permanent refusal.
	settled := &verdict{name: "no dispatch pending or failed (bar platform refusals)"}
	refused := 0
	for _, d := range disps {
		switch d.Status {
		case "sent", "suppressed":
		case "failed", "dead":
			if refusalRE.MatchString(d.LastError) {
				refused++
				continue
			}
			fallthrough
		default:
			settled.fail("dispatch %d %s → %s: %s after %d attempts: %s", d.ID, label(runByID[d.RunID]), d.Channel, d.Status, d.Attempts, d.LastError)
		}
	}
	settled.detail = fmt.Sprintf("%d dispatches, %d refused by a platform", len(disps), refused)

	// 4. No pre-pass finding lost to a model failure: a committed
	// credential reaches every channel (all publish critical findings).
	prepass := &verdict{name: "no pre-pass finding lost to a model failure"}
	creds := 0
	for _, c := range commits {
		if c.kind != "cred" {
			continue
		}
		creds++
		rs := runsOf[c.repo+"@"+c.rev]
		if len(rs) == 0 {
			prepass.fail("%s r%s (model=%s): the credential in %s: no run", c.repo, c.rev, c.model, c.credFile)
			continue
		}
		var missing []string
		for _, ch := range channelNames {
			found := false
			for _, r := range rs {
				if got := ix[ch][r.ID]; got != nil && strings.Contains(got.text.String(), c.credFile) {
					found = true
				}
			}
			if !found {
				missing = append(missing, ch)
			}
		}
		if len(missing) > 0 {
			prepass.fail("%s (model=%s, %s%s): the credential in %s never reached %s", label(rs[0]), c.model, rs[0].Status,
				suffix(rs[0].Error), c.credFile, strings.Join(missing, ", "))
		}
	}
	prepass.detail = fmt.Sprintf("%d commits with a credential", creds)

	// 5. No credential value in any message, log or row.
	leaks := &verdict{name: "no credential value in any message, log or row"}
	sources := map[string][]byte{
		"stand-in A request bodies": []byte(s.hostA.allBodies()),
		"stand-in B request bodies": []byte(s.hostB.allBodies()),
	}
	_ = os.WriteFile(filepath.Join(s.root, "standin-a.txt"), sources["stand-in A request bodies"], 0o600)
	_ = os.WriteFile(filepath.Join(s.root, "standin-b.txt"), sources["stand-in B request bodies"], 0o600)
	for _, f := range []string{s.logPath, filepath.Join(s.root, "reports.jsonl"), filepath.Join(s.data, "aicr.db"),
		filepath.Join(s.data, "aicr.db-wal")} {
		if b, err := os.ReadFile(f); err == nil {
			sources[filepath.Base(f)] = b
		}
	}
	for value, what := range s.secrets {
		for src, b := range sources {
			if i := bytes.Index(b, []byte(value)); i >= 0 {
				leaks.fail("%s (%s…) in %s at byte %d", what, value[:min(4, len(value))], src, i)
			}
		}
	}
	leaks.detail = fmt.Sprintf("%d values in %d places", len(s.secrets), len(sources))

	// 6. The daemon itself: no hang, no exit of its own, SIGTERM honoured.
	daemon := &verdict{name: "daemon: no stall, no crash, exits on SIGTERM"}
	s.watchMu.Lock()
	if s.watchdogFired != "" {
		daemon.fail("watchdog: %s", s.watchdogFired)
	}
	s.watchMu.Unlock()
	s.dmu.Lock()
	daemon.fail2(s.daemonProblems)
	events := slices.Clone(s.events)
	s.dmu.Unlock()
	daemon.detail = fmt.Sprintf("%d starts", s.starts)

	verdicts := []*verdict{once, exactly, settled, prepass, leaks, daemon}
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "invariant\tresult\tdetail\n")
	for _, v := range verdicts {
		res := "held"
		if len(v.bad) > 0 {
			res = fmt.Sprintf("FAILED (%d)", len(v.bad))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.name, res, v.detail)
	}
	m := s.measure(commits, runsOf, dispsOf)
	for _, kv := range m {
		fmt.Fprintf(tw, "%s\t%s\t\n", kv[0], kv[1])
	}
	tw.Flush()
	fmt.Fprintf(&out, "\nfaults:\n")
	for _, e := range events {
		fmt.Fprintf(&out, "  %s\n", e)
	}
	for _, v := range verdicts {
		if len(v.bad) == 0 {
			continue
		}
		fmt.Fprintf(&out, "\n%s: FAILED\n", v.name)
		for i, b := range v.bad {
			if i == 25 {
				fmt.Fprintf(&out, "  … and %d more\n", len(v.bad)-25)
				break
			}
			fmt.Fprintf(&out, "  - %s\n", b)
		}
	}
	fmt.Fprintf(&out, "\nkept: %s (daemon.log, data/aicr.db, reports.jsonl, standin-a.txt, standin-b.txt, goroutines-*.txt)\n", s.root)
	_ = os.WriteFile(filepath.Join(s.root, "soak-table.txt"), out.Bytes(), 0o644)
	t.Logf("soak result:\n%s", out.String())
	for _, v := range verdicts {
		if len(v.bad) > 0 {
			t.Errorf("invariant %q failed %d times (first: %s); table above, logs in %s", v.name, len(v.bad), v.bad[0], s.root)
		}
	}
}

// crashWindow is how soon after a platform accepted a message a SIGKILL
// may come and the message be sent again: the daemon cannot record what
// it has not heard back yet, and these platforms take no idempotency
// key. A part resent after a longer gap (a split report resent from its
// first part, issue 22 item 2b) is not in the window.
const crashWindow = time.Second

// crashWindowResends removes from ix the second copies of messages the
// stand-ins accepted less than crashWindow before a SIGKILL, and names
// them.
func (s *soak) crashWindowResends(ix index) []string {
	s.dmu.Lock()
	kills := slices.Clone(s.kills)
	s.dmu.Unlock()
	type key struct {
		channel string
		run     int64
		part    int
	}
	times := map[key][]time.Time{}
	for _, d := range append(s.hostA.deliveries(), s.hostB.deliveries()...) {
		k := key{d.channel, d.run, d.part}
		times[k] = append(times[k], d.at)
	}
	var out []string
	for k, ts := range times {
		r := ix[k.channel][k.run]
		if len(ts) < 2 || r == nil {
			continue
		}
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for i := 0; i+1 < len(ts) && r.parts[k.part] > 1; i++ {
			for _, kill := range kills {
				if !kill.Before(ts[i]) && kill.Sub(ts[i]) < crashWindow && ts[i+1].After(kill) {
					r.parts[k.part]--
					out = append(out, fmt.Sprintf("run %d → %s part %d", k.run, k.channel, k.part))
					break
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func (v *verdict) fail2(msgs []string) {
	for _, m := range msgs {
		v.fail("%s", m)
	}
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return ": " + s
}

// measure is the soak's numbers: throughput, commit → review and commit →
// first delivery latency, and the daemon's RSS at the end.
func (s *soak) measure(commits []*commit, runsOf map[string][]audit.RunSummary, dispsOf map[int64][]deliverypkg.Dispatch) [][2]string {
	var review, deliver []time.Duration
	var first, last time.Time
	final := 0
	for _, c := range commits {
		rs := runsOf[c.repo+"@"+c.rev]
		if len(rs) == 0 || rs[0].FinishedAt.IsZero() {
			continue
		}
		r := rs[0]
		final++
		review = append(review, r.FinishedAt.Sub(c.at))
		if first.IsZero() || c.at.Before(first) {
			first = c.at
		}
		if r.FinishedAt.After(last) {
			last = r.FinishedAt
		}
		var sentAt time.Time
		for _, d := range dispsOf[r.ID] {
			if d.Status == "sent" && (sentAt.IsZero() || d.SentAt.Before(sentAt)) {
				sentAt = d.SentAt
			}
		}
		if !sentAt.IsZero() {
			deliver = append(deliver, sentAt.Sub(c.at))
		}
	}
	perMin := "n/a"
	if span := last.Sub(first); span > 0 {
		perMin = fmt.Sprintf("%.1f (%d reviews in %s)", float64(final)/span.Minutes(), final, span.Round(time.Second))
	}
	return [][2]string{
		{"reviews/min", perMin},
		{"commit → review finished p50 / p95", pct(review)},
		{"commit → first delivery p50 / p95", pct(deliver)},
		{"daemon RSS at the end", s.lastRSS},
		{"messages received (slack bot, slack hook, webhook, feishu, dingtalk, wecom)", fmt.Sprintf("%d, %d, %d, %d, %d, %d",
			len(s.slack.Posts()), len(s.slackHook.Received()), len(s.hook.Received()), len(s.feishu.Received()), len(s.ding.Received()), len(s.wecom.Received()))},
		{"wall time (commits, total)", fmt.Sprintf("%s, %s", s.committingDone.Sub(s.startedAt).Round(time.Second), s.finishedAt.Sub(s.startedAt).Round(time.Second))},
	}
}

func pct(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n/a"
	}
	slices.Sort(ds)
	at := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	return fmt.Sprintf("%s / %s", at(0.5).Round(100*time.Millisecond), at(0.95).Round(100*time.Millisecond))
}
