package looktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/dingtalk"
	"github.com/aicr-dev/aicr/im/feishu"
	"github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/im/webhook"
	"github.com/aicr-dev/aicr/im/wecom"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/review"
)

// languages are the report languages with goldens; a language is one
// more entry here and one more set of files under -update.
var languages = []im.Language{im.LangEnglish, im.LangChinese}

// report builds the representative report in lang.
func report(t *testing.T, lang im.Language) im.Report {
	t.Helper()
	msg := imtest.LookMessage()
	msg.Language = lang
	rep := im.BuildReport(msg)
	if rep.Language != lang {
		t.Fatalf("report in %q, want %q", rep.Language, lang)
	}
	return rep
}

// platform is one body as its platform receives it: the golden file's
// extension, and how to render it.
type platform struct {
	name, ext string
	render    func(t *testing.T, rep im.Report) string
}

var platforms = []platform{
	{"slack", "json", func(t *testing.T, rep im.Report) string {
		// The bot's first message, then its thread replies (the problems).
		posts := append([]slack.Post{slack.RenderSummary(rep, "<@"+slack.Escape(rep.Author.SlackID)+">", false)},
			slack.RenderReplies(rep, 0)...)
		return encode(t, posts)
	}},
	{"feishu", "json", func(t *testing.T, rep im.Report) string {
		ps, err := feishu.Render(rep, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		return encode(t, ps)
	}},
	{"dingtalk", "md", func(t *testing.T, rep im.Report) string {
		ps, err := dingtalk.Render(rep, 0)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, p := range ps {
			b.WriteString(p.Markdown.Text + "\n")
		}
		return b.String()
	}},
	{"wecom", "md", func(t *testing.T, rep im.Report) string {
		ps, err := wecom.Render(rep, 0)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, p := range ps {
			b.WriteString(p.Markdown.Content + "\n")
		}
		return b.String()
	}},
	{"webhook", "json", func(t *testing.T, rep im.Report) string {
		return encode(t, webhook.NewPayload(rep, "ci", "aicr-57-ci", time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)))
	}},
	// The console prints it, the file channel stores it, the webhook
	// carries it as "text".
	{"text", "txt", func(t *testing.T, rep im.Report) string { return im.PlainText(rep) }},
}

func encode(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// golden compares got with im/testdata/golden/name, rewriting it under
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "testdata", "golden", name)
	if imtest.Updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from golden (run with -update and read the diff):\n%s", path, got)
	}
}

func TestGoldenBodies(t *testing.T) {
	for _, lang := range languages {
		rep := report(t, lang)
		for _, p := range platforms {
			t.Run(p.name+"."+string(lang), func(t *testing.T) {
				golden(t, p.name+"."+string(lang)+"."+p.ext, p.render(t, rep))
			})
		}
	}
}

// seen is one problem as a body shows it.
type seen struct {
	icon, colour string
	sev          review.Severity
	loc          string
}

var (
	icons = "(🔴|🟠|🟡|🔵|⚪)"
	// icon, optional font colour, **[sev]** or *[sev]*, `location`.
	markupProblemRE = regexp.MustCompile(icons + ` (?:<font color=['"]([a-z]+)['"]>)?\*{1,2}\[([^\]]+)\]\*{1,2}(?:</font>)? ` + "`([^`]+)`")
	plainProblemRE  = regexp.MustCompile(`(?m)^` + icons + ` (\S+) \[([^\]]+)\]`)
	// icon, optional font colour, "2 critical" or "严重 2 个".
	markupCountRE = regexp.MustCompile(icons + ` (?:<font color=['"]([a-z]+)['"]>)?(\d+ [^\s<,，*]+|[^\s<,，*]+ \d+ 个)`)
)

// severityNamed is the severity lang's report calls name.
func severityNamed(rep im.Report, name string) review.Severity {
	for _, s := range review.Severities {
		if rep.Words.Severity(s) == name {
			return s
		}
	}
	return review.Severity("?" + name)
}

