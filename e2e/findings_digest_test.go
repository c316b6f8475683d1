package e2e

// The digest of the findings scenario, and what nothing may leak.

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/imtest"
)

// digestFigures are one digest's figures.
type digestFigures struct {
	Name, Period                            string
	Open, New, Resolved, Dismissed, Reviews int
	FalsePositives                          int
	// OpenByPath is the open findings per path.
	OpenByPath map[string]int
}

var (
	digestCountsRE = regexp.MustCompile(`new (\d+), resolved (\d+), dismissed (\d+)`)
	// A path line names its repo ("main: src/a.go") unless the digest
	// covers one repo only.
	digestOpenRE   = regexp.MustCompile("(?m)^- `(?:[^`:]+: )?([^`]+)`: (\\d+) open")
	digestTitleRE  = regexp.MustCompile(`^aicr digest: (\S+) .*?, (.*)\n`)
	digestReviewRE = regexp.MustCompile(`Reviews: (\d+)`)
)

// digests are the [[digest]] records of the digest-only channel: from
// the record's structured digest (as the webhook and file channels carry
// it for scripts), else read from its text.
func (f *fixture) digests(t *testing.T) []digestFigures {
	t.Helper()
	var out []digestFigures
	for _, m := range readJSONLines(t, f.digestPath) {
		if str(m.Doc["report_kind"]) != "digest" {
			t.Errorf("the digest-only channel got a record that is no digest:\n%s", m.Text)
			continue
		}
		d, ok := m.Doc["digest"].(map[string]any)
		if !ok {
			f.noStructuredDigest(t, m)
			out = append(out, digestFromText(str(m.Doc["text"])))
			continue
		}
		fig := digestFigures{Name: str(d["name"]), Period: str(d["period"]), Open: int(num(d["open"])), New: int(num(d["new"])),
			Resolved: int(num(d["resolved"])), Dismissed: int(num(d["dismissed"])), Reviews: int(num(d["reviews"])),
			FalsePositives: int(num(d["false_positives"])), OpenByPath: map[string]int{}}
		paths, _ := d["open_by_path"].([]any)
		for _, p := range paths {
			pm, _ := p.(map[string]any)
			fig.OpenByPath[str(pm["path"])] = int(num(pm["open"]))
		}
		out = append(out, fig)
	}
	return out
}

// noStructuredDigest fails once: the file channel's record of a digest
// must carry its figures as data, not only as words.
func (f *fixture) noStructuredDigest(t *testing.T, m chatMsg) {
	t.Helper()
	if !f.toldNoDigest {
		f.toldNoDigest = true
		t.Errorf("the file channel's digest record has no structured \"digest\" (im.Report.Digest): its figures are only words:\n%s", m.Text)
	}
}

func digestFromText(text string) digestFigures {
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	fig := digestFigures{OpenByPath: map[string]int{}}
	if m := digestTitleRE.FindStringSubmatch(text); m != nil {
		fig.Name, fig.Period = m[1], m[2]
	}
	if m := digestCountsRE.FindStringSubmatch(text); m != nil {
		fig.New, fig.Resolved, fig.Dismissed = atoi(m[1]), atoi(m[2]), atoi(m[3])
	}
	if m := digestReviewRE.FindStringSubmatch(text); m != nil {
		fig.Reviews = atoi(m[1])
	}
	for _, m := range digestOpenRE.FindAllStringSubmatch(text, -1) {
		fig.OpenByPath[m[1]] = atoi(m[2])
		fig.Open += atoi(m[2])
	}
	return fig
}

// digestSum adds one figure over every digest sent so far.
func (f *fixture) digestSum(t *testing.T, figure func(digestFigures) int) int {
	t.Helper()
	n := 0
	for _, d := range f.digests(t) {
		n += figure(d)
	}
	return n
}

// stepDigest: the digest arrives on its schedule (every minute), once
// per period, with the figures: what is open by path (now C, reopened,
// and D), what was new, resolved and dismissed, the reviews. The periods
// follow each other with no gap, the SIGKILLs notwithstanding (a period
// that ended while the daemon was down is sent at its start), so the
// figures add up over them.
func (f *fixture) stepDigest(t *testing.T, sc *scenario) {
	waitFor(t, f.env, "a digest with the open findings of now", func() bool {
		ds := f.digests(t)
		if len(ds) == 0 {
			return false
		}
		last := ds[len(ds)-1]
		return len(last.OpenByPath) == 2 && last.OpenByPath[f.path(fxSeed)] == 1 && last.OpenByPath[f.path(fxDeploy)] == 1 && last.Open == 2
	})
	periods := map[string]bool{}
	for _, d := range f.digests(t) {
		if periods[d.Period] {
			t.Errorf("the digest of period %q was sent twice", d.Period)
		}
		periods[d.Period] = true
		if d.Name != "team" {
			t.Errorf("digest name %q, want team", d.Name)
		}
	}
	if n := f.digestSum(t, func(d digestFigures) int { return d.New }); n != 4 {
		t.Errorf("the digests count %d new findings, want A, B, C and D", n)
	}
	if n := f.digestSum(t, func(d digestFigures) int { return d.Resolved }); n != 1 {
		t.Errorf("the digests count %d resolutions, want A's", n)
	}
	if n := f.digestSum(t, func(d digestFigures) int { return d.Dismissed }); n < 1 || n > 2 {
		t.Errorf("the digests count %d dismissals, want B's (and C's, reopened since)", n)
	}
	if n := f.digestSum(t, func(d digestFigures) int { return d.Reviews }); n != len(sc.revs) {
		t.Errorf("the digests count %d reviews, want %d", n, len(sc.revs))
	}
}

// checkNoLeak: no channel, file channel or daemon log holds a
// credential: the stand-ins' tokens, nor the planted secrets.
func (f *fixture) checkNoLeak(t *testing.T) {
	t.Helper()
	secrets := append([]string{fxSlackBotToken, fxSlackAppToken, fxFeishuToken, fxFeishuSecret, fxDingToken, fxDingSecret,
		fxWeComKey, fxWebhookSecret, fxWebToken, strings.TrimPrefix(fxSlackHookPath, "/services/")}, fxSecrets...)
	for ch, msgs := range f.inboxes(t) {
		for _, m := range msgs {
			imtest.AssertNoLeak(t, ch, m.Text, secrets...)
		}
	}
	for _, u := range f.slack.Updates() {
		imtest.AssertNoLeak(t, "chat.update", u.Text+u.Blocks, secrets...)
	}
	for _, e := range f.socket.Ephemerals() {
		imtest.AssertNoLeak(t, "chat.postEphemeral", e.Text+e.Blocks, secrets...)
	}
	logs, _ := filepath.Glob(filepath.Join(f.dir, "daemon-*.log"))
	for _, l := range logs {
		raw, _ := os.ReadFile(l)
		imtest.AssertNoLeak(t, "daemon log", string(raw), secrets...)
	}
}
