package e2e

// The digest of the findings scenario, and what nothing may leak.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/imtest"
)

// digests are the [[digest]] records of the digest-only channel.
func (f *fixture) digestRecords(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range readJSONLines(t, f.digests) {
		d, _ := m.Doc["digest"].(map[string]any)
		if d == nil {
			t.Errorf("the digest-only channel got a record that is no digest:\n%s", m.Text)
			continue
		}
		out = append(out, d)
	}
	return out
}

// digestSum adds a figure over every digest sent so far.
func (f *fixture) digestSum(t *testing.T, figure string) int {
	t.Helper()
	n := 0
	for _, d := range f.digestRecords(t) {
		n += int(num(d[figure]))
	}
	return n
}

// stepDigest: the digest arrives on its schedule, once per period, with
// the figures: what is open by path (now C, reopened, and D), what was
// resolved and dismissed, the reviews.
func (f *fixture) stepDigest(t *testing.T, sc *scenario) {
	open := map[string]bool{f.path(fxSeed): true, f.path(fxDeploy): true}
	var last map[string]any
	waitFor(t, f.env, "a digest with the open findings of now", func() bool {
		ds := f.digestRecords(t)
		if len(ds) == 0 {
			return false
		}
		last = ds[len(ds)-1]
		paths := map[string]bool{}
		for _, p := range last["open_by_path"].([]any) {
			pm, _ := p.(map[string]any)
			paths[str(pm["path"])] = num(pm["open"]) == 1
		}
		return len(paths) == len(open) && paths[f.path(fxSeed)] && paths[f.path(fxDeploy)] && num(last["open"]) == 2
	})
	periods := map[string]bool{}
	for _, d := range f.digestRecords(t) {
		p := str(d["period"])
		if periods[p] {
			t.Errorf("the digest of period %q was sent twice", p)
		}
		periods[p] = true
		if str(d["name"]) != "team" {
			t.Errorf("digest name %q, want team", d["name"])
		}
		if r := d["false_positive_rate"].(float64); r > 1 {
			t.Errorf("false-positive rate %v is not a rate", r)
		}
	}
	if n := f.digestSum(t, "resolved"); n != 1 {
		t.Errorf("the digests count %d resolutions, want A's", n)
	}
	if n := f.digestSum(t, "dismissed"); n != 2 {
		t.Errorf("the digests count %d dismissals, want B's and C's", n)
	}
	if n := f.digestSum(t, "reviews"); n < 1 {
		t.Errorf("the digests count %d reviews", n)
	}
	if n := f.digestSum(t, "false_positives"); n > 1 {
		t.Errorf("the digests count %d false positives, want at most B", n)
	}
}

// checkNoLeak: no channel, file channel, daemon log or web page holds a
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
	logs, _ := filepath.Glob(filepath.Join(f.dir, "daemon-*.log"))
	for _, l := range logs {
		raw, _ := os.ReadFile(l)
		imtest.AssertNoLeak(t, "daemon log", string(raw), secrets...)
	}
}