// text is what a reader of body sees as text: a JSON body's strings
// (Slack's blocks, a card's elements), a Markdown body as it is.
func text(t *testing.T, p platform, body string) string {
	t.Helper()
	switch p.name {
	case "webhook":
		var w webhook.Payload
		if err := json.Unmarshal([]byte(body), &w); err != nil {
			t.Fatal(err)
		}
		return w.Text
	case "slack", "feishu":
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		var out []string
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				out = append(out, v)
			case []any:
				for _, e := range v {
					walk(e)
				}
			case map[string]any:
				for _, k := range []string{"title", "header", "text", "body", "elements", "content", "blocks", "card"} {
					if e, ok := v[k]; ok {
						walk(e)
					}
				}
			}
		}
		walk(v)
		return strings.Join(out, "\n")
	}
	return body
}

// The bodies of every platform agree: the same problems in the same
// order, each in its severity's icon and (where the platform has
// colours) colour from im.SeverityStyle, the same counts, and nothing a
// reader needs dropped.
func TestEveryPlatformShowsTheSameReport(t *testing.T) {
	for _, lang := range languages {
		rep := report(t, lang)
		want := rep.Problems
		if len(want) != 5 {
			t.Fatalf("the representative report has %d problems, want one of every severity", len(want))
		}
		for _, p := range platforms {
			t.Run(p.name+"."+string(lang), func(t *testing.T) {
				body := p.render(t, rep)
				txt := text(t, p, body)
				got := problemsIn(p, rep, txt)
				if len(got) != len(want) {
					t.Fatalf("%d problems shown, want %d:\n%s", len(got), len(want), txt)
				}
				for i, g := range got {
					w := want[i]
					st, _ := im.SeverityStyle(w.Severity)
					wantColour := map[string]string{"feishu": st.Colour, "wecom": st.WeCom}[p.name]
					if g.sev != w.Severity || g.loc != im.ProblemLocation(w) || g.icon != st.Icon || g.colour != wantColour {
						t.Errorf("problem %d shown as %+v, want %s %s in %s %q", i+1, g, w.Severity, im.ProblemLocation(w), st.Icon, wantColour)
					}
				}
				checkCounts(t, p, txt, rep)
				for _, w := range mustShow(p, rep) {
					if !strings.Contains(txt, w) {
						t.Errorf("%q is missing:\n%s", w, txt)
					}
				}
				// A report that fits one message is not "1–5 of 5" or "(1/1)".
				for _, bad := range []string{rep.Language.T(im.KeyRange, rep.Words.Problems, 1, 5, 5), "(1/1)"} {
					if strings.Contains(txt, bad) {
						t.Errorf("%q in a report that was not split:\n%s", bad, txt)
					}
				}
				// The run is in the footer, not the title.
				if strings.Contains(rep.Title, "57") {
					t.Errorf("title %q names the run", rep.Title)
				}
			})
		}
	}
}

func problemsIn(p platform, rep im.Report, txt string) []seen {
	var out []seen
	if p.name == "text" || p.name == "webhook" {
		for _, m := range plainProblemRE.FindAllStringSubmatch(txt, -1) {
			out = append(out, seen{icon: m[1], loc: m[2], sev: severityNamed(rep, m[3])})
		}
		return out
	}
	for _, m := range markupProblemRE.FindAllStringSubmatch(txt, -1) {
		out = append(out, seen{icon: m[1], colour: m[2], sev: severityNamed(rep, m[3]), loc: m[4]})
	}
	return out
}

