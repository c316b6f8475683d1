package slack

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/markdown"
	"github.com/aicr-dev/aicr/review"
)

// Block Kit limits, in characters as Slack counts them.
const (
	MaxBlocks      = 50
	MaxHeaderChars = 150
	MaxSectionText = 3000
	// MaxTextChars is chat.postMessage's limit on the fallback text;
	// longer is msg_too_long.
	MaxTextChars = 40000
)

// DefaultProblemsPerReply batches problems into thread replies so a long
// review is a few replies, not one per problem.
const DefaultProblemsPerReply = 10

// Post is one chat.postMessage: blocks plus the plain fallback text that
// notifications and screen readers use.
type Post struct {
	Text   string        `json:"text"`
	Blocks []slack.Block `json:"blocks"`
}

// Escape makes untrusted text literal in mrkdwn: Slack reads &, < and >
// as the start of entities, links and mentions. Our own markup (links,
// mentions, bold) is added around escaped text, never escaped itself.
func Escape(s string) string {
	return markdown.Escape(s, markdown.Slack)
}

// Literal is Escape for committer and aicr text that must show as typed:
// its own *, _, ~ and ` are not mrkdwn (markdown.Literal).
func Literal(s string) string {
	return markdown.Literal(s, markdown.Slack)
}

// counts is the verdict's counts with each severity's icon, as every
// platform shows them (markdown.Severity).
func counts(rep im.Report) string {
	var parts []string
	for _, c := range rep.Language.Counts(rep.Problems) {
		parts = append(parts, markdown.Severity(c.Severity, Literal(c.Text), markdown.Slack))
	}
	return strings.Join(parts, rep.Language.ListSep())
}

// RenderSummary is the top-level message: a header, the change line
// (description, counts, author mention, link), the agent's summaries as
// mrkdwn sections and the skip reason. When inlineProblems is set (the
// incoming-webhook mode has no threads) problems follow, as many as the
// block limit allows, with the number left out said explicitly.
func RenderSummary(rep im.Report, mention string, inlineProblems bool) Post {
	title, problems := rep.Title, rep.Problems

	var meta []string
	if rep.Description != "" {
		meta = append(meta, "_"+Literal(rep.Description)+"_")
	}
	verdict := "*" + Literal(rep.Verdict) + "*"
	if len(problems) > 0 {
		verdict = "*" + Literal(rep.Words.Label(rep.Words.Problems)) + "* " + counts(rep)
	}
	meta = append(meta, verdict)
	if mention != "" {
		meta = append(meta, "*"+Literal(rep.Words.Label(rep.Words.Author))+"* "+mention)
	}
	if link := linkTo(rep.ChangeURL, rep.Words.ViewChange); link != "" {
		meta = append(meta, link)
	}

	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, truncateChars(im.Sanitize(title), MaxHeaderChars), true, false)),
		section(strings.Join(meta, "\n")),
	}
	var tail []slack.Block
	if rep.Notice != "" {
		tail = append(tail, section(Literal(rep.Notice)))
	}
	if note := rep.SkipNote(); note != "" {
		tail = append(tail, section(Literal(note)))
	}
	if line := rep.LeftOutLine(); line != "" {
		tail = append(tail, section(Literal(line)))
	}
	if rep.Footer != "" {
		tail = append(tail, section(markdown.FooterText(rep, markdown.Slack)))
	}
	budget := MaxBlocks - len(blocks) - len(tail)
	var body []slack.Block
	for _, s := range rep.Summaries {
		t := s.Title
		md := MarkdownToMrkdwn(s.Markdown)
		if t == "" && md == "" {
			continue
		}
		if t != "" {
			md = strings.TrimSpace("*" + Literal(t) + "*\n" + md)
		}
		for _, chunk := range SplitMrkdwn(md, MaxSectionText) {
			body = append(body, section(chunk))
		}
	}
	for _, text := range []string{resolvedText(rep), repeatsText(rep)} {
		for _, chunk := range SplitMrkdwn(text, MaxSectionText) {
			body = append(body, section(chunk))
		}
	}
	if inlineProblems && len(problems) > 0 {
		body = append(body, slack.NewDividerBlock())
		for i := range problems {
			// An incoming webhook has no app to receive a button's
			// click: the finding's actions are links.
			body = append(body, problemBlocks(rep, i, false)...)
		}
	}
	if len(body) > budget {
		left := len(body) - (budget - 1)
		omittedProblems := 0
		if inlineProblems {
			// Problems come last, so they are the ones cut.
			omittedProblems = min(left, len(problems))
		}
		body = body[:budget-1]
		body = append(body, section("_"+Escape(rep.OmittedNote(omittedProblems))+"_"))
	}
	blocks = append(blocks, body...)
	blocks = append(blocks, tail...)

	fallback := title + " — " + rep.Verdict
	return Post{Text: Escape(truncateChars(fallback, MaxTextChars)), Blocks: blocks}
}

