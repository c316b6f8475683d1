// Package markdown converts the agent's Markdown (summaries, problem
// messages, suggestions) into the Markdown subsets the chat platforms
// render (DingTalk, WeCom, Feishu cards, Slack mrkdwn). It is the one
// Markdown walker in aicr. It walks goldmark's AST, so structure is understood
// rather than guessed at with regular expressions, and it treats every
// input as untrusted: raw HTML is shown as text, never passed through;
// links survive only with an http or https destination; and the tag
// syntax the platforms interpret (<at>, <font>, <@userid>) cannot be
// produced from the input.
package markdown

import (
	"bytes"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// Dialect is one platform's Markdown subset.
type Dialect int

const (
	// DingTalk is the custom robot's "markdown" message: headings, bold,
	// italic, links, lists and quotes; no tables and no documented code
	// blocks, so code is shown as quoted lines.
	DingTalk Dialect = iota + 1
	// WeCom is the group robot's "markdown" message: headings, bold,
	// links, inline code, quotes and <font color="info|comment|warning">.
	// No lists or code blocks are documented; code becomes quoted lines of
	// inline code.
	WeCom
	// Feishu is the card JSON 2.0 markdown element: headings, bold,
	// italic, strikethrough, links, lists, quotes, inline code and fenced
	// code blocks.
	Feishu
	// Slack is mrkdwn: *bold*, _italic_, ~strike~, <url|label> links,
	// `code`, ``` blocks and > quotes; no headings or list syntax, and
	// &, < and > must be entities.
	Slack
)

func (d Dialect) String() string {
	switch d {
	case DingTalk:
		return "dingtalk"
	case WeCom:
		return "wecom"
	case Feishu:
		return "feishu"
	case Slack:
		return "slack"
	}
	return "dialect(" + strconv.Itoa(int(d)) + ")"
}

// GFM tables, strikethrough, task lists and bare-URL linkify are what
// agents actually write; the parser must know them so that, for example,
// a table becomes a list instead of a wall of pipes.
var parser = goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()

// Convert renders untrusted Markdown src in dialect d. Blocks are
// separated by one blank line; the result has no leading or trailing
// blank lines.
func Convert(src string, d Dialect) string {
	source := []byte(src)
	doc := parser.Parse(text.NewReader(source))
	c := &converter{d: d, src: source}
	return strings.TrimSpace(c.blocks(doc))
}

// Escape makes plain untrusted text (a file name, a category, a commit
// author or message) safe to place in dialect d's Markdown: the
// characters that start platform tags are neutralised, and so is
// whatever would make the text a link, an image or a mention (Defuse).
// Markdown emphasis characters are left alone; callers put text where
// emphasis cannot hurt (code spans, titles) or accept it.
func Escape(s string, d Dialect) string {
	return Defuse(Entities(s, d))
}

// Literal is Escape for text that must show exactly as typed: a commit
// subject, an author, a file name, a sentence of aicr's quoting them.
// On top of Escape, its own emphasis, strikethrough and code characters
// (*, _, ~, `) and the line starts that would make it a heading, quote or
// list are neutralised, so "fix *all* the _things_" is not bold inside
// the report's own markup. The Markdown dialects take CommonMark's
// backslash escapes; Slack's mrkdwn has none, so there the character is
// put between zero-width spaces, which stops mrkdwn from seeing it as a
// word-boundary delimiter and which the reader does not see.
func Literal(s string, d Dialect) string {
	s = Escape(s, d)
	if d == Slack {
		return slackLiteral.Replace(s)
	}
	s = mdLiteral.Replace(s)
	// A line start is where #, >, +, - and "1." mean a block; the text
	// sits after aicr's own markers, but a report line may start with it.
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = escapeLineStart(l)
	}
	return strings.Join(lines, "\n")
}

var (
	mdLiteral = strings.NewReplacer("\\", "\\\\", "*", "\\*", "_", "\\_", "~", "\\~", "`", "\\`",
		"[", "\\[", "|", "\\|")
	slackLiteral = strings.NewReplacer("*", "\u200b*\u200b", "_", "\u200b_\u200b", "~", "\u200b~\u200b",
		"`", "\u200b`\u200b")
)

func escapeLineStart(l string) string {
	t := strings.TrimLeft(l, " ")
	ind := l[:len(l)-len(t)]
	switch {
	case t == "":
		return l
	case strings.ContainsRune("#>+-=", rune(t[0])):
		return ind + "\\" + t
	}
	digits := strings.TrimLeft(t, "0123456789")
	if len(digits) < len(t) && (strings.HasPrefix(digits, ".") || strings.HasPrefix(digits, ")")) {
		n := len(t) - len(digits)
		return ind + t[:n] + "\\" + digits
	}
	return l
}