// checkCounts: the counts line shows every severity's count, most
// severe first, each (where the body has markup) in its icon and colour.
func checkCounts(t *testing.T, p platform, txt string, rep im.Report) {
	t.Helper()
	want := rep.Language.Counts(rep.Problems)
	var got []string
	if p.name == "text" || p.name == "webhook" {
		if !strings.Contains(txt, "\n"+rep.Verdict+"\n") {
			t.Errorf("verdict %q is not a line of:\n%s", rep.Verdict, txt)
		}
		for _, c := range want {
			got = append(got, c.Text)
		}
	} else {
		for _, m := range markupCountRE.FindAllStringSubmatch(txt, -1) {
			i := len(got)
			got = append(got, m[3])
			if i >= len(want) {
				continue
			}
			st, _ := im.SeverityStyle(want[i].Severity)
			if wantColour := map[string]string{"feishu": st.Colour, "wecom": st.WeCom}[p.name]; m[1] != st.Icon || m[2] != wantColour {
				t.Errorf("count %q in %s %q, want %s %q", m[3], m[1], m[2], st.Icon, wantColour)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("counts %q, want %d of them:\n%s", got, len(want), txt)
	}
	for i, c := range want {
		if got[i] != c.Text {
			t.Errorf("count %d shown as %q, want %q", i+1, got[i], c.Text)
		}
	}
}

// mustShow is what a reader of p must find: the author's mention (where
// the platform can mention), the change link, the reviewer, the run,
// the suggestion, the summary and the left-out file.
func mustShow(p platform, rep im.Report) []string {
	link := rep.ChangeURL
	if p.name == "slack" {
		link = strings.ReplaceAll(link, "&", "&amp;")
	}
	out := []string{link, "llm", "gpt-4o", rep.Language.T(im.KeyFooterRun, "57"), "defer resp.Body.Close()", "assets/logo.png",
		"retry path needs a lock"}
	// The run in the footer links to its web page ([web] base_url).
	run := rep.Language.T(im.KeyFooterRun, "57")
	switch p.name {
	case "slack":
		out = append(out, "<@U0ALICE>", "<https://aicr.example.com/runs/57|"+run+">")
	case "feishu":
		out = append(out, "<at id=ou_alice01></at>", "["+run+"](https://aicr.example.com/runs/57)")
	case "dingtalk":
		out = append(out, "@13800000000", "@alice01", "["+run+"](https://aicr.example.com/runs/57)")
	case "wecom":
		out = append(out, "<@alice.w>", "["+run+"](https://aicr.example.com/runs/57)")
	default:
		out = append(out, run+" https://aicr.example.com/runs/57")
		// No platform ids in plain text: the author by VCS name.
		out = append(out, rep.Language.T(im.KeyChangeBy, "payments r1234", "alice"))
	}
	return out
}

var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM))

// The commit subject shows as typed everywhere: its *, _, ~, `, <thing>
// and [x](y) are not emphasis, code, tags or links on any platform.
func TestCommitSubjectShowsAsTyped(t *testing.T) {
	for _, lang := range languages {
		for _, p := range platforms {
			t.Run(p.name+"."+string(lang), func(t *testing.T) { subjectAsTyped(t, p, report(t, lang)) })
		}
	}
}

func subjectAsTyped(t *testing.T, p platform, rep im.Report) {
	t.Helper()
	{
		{
			txt := text(t, p, p.render(t, rep))
			switch p.name {
			case "text", "webhook":
				if lines := strings.Split(txt, "\n"); len(lines) < 2 || lines[1] != imtest.LookSubject {
					t.Errorf("second line %q, want the subject as typed", lines[1])
				}
			case "slack":
				line := lineWith(t, txt, "Fix ")
				line = strings.TrimSuffix(strings.TrimPrefix(line, "_"), "_")
				// mrkdwn has no escapes: each delimiter must be cut off
				// from the words by zero-width spaces.
				for i, r := range line {
					if strings.ContainsRune("*_~`", r) && (!strings.HasSuffix(line[:i], "\u200b") || !strings.HasPrefix(line[i+1:], "\u200b")) {
						t.Errorf("%q at %d is not fenced off by zero-width spaces: %q", r, i, line)
					}
				}
				shown := html.UnescapeString(strings.ReplaceAll(line, "\u200b", ""))
				if shown != imtest.LookSubject {
					t.Errorf("reader sees %q, want %q", shown, imtest.LookSubject)
				}
			default:
				line := lineWith(t, txt, "> Fix ")
				var out bytes.Buffer
				if err := gfm.Convert([]byte(line), &out); err != nil {
					t.Fatal(err)
				}
				got := strings.ReplaceAll(out.String(), "\u200b", "")
				want := "<blockquote>\n<p>" + strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(imtest.LookSubject) + "</p>\n</blockquote>\n"
				if got != want {
					t.Errorf("the subject renders as\n%s\nwant\n%s\n(from %q)", got, want, line)
				}
			}
		}
	}
}

