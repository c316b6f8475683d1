package markdown_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/markdown"
	"github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/internal/imtest"
)

// hostile is committer and agent text with every platform's link, image
// and mention syntax.
const hostile = "[click me](http://evil.example/x) ![i](http://evil.example/t.png) see http://evil.example/bare www.evil.example @all @所有人 @here <@U123> <!channel> <at id=all></at>"

// The findings parts (repeat lines, resolutions, the marks of an edited
// report) carry committer and agent text too: inert in every dialect.
func TestFindingsPartsKeepHostileTextInert(t *testing.T) {
	m := imtest.HostileMessage()
	m.Result.Problems = append(m.Result.Problems, m.Result.Problems[0])
	m.Result.Problems[1].Message = hostile
	m.Result.Problems[1].File = "src/" + hostile + ".c"
	m.Findings = &im.Findings{Repeat: im.RepeatMention, Tracked: []im.Tracked{
		{FindingID: 1, Class: im.ClassNew, Page: "https://aicr.example.com/f/1/view?sig=a"},
		{FindingID: 2, Class: im.ClassRepeat, Since: "r1 " + hostile, Commits: 2, Page: "https://aicr.example.com/f/2/view?sig=a"},
	}}
	earlier := im.BuildReport(m)
	if len(earlier.Repeats) != 1 {
		t.Fatalf("want one repeat line, got %+v", earlier.Repeats)
	}
	res := im.BuildResolution(im.Resolution{RunID: 9, Change: m.Change, Followups: []im.Followup{{
		RunID: 7, Revision: "r42", Title: "aicr review: " + hostile, MessageID: "C0TEST001:1.2",
		Updated: im.MarkResolved(earlier, map[int64]string{1: im.ResolvedNote("r43", hostile)}),
		Resolved: []im.Resolved{{FindingID: 1, File: hostile, Line: 1, Severity: "high", Category: hostile,
			Message: hostile, Revision: "r43", Author: hostile, Page: "https://aicr.example.com/f/1/view?sig=a"}},
	}}})
	for _, rep := range []im.Report{earlier, *res.Followups[0].Updated, res} {
		for _, d := range []markdown.Dialect{markdown.DingTalk, markdown.WeCom, markdown.Feishu} {
			var parts []string
			for _, b := range markdown.Blocks(rep, d) {
				parts = append(parts, b.Text)
			}
			imtest.AssertInertMarkdown(t, d.String()+" "+string(rep.Kind), strings.Join(parts, "\n\n"))
		}
		posts := []slack.Post{slack.RenderSummary(rep, "", true), slack.RenderSummary(rep, "", false)}
		posts = append(posts, slack.RenderReplies(rep, 10)...)
		if rep.Kind == im.KindResolution {
			posts = append(posts, slack.RenderResolution(rep, rep.Followups), slack.RenderResolutionReply(rep, rep.Followups[0]))
		}
		for _, p := range posts {
			b, _ := json.Marshal(p.Blocks)
			var texts []string
			collectTexts(b, &texts)
			imtest.AssertInertMrkdwn(t, "slack "+string(rep.Kind), strings.Join(append(texts, p.Text), "\n"))
		}
	}
}

// collectTexts gathers every mrkdwn text of a Block Kit JSON document
// (plain_text, the header's and the buttons', is never parsed by Slack).
func collectTexts(b []byte, out *[]string) {
	var v any
	_ = json.Unmarshal(b, &v)
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "text" && v["type"] == "mrkdwn" {
					*out = append(*out, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
}