// Entities neutralises the characters that start d's tags (<at>, <font>,
// <@userid>, Slack's <url|label> and <!channel>), and nothing else: a URL
// aicr puts in a link of its own goes through it too.
func Entities(s string, d Dialect) string {
	if d == Slack {
		return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
	}
	if d == Feishu {
		// Card markdown honours HTML entities, so <at id=all></at> in the
		// input is displayed, not executed.
		return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
	}
	// DingTalk and WeCom document no escape for '<'. A zero-width space
	// after it looks the same to a reader but is no longer a tag
	// (<font ...>, <@userid>) to the renderer.
	return strings.ReplaceAll(s, "<", "<\u200b")
}

// defuser puts a zero-width space where committer or agent text would
// otherwise become markup every dialect acts on: after ']' (so
// "[x](u)", "![i](u)" and "[x][ref]" are no longer a link or an image
// that every reader's client fetches), inside "://" and "www." (the
// platforms' bare-URL linkification) and after '@' (@all, @所有人, Slack's
// automatically parsed @here/@channel). The reader sees the same text.
var defuser = strings.NewReplacer("]", "]\u200b", "://", ":\u200b//", "www.", "www\u200b.", "WWW.", "WWW\u200b.", "@", "@\u200b")

// Defuse is the part of Escape common to every dialect, for text that is
// already free of tags (a plain_text field, a code span on a platform
// that renders code spans as Markdown).
func Defuse(s string) string { return defuser.Replace(s) }

// CodeSpan renders s as inline code. Backticks inside s would end the
// span early, so they are replaced by a look-alike (U+02CB); the span is
// for reading, not for copy-paste of shell snippets.
func CodeSpan(s string, d Dialect) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "`", "\u02cb")
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return "`" + escapeCode(s, d) + "`"
}

// CodeBlock renders code (a suggestion, a diff) as a block: fenced where
// the dialect renders fences, quoted lines otherwise. The result never
// ends with a newline.
func CodeBlock(code, lang string, d Dialect) string {
	code = strings.TrimRight(strings.ReplaceAll(code, "\r\n", "\n"), "\n")
	if d == Slack {
		// mrkdwn has no language tag, and a fence inside cannot be
		// escaped: it becomes look-alike quotes.
		return "```\n" + escapeCode(strings.ReplaceAll(code, "```", "ˋˋˋ"), d) + "\n```"
	}
	if d == Feishu {
		fence := "```"
		for strings.Contains(code, fence) {
			fence += "`"
		}
		lang = strings.Map(func(r rune) rune {
			if r == '`' || r == '<' || r == '>' || r == ' ' || r == '\n' {
				return -1
			}
			return r
		}, lang)
		return fence + lang + "\n" + escapeCode(code, d) + "\n" + fence
	}
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		l = keepIndent(strings.TrimRight(l, " \t"))
		switch {
		case l == "":
			lines[i] = ">"
		case d == WeCom && !strings.Contains(l, "`"):
			lines[i] = "> `" + Escape(l, d) + "`"
		default:
			lines[i] = "> " + Escape(l, d)
		}
	}
	return strings.Join(lines, "\n")
}

// Markdown collapses leading spaces, which would flatten code; no-break
// spaces survive and look the same.
func keepIndent(l string) string {
	trimmed := strings.TrimLeft(l, " \t")
	indent := l[:len(l)-len(trimmed)]
	if indent == "" {
		return l
	}
	indent = strings.ReplaceAll(indent, "\t", "    ")
	return strings.Repeat("\u00a0", len(indent)) + trimmed
}

// escapeCode defuses tags inside code. Whether a platform interprets
// <at id=all></at> inside code is undocumented, so code gets the same
// zero-width space as text: invisible to the reader, and entities would
// show up literally inside code.
func escapeCode(s string, d Dialect) string {
	switch d {
	case Slack:
		return Entities(s, d)
	case DingTalk:
		// DingTalk documents no code spans: what is inside the backticks
		// is still Markdown to it.
		return Escape(s, d)
	}
	return strings.ReplaceAll(s, "<", "<\u200b")
}

// SafeURL returns u if it is an absolute http(s) URL, with the characters
// that would end a Markdown link destination percent-encoded, or "" if it
// is anything else (javascript:, data:, relative, malformed).
func SafeURL(u string) string {
	u = strings.TrimSpace(u)
	parsed, err := url.Parse(u)
	if err != nil || parsed.Host == "" {
		return ""
	}
	switch strings.ToLower(parsed.Scheme) {
	case "http", "https":
	default:
		return ""
	}
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E",
		"\"", "%22", "'", "%27", "\n", "", "\t", "").Replace(u)
}

