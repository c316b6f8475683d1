package e2e

// The README's pictures of a report and a resolution, taken from what the
// stand-ins received in the SVN scenario: with AICR_UPDATE_SCREENSHOTS=1
// the Slack thread (Block Kit, drawn roughly as Slack lays it out) and the
// Feishu card (its Markdown) are rendered to HTML and photographed in
// headless Chromium into docs/img/.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/yuin/goldmark"
	gmhtml "github.com/yuin/goldmark/renderer/html"
)

// shotsWanted reports whether this run should refresh the README's
// pictures: the SVN scenario, with AICR_UPDATE_SCREENSHOTS=1.
func (f *fixture) shotsWanted() bool {
	return f.vcs.name == "svn" && os.Getenv("AICR_UPDATE_SCREENSHOTS") == "1"
}

// takeShots renders r1's Slack thread as announced (announced), the same
// thread after r3 (the edit and the reply), and the Feishu resolution.
func (f *fixture) takeShots(t *testing.T, announced []slackMessage) {
	t.Helper()
	after := f.slack.Messages()
	thread := func(msgs []slackMessage, ts string) []slackMessage {
		var out []slackMessage
		for _, m := range msgs {
			if m.TS == ts || m.ThreadTS == ts {
				out = append(out, m)
			}
		}
		return out
	}
	var feishu string
	for _, c := range f.feishu.Received() {
		if strings.Contains(c.Card.Header.Title.Content, "resolved") {
			feishu = feishuHTML(t, c.Card.Header.Title.Content, c.Markdown())
		}
	}
	ts := announced[0].TS
	pages := map[string]string{
		"findings-slack-report.png":      slackHTML(thread(announced, ts)),
		"findings-slack-resolution.png":  slackHTML(thread(after, ts)),
		"findings-feishu-resolution.png": feishu,
	}
	dir := filepath.Join(f.dir, "shots")
	os.MkdirAll(dir, 0o755)
	ctx := shotBrowser(t)
	for name, page := range pages {
		src := filepath.Join(dir, name+".html")
		if err := os.WriteFile(src, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		if _, err := chromedp.Run(c, chromedp.Navigate("file://"+src)); err != nil {
			t.Fatalf("open %s: %v", src, err)
		}
		png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join("..", "docs", "img", name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func shotBrowser(t *testing.T) context.Context {
	t.Helper()
	exe, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("AICR_UPDATE_SCREENSHOTS=1 needs chromium: %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless,
		chromedp.WindowSize(860, 400), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

const shotStyle = `<style>
body{font:15px/1.46 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1d1c1d;background:#fff;margin:0;padding:16px 20px;width:800px}
.msg{display:flex;gap:10px;padding:8px 0}.avatar{width:36px;height:36px;border-radius:6px;background:#2f6f4f;color:#fff;font-weight:700;display:flex;align-items:center;justify-content:center;flex:none}
.who{font-weight:900}.who span{font-weight:400;color:#616061;font-size:12px;margin-left:6px}
.thread{border-left:3px solid #ddd;margin-left:46px;padding-left:12px}.label{color:#616061;font-size:13px;margin:6px 0 0 46px}
h3{font-size:17px;margin:4px 0}.ctx{color:#616061;font-size:13px}code{background:#f6f6f6;border:1px solid #e2e2e2;border-radius:3px;padding:0 3px;font-size:13px;color:#c01343}
a{color:#1264a3;text-decoration:none}.btns{margin:6px 0 10px}.btn{display:inline-block;border:1px solid #bbb;border-radius:4px;padding:3px 12px;margin-right:6px;font-weight:700;font-size:13px}
.sec{margin:4px 0}.dot{display:inline-block;width:12px;height:12px;border-radius:50%;vertical-align:-1px}
.check{display:inline-block;background:#2eb67d;color:#fff;border-radius:3px;font-size:11px;width:15px;height:15px;text-align:center;line-height:15px}.card{border:1px solid #dee0e3;border-radius:8px;overflow:hidden;width:640px}.card .head{background:#3370ff;color:#fff;padding:12px 16px;font-weight:600}
.card .body{padding:4px 16px 12px}.card blockquote{margin:8px 0;padding-left:10px;border-left:3px solid #dee0e3;color:#646a73}
</style>`

// slackHTML draws Slack messages and their Block Kit: the first as the
// channel shows it, the rest as replies in its thread.
func slackHTML(msgs []slackMessage) string {
	var b strings.Builder
	b.WriteString("<!doctype html><meta charset=utf-8>" + shotStyle)
	for i, m := range msgs {
		if i == 1 {
			replies := fmt.Sprintf("%d replies", len(msgs)-1)
			if len(msgs) == 2 {
				replies = "1 reply"
			}
			fmt.Fprintf(&b, `<div class=label>%s</div><div class=thread>`, replies)
		}
		b.WriteString(`<div class=msg><div class=avatar>ai</div><div><div class=who>aicr<span>APP</span></div>`)
		var blocks []map[string]any
		_ = json.Unmarshal([]byte(m.Blocks), &blocks)
		for _, bl := range blocks {
			b.WriteString(blockHTML(bl))
		}
		b.WriteString(`</div></div>`)
	}
	if len(msgs) > 1 {
		b.WriteString(`</div>`)
	}
	return b.String()
}

func blockHTML(bl map[string]any) string {
	text := func(v any) string { m, _ := v.(map[string]any); s, _ := m["text"].(string); return s }
	switch bl["type"] {
	case "header":
		return "<h3>" + html.EscapeString(text(bl["text"])) + "</h3>"
	case "section":
		return "<div class=sec>" + mrkdwnHTML(text(bl["text"])) + "</div>"
	case "context":
		var parts []string
		els, _ := bl["elements"].([]any)
		for _, e := range els {
			parts = append(parts, mrkdwnHTML(text(e)))
		}
		return "<div class=ctx>" + strings.Join(parts, " ") + "</div>"
	case "actions":
		var out strings.Builder
		out.WriteString("<div class=btns>")
		els, _ := bl["elements"].([]any)
		for _, e := range els {
			out.WriteString("<span class=btn>" + html.EscapeString(text(e.(map[string]any)["text"])) + "</span>")
		}
		return out.String() + "</div>"
	}
	return ""
}

var (
	slackLinkRE = regexp.MustCompile(`<([^|>]+)\|([^>]+)>`)
	slackFmtRE  = []struct {
		re   *regexp.Regexp
		repl string
	}{
		{regexp.MustCompile("`([^`]+)`"), "<code>$1</code>"},
		{regexp.MustCompile(`\*([^*\n]+)\*`), "<b>$1</b>"},
		{regexp.MustCompile(`(^|\s)_([^_\n]+)_`), "$1<i>$2</i>"},
	}
	// The emoji aicr uses, drawn with CSS: a headless browser may have
	// no emoji font.
	slackEmoji = strings.NewReplacer(":red_circle:", dot("#e01e5a"), ":large_orange_circle:", dot("#f2952f"),
		":large_yellow_circle:", dot("#ecb22e"), ":large_blue_circle:", dot("#1d9bd1"), ":white_circle:", dot("#ddd"),
		":white_check_mark:", `<span class=check>✔</span>`, "\n", "<br>")
)

func dot(color string) string { return `<span class=dot style="background:` + color + `"></span>` }

// mrkdwnHTML draws Slack mrkdwn: its links, bold, italics, code and the
// emoji aicr uses; everything else as text.
func mrkdwnHTML(s string) string {
	var out strings.Builder
	last := 0
	for _, m := range slackLinkRE.FindAllStringSubmatchIndex(s, -1) {
		out.WriteString(mrkdwnText(s[last:m[0]]))
		out.WriteString(`<a href="#">` + html.EscapeString(html.UnescapeString(s[m[4]:m[5]])) + `</a>`)
		last = m[1]
	}
	out.WriteString(mrkdwnText(s[last:]))
	return out.String()
}

func mrkdwnText(s string) string {
	s = html.EscapeString(html.UnescapeString(s))
	for _, f := range slackFmtRE {
		s = f.re.ReplaceAllString(s, f.repl)
	}
	return slackEmoji.Replace(s)
}

// feishuHTML draws a Feishu card: its title bar and its Markdown (the
// card's own <font> tags kept).
func feishuHTML(t *testing.T, title, md string) string {
	t.Helper()
	var body bytes.Buffer
	if err := goldmark.New(goldmark.WithRendererOptions(gmhtml.WithUnsafe(), gmhtml.WithHardWraps())).Convert([]byte(md), &body); err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`href="[^"]*"`)
	return "<!doctype html><meta charset=utf-8>" + shotStyle + `<div class=card><div class=head>` + html.EscapeString(title) +
		`</div><div class=body>` + links.ReplaceAllString(body.String(), `href="#"`) + `</div></div>`
}
