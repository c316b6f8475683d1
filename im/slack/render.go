package slack

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/aicr-dev/aicr/im"
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
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

var severityEmoji = map[review.Severity]string{
	review.SeverityCritical: ":red_circle:",
	review.SeverityHigh:     ":large_orange_circle:",
	review.SeverityMedium:   ":large_yellow_circle:",
	review.SeverityLow:      ":large_blue_circle:",
	review.SeverityInfo:     ":white_circle:",
}

// RenderSummary is the top-level message: a header, the change line
// (description, counts, author mention, link), the agent's summaries as
// mrkdwn sections and the skip reason. When inlineProblems is set (the
// incoming-webhook mode has no threads) problems follow, as many as the
// block limit allows, with the number left out said explicitly.
func RenderSummary(msg im.Message, mention string, inlineProblems bool) Post {
	rep := im.BuildReport(msg)
	title, problems := rep.Title, rep.Problems

	var meta []string
	if rep.Description != "" {
		meta = append(meta, "_"+Escape(rep.Description)+"_")
	}
	verdict := Escape(rep.Verdict)
	if len(problems) > 0 {
		verdict = "*" + im.TextProblems + ":* " + Escape(rep.Counts)
	}
	meta = append(meta, verdict)
	if mention != "" {
		meta = append(meta, "*Author:* "+mention)
	}
	if link := linkTo(rep.ChangeURL, im.TextViewChange); link != "" {
		meta = append(meta, link)
	}

	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, truncateChars(im.Sanitize(title), MaxHeaderChars), true, false)),
		section(strings.Join(meta, "\n")),
	}
	var tail []slack.Block
	if note := rep.SkipNote(); note != "" {
		tail = append(tail, section(Escape(note)))
	}
	if line := rep.LeftOutLine(); line != "" {
		tail = append(tail, section(Escape(line)))
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
			md = strings.TrimSpace("*" + Escape(t) + "*\n" + md)
		}
		for _, chunk := range SplitMrkdwn(md, MaxSectionText) {
			body = append(body, section(chunk))
		}
	}
	if inlineProblems && len(problems) > 0 {
		body = append(body, slack.NewDividerBlock())
		for _, p := range problems {
			body = append(body, section(ProblemText(p)))
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
		note := fmt.Sprintf("_%d more blocks left out to fit Slack's limit; see `aicr audit show %d`._", left, msg.RunID)
		if omittedProblems > 0 {
			note = fmt.Sprintf("_%d more problems not shown (Slack allows %d blocks); see `aicr audit show %d`._", omittedProblems, MaxBlocks, msg.RunID)
		}
		body = append(body, section(note))
	}
	blocks = append(blocks, body...)
	blocks = append(blocks, tail...)

	fallback := title + " — " + rep.Verdict
	return Post{Text: Escape(truncateChars(fallback, MaxTextChars)), Blocks: blocks}
}

// RenderReplies batches problems into thread replies of at most perReply
// problems each, labelled "(i/n)".
func RenderReplies(problems []review.Problem, perReply int) []Post {
	if perReply <= 0 {
		perReply = DefaultProblemsPerReply
	}
	perReply = min(perReply, MaxBlocks-1)
	problems = slices.Clone(problems)
	im.SortProblems(problems)
	n := (len(problems) + perReply - 1) / perReply
	var posts []Post
	for i := 0; i < n; i++ {
		batch := problems[i*perReply : min((i+1)*perReply, len(problems))]
		from, to := i*perReply+1, i*perReply+len(batch)
		label := fmt.Sprintf("Problems %d–%d of %d (%d/%d)", from, to, len(problems), i+1, n)
		blocks := []slack.Block{slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, label, false, false))}
		for _, p := range batch {
			blocks = append(blocks, section(ProblemText(p)))
		}
		posts = append(posts, Post{Text: label, Blocks: blocks})
	}
	return posts
}