// Link renders [label](url) when url is safe, otherwise just the label.
func Link(label, u string, d Dialect) string {
	label = Escape(label, d)
	if d != Slack {
		label = strings.ReplaceAll(strings.ReplaceAll(label, "[", "("), "]", ")")
	}
	return linkMarkup(label, u, d)
}

// linkMarkup renders an already escaped label linking to u, or just the
// label when u is not a safe http(s) URL.
func linkMarkup(label, u string, d Dialect) string {
	safe := SafeURL(u)
	if safe == "" {
		return label
	}
	if d == Slack {
		if label == "" {
			return "<" + Entities(safe, d) + ">"
		}
		// A '|' in the label would end it early.
		return "<" + Entities(safe, d) + "|" + strings.ReplaceAll(label, "|", "¦") + ">"
	}
	if label == "" {
		label = safe
	}
	return "[" + label + "](" + safe + ")"
}

// bullet is the list marker: mrkdwn has no list syntax, so Slack gets
// the character it would show.
func bullet(d Dialect) string {
	if d == Slack {
		return "• "
	}
	return "- "
}

type converter struct {
	d   Dialect
	src []byte
}

// blocks renders the block children of n separated by blank lines.
func (c *converter) blocks(n ast.Node) string {
	var parts []string
	for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
		if s := c.block(ch); strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n")
}

func (c *converter) block(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return c.inlines(n)
	case *ast.Heading:
		title := strings.TrimSpace(c.inlines(n))
		if title == "" {
			return ""
		}
		if c.d == Slack {
			return "*" + oneLine(title) + "*"
		}
		// The report has its own title; the agent's headings sit below it.
		level := min(n.Level+2, 6)
		return strings.Repeat("#", level) + " " + oneLine(title)
	case *ast.ThematicBreak:
		return ""
	case *ast.FencedCodeBlock:
		return CodeBlock(c.lines(n), string(n.Language(c.src)), c.d)
	case *ast.CodeBlock:
		return CodeBlock(c.lines(n), "", c.d)
	case *ast.HTMLBlock:
		// Shown, not interpreted: an agent quoting HTML means the text.
		body := c.lines(n)
		if n.HasClosure() {
			body += string(n.ClosureLine.Value(c.src))
		}
		return CodeBlock(body, "html", c.d)
	case *ast.Blockquote:
		return quote(c.blocks(n))
	case *ast.List:
		return c.list(n, 0)
	case *east.Table:
		return c.table(n)
	default:
		if n.Type() == ast.TypeBlock {
			return c.blocks(n)
		}
		return c.inlines(n)
	}
}

func quote(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l == "" {
			lines[i] = ">"
		} else {
			lines[i] = "> " + l
		}
	}
	return strings.Join(lines, "\n")
}

func (c *converter) list(l *ast.List, depth int) string {
	var items []string
	num := l.Start
	if num == 0 {
		num = 1
	}
	indent := strings.Repeat("  ", depth)
	for it := l.FirstChild(); it != nil; it = it.NextSibling() {
		marker := bullet(c.d)
		if l.IsOrdered() {
			marker = strconv.Itoa(num) + ". "
			num++
		}
		var body []string
		for ch := it.FirstChild(); ch != nil; ch = ch.NextSibling() {
			var s string
			if sub, ok := ch.(*ast.List); ok {
				s = c.list(sub, depth+1)
			} else {
				s = c.block(ch)
				s = indentLines(s, indent+strings.Repeat(" ", len(marker)))
			}
			if strings.TrimSpace(s) != "" {
				body = append(body, s)
			}
		}
		text := strings.TrimLeft(strings.Join(body, "\n"), " ")
		items = append(items, indent+marker+text)
	}
	return strings.Join(items, "\n")
}

