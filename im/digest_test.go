package im_test

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/markdown"
	"github.com/aicr-dev/aicr/internal/imtest"
)

func digestFixture() im.Digest {
	return im.Digest{Name: "weekly", Period: "2026-11-25 09:00 – 2026-12-02 09:00 UTC", Repos: []string{"main"},
		Open: 4, OpenByPath: []im.DigestPath{
			{Path: "src/![i](http://evil.example/p.png)`@all`.c", Open: 3, OldestDays: 12},
			{Path: "docs/[x](http://evil.example/l) <!channel> @here www.evil.example/w.md", Open: 1, OldestDays: 0},
		},
		New: 3, Resolved: 2, Dismissed: 1, Reported: 4, FalsePositives: 1, FalsePositiveRate: 0.25, Reviews: 10, CostUSD: 1.234}
}

func TestBuildDigestWordsTheFigures(t *testing.T) {
	r := im.BuildDigest(digestFixture(), im.LangEnglish)
	if r.Kind != im.KindDigest || r.Digest == nil || r.Digest.New != 3 || len(r.Problems) != 0 {
		t.Fatalf("report = %+v", r)
	}
	if r.Title != "aicr digest: weekly (main), 2026-11-25 09:00 – 2026-12-02 09:00 UTC" {
		t.Errorf("title %q", r.Title)
	}
	if r.Verdict != "4 open findings; new 3, resolved 2, dismissed 1." {
		t.Errorf("verdict %q", r.Verdict)
	}
	text := im.PlainText(r)
	for _, want := range []string{"## " + im.TextDigestOpen, ": 3 open, oldest 12 days", ": 1 open, oldest less than a day",
		"- False-positive rate: 25% (1 of 4 reported)", "- Reviews: 10, $1.23"} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	empty := im.BuildDigest(im.Digest{Name: "d", Period: "p", FalsePositiveRate: -1}, im.LangEnglish)
	text = im.PlainText(empty)
	for _, want := range []string{"every repo", "no open findings; new 0", im.TextDigestNoneOpen, "False-positive rate: no findings reported", "Reviews: 0, cost not priced"} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
}

func TestBuildDigestListsABoundedNumberOfPaths(t *testing.T) {
	d := im.Digest{Name: "d", Period: "p"}
	for i := range 20 {
		d.OpenByPath = append(d.OpenByPath, im.DigestPath{Path: "p" + strings.Repeat("x", i), Open: 2, OldestDays: 1})
	}
	d.MorePaths = 0
	text := im.PlainText(im.BuildDigest(d, im.LangEnglish))
	if strings.Count(text, ": 2 open,") != 15 || !strings.Contains(text, "- and 5 more paths (10 open)") {
		t.Fatalf("paths:\n%s", text)
	}
	d.MorePaths = 7
	if text := im.PlainText(im.BuildDigest(d, im.LangEnglish)); !strings.Contains(text, "- and 12 more paths\n") {
		t.Fatalf("paths beyond the stored ones:\n%s", text)
	}
}

// Paths are committer text: in every dialect they stay inert.
func TestDigestPathsAreInertInEveryDialect(t *testing.T) {
	r := im.BuildDigest(digestFixture(), im.LangEnglish)
	for _, d := range []markdown.Dialect{markdown.DingTalk, markdown.WeCom, markdown.Feishu, markdown.Slack} {
		var all []string
		for _, b := range markdown.Blocks(r, d) {
			all = append(all, b.Text)
		}
		out := strings.Join(all, "\n\n")
		if !strings.Contains(out, "evil") || !strings.Contains(out, "channel") {
			t.Fatalf("%s: the path is not shown at all:\n%s", d, out)
		}
		if d == markdown.Slack {
			imtest.AssertInertMrkdwn(t, d.String(), out)
		} else {
			imtest.AssertInertMarkdown(t, d.String(), out)
		}
	}
}