func lineWith(t *testing.T, txt, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(txt, "\n") {
		if strings.HasPrefix(l, prefix) || strings.HasPrefix(l, "_"+prefix) {
			return l
		}
	}
	t.Fatalf("no line starting %q in:\n%s", prefix, txt)
	return ""
}

// The README's "What a report looks like" section is made from the
// goldens (rewritten between its markers under -update), so what it shows
// is what aicr sends.
func TestReadmeShowsTheBodies(t *testing.T) {
	const begin, end = "<!-- look:begin (generated by go test ./im/looktest -update) -->\n", "<!-- look:end -->\n"
	path := filepath.Join("..", "..", "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q … %q section", begin, end)
	}
	var s strings.Builder
	for _, lang := range languages {
		rep := report(t, lang)
		name := map[im.Language]string{im.LangEnglish: "English", im.LangChinese: "Chinese (zh-CN)"}[lang]
		for _, p := range platforms {
			body := p.render(t, rep)
			title, shown := readmeBody(t, p, body)
			fmt.Fprintf(&s, "<details><summary>%s: %s</summary>\n\n%s\n\n````%s\n%s\n````\n\n</details>\n\n",
				name, p.name, title, map[string]string{"slack": "text", "feishu": "markdown", "dingtalk": "markdown", "wecom": "markdown", "webhook": "json", "text": "text"}[p.name], strings.TrimRight(shown, "\n"))
		}
	}
	want := readme[:i+len(begin)] + s.String() + readme[j:]
	if imtest.Updating() {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if readme != want {
		t.Errorf("README.md's report bodies differ from the goldens: run go test ./im/looktest -update")
	}
}

// readmeBody is what the README shows of a body: the text a reader sees
// (a Slack post's mrkdwn, a card's markdown) rather than the request's
// JSON, which the golden files hold; the webhook is its JSON.
func readmeBody(t *testing.T, p platform, body string) (string, string) {
	t.Helper()
	switch p.name {
	case "slack":
		var posts []struct {
			Blocks []struct {
				Type string `json:"type"`
				Text *struct {
					Text string `json:"text"`
				} `json:"text"`
				Elements []struct {
					Text string `json:"text"`
				} `json:"elements"`
			} `json:"blocks"`
		}
		if err := json.Unmarshal([]byte(body), &posts); err != nil {
			t.Fatal(err)
		}
		var out []string
		for i, post := range posts {
			if i > 0 {
				out = append(out, "── thread reply ──")
			}
			for _, b := range post.Blocks {
				switch {
				case b.Type == "header":
					out = append(out, "# "+b.Text.Text)
				case b.Text != nil:
					out = append(out, b.Text.Text)
				case len(b.Elements) > 0:
					out = append(out, b.Elements[0].Text)
				}
			}
		}
		return "The bot's message and its thread reply, as Block Kit mrkdwn (severity icons; Slack has no text colours):", strings.Join(out, "\n\n")
	case "feishu":
		var ps []feishu.Payload
		if err := json.Unmarshal([]byte(body), &ps); err != nil {
			t.Fatal(err)
		}
		c := ps[0].Card
		return "An interactive card: header `" + c.Header.Title.Content + "` in template `" + c.Header.Template + "`, one markdown element:", c.Body.Elements[0].Content
	case "dingtalk":
		return "The markdown message's `text` (DingTalk has no text colours: icons only):", body
	case "wecom":
		return "The markdown message's `content` (WeCom's three font colours: warning, comment, info):", body
	case "webhook":
		return "The JSON body (docs/webhook.md):", body
	}
	return "What the console prints and the file channel stores (the webhook's `text`):", body
}