// indentLines indents every line after the first, which follows the
// list marker.
func indentLines(s, indent string) string {
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if lines[i] != "" {
			lines[i] = indent + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// None of the dialects renders a table reliably, so each row becomes a
// list item of "header: cell" pairs, which reads well on a phone.
func (c *converter) table(t *east.Table) string {
	var headers []string
	var rows []string
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var cells []string
		for cell := r.FirstChild(); cell != nil; cell = cell.NextSibling() {
			cells = append(cells, strings.TrimSpace(oneLine(c.inlines(cell))))
		}
		if _, ok := r.(*east.TableHeader); ok {
			headers = cells
			continue
		}
		var pairs []string
		for i, cell := range cells {
			if cell == "" {
				continue
			}
			if i < len(headers) && headers[i] != "" {
				pairs = append(pairs, headers[i]+": "+cell)
			} else {
				pairs = append(pairs, cell)
			}
		}
		if len(pairs) > 0 {
			rows = append(rows, bullet(c.d)+strings.Join(pairs, "; "))
		}
	}
	if len(rows) == 0 && len(headers) > 0 {
		return bullet(c.d) + strings.Join(headers, "; ")
	}
	return strings.Join(rows, "\n")
}

func (c *converter) lines(n ast.Node) string {
	var b bytes.Buffer
	segs := n.Lines()
	for i := 0; i < segs.Len(); i++ {
		seg := segs.At(i)
		b.Write(seg.Value(c.src))
	}
	return b.String()
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
		b.WriteString(Escape(string(n.Value(c.src)), c.d))
		switch {
		case n.HardLineBreak():
			b.WriteString("\n")
		case n.SoftLineBreak():
			b.WriteString("\n")
		}
	case *ast.String:
		b.WriteString(Escape(string(n.Value), c.d))
	case *ast.CodeSpan:
		var raw strings.Builder
		for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
			if t, ok := ch.(*ast.Text); ok {
				raw.Write(t.Value(c.src))
			} else if s, ok := ch.(*ast.String); ok {
				raw.Write(s.Value)
			}
		}
		b.WriteString(CodeSpan(raw.String(), c.d))
	case *ast.Emphasis:
		inner := c.inlines(n)
		if strings.TrimSpace(inner) == "" {
			return
		}
		switch {
		case c.d == Slack && n.Level >= 2:
			b.WriteString("*" + inner + "*")
		case c.d == Slack:
			b.WriteString("_" + inner + "_")
		case n.Level >= 2:
			b.WriteString("**" + inner + "**")
		case c.d == WeCom:
			// WeCom documents no italics; the text is kept plain.
			b.WriteString(inner)
		default:
			b.WriteString("*" + inner + "*")
		}
	case *east.Strikethrough:
		inner := c.inlines(n)
		switch c.d {
		case Feishu:
			b.WriteString("~~" + inner + "~~")
		case Slack:
			b.WriteString("~" + inner + "~")
		default:
			b.WriteString(inner)
		}
	case *ast.Link:
		b.WriteString(c.link(c.inlines(n), string(n.Destination)))
	case *ast.Image:
		alt := strings.TrimSpace(c.inlines(n))
		if alt == "" {
			alt = "image"
		}
		// Images would be fetched by every reader's client; a link is
		// enough.
		b.WriteString(c.link(alt, string(n.Destination)))
	case *ast.AutoLink:
		u := string(n.URL(c.src))
		if n.AutoLinkType == ast.AutoLinkEmail {
			b.WriteString(Escape(string(n.Label(c.src)), c.d))
			return
		}
		b.WriteString(c.link(string(n.Label(c.src)), u))
	case *ast.RawHTML:
		var raw strings.Builder
		for i := 0; i < n.Segments.Len(); i++ {
			seg := n.Segments.At(i)
			raw.Write(seg.Value(c.src))
		}
		b.WriteString(Escape(raw.String(), c.d))
	case *east.TaskCheckBox:
		if n.IsChecked {
			b.WriteString("[x] ")
		} else {
			b.WriteString("[ ] ")
		}
	default:
		b.WriteString(c.inlines(n))
	}
}

// link keeps the label (already converted) and drops unsafe destinations.
func (c *converter) link(label, dest string) string {
	label = strings.TrimSpace(oneLine(label))
	if SafeURL(dest) == "" {
		return label
	}
	if label != "" && misleadingLabel(label, SafeURL(dest)) {
		// A label that reads as an address is trusted for what it says:
		// the reader is shown where the link really goes.
		label = ""
	}
	if label == "" && c.d != Slack {
		label = Escape(SafeURL(dest), c.d)
	}
	if c.d != Slack {
		// Brackets inside the label would end it early.
		label = strings.NewReplacer("[", "(", "]", ")").Replace(label)
	}
	return linkMarkup(label, dest, c.d)
}

// addressRE is a label that reads as a host name, with or without a path:
// "bank.example", "www.bank.example/login".
var addressRE = regexp.MustCompile(`^(?i)[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}(:[0-9]+)?([/?#]\S*)?$`)

// misleadingLabel reports whether label (converted, so with Escape's
// zero-width spaces and Slack's entities) looks like a URL or host name
// other than dest's.
func misleadingLabel(label, dest string) bool {
	plain := strings.TrimSpace(strings.NewReplacer("\u200b", "", "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(label))
	plain = strings.Trim(plain, "<>")
	if !strings.Contains(plain, "://") && !addressRE.MatchString(plain) {
		return false
	}
	if !strings.Contains(plain, "://") {
		plain = "http://" + plain
	}
	lu, err := url.Parse(plain)
	if err != nil || lu.Hostname() == "" {
		return true
	}
	du, err := url.Parse(dest)
	if err != nil {
		return true
	}
	return !strings.EqualFold(strings.TrimPrefix(strings.ToLower(lu.Hostname()), "www."), strings.TrimPrefix(strings.ToLower(du.Hostname()), "www."))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