// RenderReplies batches rep's problems into thread replies of at most
// perReply problems each, labelled with their range and "(i/n)".
func RenderReplies(rep im.Report, perReply int) []Post {
	if perReply <= 0 {
		perReply = DefaultProblemsPerReply
	}
	perReply = min(perReply, MaxBlocks-1)
	if len(rep.Entries) > 0 {
		perReply = min(perReply, (MaxBlocks-1)/blocksPerProblem)
	}
	problems := rep.Problems
	n := (len(problems) + perReply - 1) / perReply
	var posts []Post
	for i := 0; i < n; i++ {
		batch := problems[i*perReply : min((i+1)*perReply, len(problems))]
		from, to := i*perReply+1, i*perReply+len(batch)
		label := Literal(strings.TrimSpace(rep.ProblemRange(from, to) + " " + im.PartLabel(i+1, n)))
		blocks := []slack.Block{slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, label, false, false))}
		for j := range batch {
			blocks = append(blocks, problemBlocks(rep, i*perReply+j, true)...)
		}
		posts = append(posts, Post{Text: label, Blocks: blocks})
	}
	return posts
}

// ProblemText is one problem as a mrkdwn section, laid out as on every
// platform (markdown.ProblemText in the Slack dialect): severity icon and
// tag, location, category, then the agent's message and suggestion as
// mrkdwn, within the section limit.
func ProblemText(p review.Problem, w im.Words) string {
	return truncateChars(markdown.ProblemText(p, w, markdown.Slack), MaxSectionText)
}

func section(mrkdwn string) slack.Block {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, truncateChars(mrkdwn, MaxSectionText), false, false), nil, nil)
}

// linkTo renders <url|label> for http(s) URLs only: anything else, or a
// URL that could break out of the link syntax, is left out.
func linkTo(raw, label string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || strings.ContainsAny(raw, "<>| \n") {
		return ""
	}
	return "<" + markdown.Entities(raw, markdown.Slack) + "|" + Escape(label) + ">"
}

// truncateChars cuts s to at most n characters, marking the cut with "…".
func truncateChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// SplitMrkdwn cuts text into chunks of at most limit characters at line
// boundaries, preferring blank lines; a cut inside a code fence closes the
// fence and reopens it in the next chunk so no chunk is left unbalanced.
func SplitMrkdwn(s string, limit int) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if utf8.RuneCountInString(s) <= limit {
		return []string{s}
	}
	const fence = "```"
	var chunks []string
	var cur strings.Builder
	curLen, inFence := 0, false
	flush := func() {
		out := strings.TrimRight(cur.String(), "\n")
		if inFence {
			out += "\n" + fence
		}
		if strings.TrimSpace(out) != "" {
			chunks = append(chunks, out)
		}
		cur.Reset()
		curLen = 0
		if inFence {
			cur.WriteString(fence + "\n")
			curLen = 4
		}
	}
	for _, line := range strings.Split(s, "\n") {
		// Room for a closing fence is kept in every chunk.
		for utf8.RuneCountInString(line) > limit-2*len(fence)-4 {
			r := []rune(line)
			head := string(r[:limit-2*len(fence)-4])
			line = string(r[len([]rune(head)):])
			if curLen > 0 {
				flush()
			}
			cur.WriteString(head + "\n")
			curLen += utf8.RuneCountInString(head) + 1
			flush()
		}
		n := utf8.RuneCountInString(line) + 1
		if curLen+n > limit-len(fence)-1 {
			flush()
		}
		cur.WriteString(line + "\n")
		curLen += n
		if strings.HasPrefix(strings.TrimSpace(line), fence) {
			inFence = !inFence
		}
	}
	inFence = false
	flush()
	return chunks
}

// MarkdownToMrkdwn converts the agent's Markdown to Slack's mrkdwn with
// the one Markdown walker (package markdown, Slack dialect): **bold**
// becomes *bold*, *em* _em_, headings bold lines, lists bullets, links
// <url|text>; all text is escaped and raw HTML is shown as text.
func MarkdownToMrkdwn(src string) string {
	return markdown.Convert(src, markdown.Slack)
}
