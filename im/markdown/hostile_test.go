package markdown_test

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/markdown"
	"github.com/aicr-dev/aicr/internal/imtest"
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

// An agent's link whose label reads as an address shows where it really
// goes when that is another host (issue 22 C10); an honest label stays.
func TestLinkLabelThatLooksLikeAURLShowsTheDestination(t *testing.T) {
	for _, tc := range []struct {
		src       string
		misleads  bool
		wantLabel string
	}{
		{"[https://bank.example/login](https://evil.example/x)", true, ""},
		{"[www.bank.example](http://evil.example/x)", true, ""},
		{"[bank.example/login](http://evil.example/x)", true, ""},
		{"[https://docs.example/a](https://docs.example/b)", false, "docs.example/a"},
		{"[the docs](https://evil.example/x)", false, "the docs"},
	} {
		for _, d := range []markdown.Dialect{markdown.DingTalk, markdown.WeCom, markdown.Feishu, markdown.Slack} {
			got := markdown.Convert(tc.src, d)
			plain := strings.ReplaceAll(got, "\u200b", "")
			if tc.misleads {
				if strings.Contains(plain, "bank.example") || !strings.Contains(plain, "evil.example/x") {
					t.Errorf("%s: %s rendered %q, want the destination shown, not the label", d, tc.src, got)
				}
				continue
			}
			if !strings.Contains(plain, tc.wantLabel) {
				t.Errorf("%s: %s rendered %q, want label %q kept", d, tc.src, got, tc.wantLabel)
			}
		}
	}
}
