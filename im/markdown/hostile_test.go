package markdown_test

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/imtest"
	"github.com/aicr-dev/aicr/im/markdown"
)

// Committer text is plain text in every dialect: the link and image
// syntax, bare URLs and mentions a committer types in a commit message,
// a file name or an author never become markup (issue 22 C9).
func TestBlocksKeepCommitterTextInert(t *testing.T) {
	rep := im.BuildReport(imtest.HostileMessage())
	for _, d := range []markdown.Dialect{markdown.DingTalk, markdown.WeCom, markdown.Feishu, markdown.Slack} {
		var parts []string
		for _, b := range markdown.Blocks(rep, d) {
			parts = append(parts, b.Text)
		}
		text := strings.Join(parts, "\n\n")
		if d == markdown.Slack {
			imtest.AssertInertMrkdwn(t, d.String(), text)
		} else {
			imtest.AssertInertMarkdown(t, d.String(), text)
		}
		// The reader still sees what the committer wrote.
		if got := strings.ReplaceAll(text, "\u200b", ""); !strings.Contains(got, "[click me](http://evil.example/x)") {
			t.Errorf("%s: the description's text is lost:\n%s", d, text)
		}
	}
}

func TestEscapeDefusesLinksImagesAndMentions(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[x](http://evil)", "[x]\u200b(http:\u200b//evil)"},
		{"![i](https://evil/t.png)", "![i]\u200b(https:\u200b//evil/t.png)"},
		{"[x][1]", "[x]\u200b[1]\u200b"},
		{"see www.evil.example", "see www\u200b.evil.example"},
		{"@all @所有人", "@\u200ball @\u200b所有人"},
		{"plain text, no markup", "plain text, no markup"},
	} {
		for _, d := range []markdown.Dialect{markdown.DingTalk, markdown.WeCom, markdown.Feishu, markdown.Slack} {
			if got := markdown.Escape(tc.in, d); got != tc.want {
				t.Errorf("Escape(%q, %s) = %q, want %q", tc.in, d, got, tc.want)
			}
		}
	}
}