// ProblemText is one problem as a mrkdwn section: severity, location,
// category, message and suggestion, all escaped, within the section limit.
func ProblemText(p review.Problem) string {
	var b strings.Builder
	sev := review.Severity(im.Sanitize(string(p.Severity)))
	if e := severityEmoji[sev]; e != "" {
		b.WriteString(e + " ")
	}
	fmt.Fprintf(&b, "*%s* `%s`", Escape(string(sev)), Escape(strings.ReplaceAll(im.ProblemLocation(p), "`", "'")))
	if c := strings.TrimSpace(im.Sanitize(p.Category)); c != "" {
		b.WriteString(" _" + Escape(c) + "_")
	}
	b.WriteString("\n" + Escape(strings.TrimSpace(im.Sanitize(p.Message))))
	if s := strings.TrimSpace(im.Sanitize(p.Suggestion)); s != "" {
		b.WriteString("\n*" + im.TextSuggestion + ":* " + Escape(s))
	}
	return truncateChars(b.String(), MaxSectionText)
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
	return "<" + Escape(raw) + "|" + Escape(label) + ">"
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

// MarkdownToMrkdwn converts the agent's Markdown (CommonMark) to Slack's
// mrkdwn by walking goldmark's AST: **bold** becomes *bold*, *em* _em_,
// headings bold lines, lists bullets, links <url|text>; all text is
// escaped. Raw HTML is shown as text.
func MarkdownToMrkdwn(src string) string {
	source := []byte(src)
	doc := goldmark.New().Parser().Parse(text.NewReader(source))
	c := &converter{src: source}
	return strings.TrimSpace(c.blocks(doc, ""))
}

type converter struct{ src []byte }

// blocks renders the block children of n separated by blank lines, each
// line prefixed by indent.
func (c *converter) blocks(n ast.Node, indent string) string {
	var parts []string
	for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
		if s := c.block(ch, indent); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n")
}

func (c *converter) block(n ast.Node, indent string) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return prefixLines(c.inlines(n), indent)
	case *ast.Heading:
		return indent + "*" + strings.TrimSpace(c.inlines(n)) + "*"
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		var b strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(c.src))
		}
		return prefixLines("```\n"+Escape(strings.TrimRight(b.String(), "\n"))+"\n```", indent)
	case *ast.List:
		var items []string
		num := n.Start
		for it := n.FirstChild(); it != nil; it = it.NextSibling() {
			marker := "• "
			if n.IsOrdered() {
				marker = fmt.Sprintf("%d. ", num)
				num++
			}
			body := c.listItem(it, indent+"    ")
			items = append(items, indent+marker+strings.TrimPrefix(body, indent+"    "))
		}
		return strings.Join(items, "\n")
	case *ast.Blockquote:
		return prefixLines(c.blocks(n, ""), indent+"> ")
	case *ast.ThematicBreak:
		return indent + "———"
	case *ast.HTMLBlock:
		var b strings.Builder
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			b.Write(seg.Value(c.src))
		}
		return prefixLines(Escape(strings.TrimRight(b.String(), "\n")), indent)
	default:
		return c.blocks(n, indent)
	}
}

// listItem renders an item's blocks on consecutive lines, nested lists
// indented under it.
func (c *converter) listItem(n ast.Node, indent string) string {
	var parts []string
	for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
		if s := c.block(ch, indent); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

func (c *converter) inlines(n ast.Node) string {
	var b strings.Builder
	for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
		c.inline(&b, ch)
	}
	return b.String()
}

func (c *converter) inline(b *strings.Builder, n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		b.WriteString(Escape(string(n.Segment.Value(c.src))))
		if n.HardLineBreak() || n.SoftLineBreak() {
			b.WriteString("\n")
		}
	case *ast.String:
		b.WriteString(Escape(string(n.Value)))
	case *ast.CodeSpan:
		var raw strings.Builder
		for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
			if t, ok := ch.(*ast.Text); ok {
				raw.Write(t.Segment.Value(c.src))
			}
		}
		b.WriteString("`" + Escape(strings.ReplaceAll(raw.String(), "`", "'")) + "`")
	case *ast.Emphasis:
		mark := "_"
		if n.Level >= 2 {
			mark = "*"
		}
		b.WriteString(mark + c.inlines(n) + mark)
	case *ast.Link:
		label := c.inlines(n)
		if l := linkTo(string(n.Destination), "x"); l != "" && label != "" {
			b.WriteString("<" + Escape(string(n.Destination)) + "|" + label + ">")
		} else {
			b.WriteString(label)
		}
	case *ast.AutoLink:
		u := string(n.URL(c.src))
		if linkTo(u, "x") != "" {
			b.WriteString("<" + Escape(u) + ">")
		} else {
			b.WriteString(Escape(u))
		}
	case *ast.Image:
		label := c.inlines(n)
		if linkTo(string(n.Destination), "x") != "" {
			b.WriteString("<" + Escape(string(n.Destination)) + "|" + label + ">")
		} else {
			b.WriteString(label)
		}
	case *ast.RawHTML:
		segs := n.Segments
		for i := 0; i < segs.Len(); i++ {
			seg := segs.At(i)
			b.WriteString(Escape(string(seg.Value(c.src))))
		}
	default:
		b.WriteString(c.inlines(n))
	}
}

func prefixLines(s, prefix string) string {
	if prefix == "" {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}
