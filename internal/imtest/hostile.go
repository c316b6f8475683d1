package imtest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// Evil is the host every hostile link and image in HostileMessage points
// at; no rendered payload may link to it or load from it.
const Evil = "evil.example"

// HostileMessage is a review whose committer text (commit message, file
// names, author) carries Markdown link and image syntax, bare URLs and
// mention syntax of every platform, the way a committer can type them.
func HostileMessage() im.Message {
	m := Message()
	m.Change = &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "43",
		Author:      "mallory ![a](http://evil.example/author.png)",
		Description: "fix [click me](http://evil.example/x) ![i](http://evil.example/t.png) [ref][1] see http://evil.example/bare www.evil.example @all @所有人 @here <@U123> <!channel> <at id=all></at>\n\n[1]: http://evil.example/ref",
		Files:       []vcs.FileChange{{Path: "docs/[x](http://evil.example/left).md", Skipped: vcs.SkipExcluded}}}
	m.Result = review.Result{Problems: []review.Problem{{
		File: "src/![i](http://evil.example/file.png).c", Line: 1, Severity: review.SeverityHigh,
		Category: "[cat](http://evil.example/cat)", Message: "plain message",
	}}}
	return m
}

var inertParser = goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()

// mentionRE finds mention words a platform acts on in plain text; the
// zero-width space aicr puts after '@' keeps them from matching.
var mentionRE = regexp.MustCompile(`(?i)@(all|here|channel|everyone|所有人)`)

// AssertInertMarkdown parses md as the Markdown platforms (DingTalk,
// WeCom, Feishu cards) do, GFM with bare-URL linkification, and fails
// on any link or image to Evil, on tag syntax and on mention words.
func AssertInertMarkdown(t testing.TB, what, md string) {
	t.Helper()
	src := []byte(md)
	doc := inertParser.Parse(text.NewReader(src))
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		var dest string
		switch n := n.(type) {
		case *ast.Link:
			dest = string(n.Destination)
		case *ast.Image:
			dest = "image " + string(n.Destination)
		case *ast.AutoLink:
			dest = string(n.URL(src))
		}
		if strings.Contains(dest, Evil) {
			t.Errorf("%s: committer text became a link or image to %s:\n%s", what, dest, md)
		}
		return ast.WalkContinue, nil
	})
	for _, tag := range []string{"<at ", "<@U123>", "<!channel>"} {
		if strings.Contains(md, tag) {
			t.Errorf("%s: tag %q passed through:\n%s", what, tag, md)
		}
	}
	if m := mentionRE.FindString(md); m != "" {
		t.Errorf("%s: mention %q passed through:\n%s", what, m, md)
	}
}

var codeSpanRE = regexp.MustCompile("`[^`\n]*`")

// AssertInertMrkdwn is AssertInertMarkdown for Slack mrkdwn: links are
// <url|label>, and Slack links bare URLs and parses @here itself unless
// the text is broken up (inside code spans it does neither).
func AssertInertMrkdwn(t testing.TB, what, mrkdwn string) {
	t.Helper()
	mrkdwn = codeSpanRE.ReplaceAllString(mrkdwn, "`code`")
	for _, bad := range []string{"<http://" + Evil, "http://" + Evil, "www." + Evil, "<@U123>", "<!channel>"} {
		if strings.Contains(mrkdwn, bad) {
			t.Errorf("%s: %q passed through:\n%s", what, bad, mrkdwn)
		}
	}
	if m := mentionRE.FindString(mrkdwn); m != "" {
		t.Errorf("%s: mention %q passed through:\n%s", what, m, mrkdwn)
	}
}
