package web

import (
	"context"
	"html"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/weblink"
)

// templateKey finds the catalogue keys and enum kinds the templates name.
var templateKey = regexp.MustCompile(`\$\.(T|Enum) "([^"]+)"`)

// Every key a template names is in the catalogue (a typo would show the
// key itself on the page), and every value an enum the page shows can
// take has its word.
func TestTemplateKeysExist(t *testing.T) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil || len(names) == 0 {
		t.Fatal(names, err)
	}
	kinds := map[string]bool{}
	n := 0
	for _, name := range names {
		b, err := fs.ReadFile(templateFS, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range templateKey.FindAllStringSubmatch(string(b), -1) {
			if m[1] == "Enum" {
				kinds[m[2]] = true
				continue
			}
			n++
			if _, ok := im.CatalogueFormat(im.LangEnglish, im.Key(m[2])); !ok {
				t.Errorf("%s names %q, which the catalogue lacks", name, m[2])
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d keys found in the templates: the pattern no longer matches them", n)
	}
	enums := map[string][]string{
		"run":     {string(audit.RunQueued), string(audit.RunRunning), string(audit.RunSucceeded), string(audit.RunFailed), string(audit.RunSkipped), string(audit.RunRetrying), string(audit.RunHeld)},
		"source":  {string(triggers.SourceTrigger), string(triggers.SourceSpool), string(triggers.SourceManual), string(triggers.SourceReconcile)},
		"purpose": {string(delivery.PurposeReport), string(delivery.PurposeError), string(delivery.PurposeResolution), string(delivery.PurposeDigest)},
		"send":    {string(delivery.StatusPending), string(delivery.StatusSent), string(delivery.StatusFailed), string(delivery.StatusSuppressed), string(delivery.StatusDead), string(delivery.StatusUnknown)},
		"via":     {string(findings.ViaSlack), string(findings.ViaWeb), string(findings.ViaCLI), string(findings.ViaMCP), string(findings.ViaReview)},
		"state":   {},
		"event": {string(findings.EventReported), string(findings.EventSeen), string(findings.EventResolved), string(findings.EventReopened),
			string(findings.EventDismissed), string(findings.EventUseful), string(findings.EventMoved)},
	}
	for _, st := range findings.States {
		enums["state"] = append(enums["state"], string(st))
	}
	for kind := range kinds {
		if _, ok := enums[kind]; !ok {
			t.Errorf("the templates show enum %q, which this test does not know", kind)
		}
	}
	for kind, values := range enums {
		for _, v := range values {
			if got := enumWord(im.LangChinese, kind, v); got == v {
				t.Errorf("%s %q has no word in the catalogue", kind, v)
			}
		}
	}
}

var (
	preBlock = regexp.MustCompile(`(?s)<pre.*?</pre>`)
	htmlTag  = regexp.MustCompile(`(?s)<[^>]*>`)
	// allowedWords stay as they are in every language: names, units,
	// the time zone.
	allowedWords = strings.NewReplacer("aicr", "", "UTC", "", "HTTP", "", "token", "", "Slack", "", "MCP", "")
)

// visibleText is what a reader sees of page, without the code excerpts
// and the stored content (messages, paths, names: not aicr's words).
func visibleText(page string, content []string) string {
	s := html.UnescapeString(htmlTag.ReplaceAllString(preBlock.ReplaceAllString(page, " "), " "))
	// Longest first, so a message goes before a word inside it.
	for i := range content {
		for j := i + 1; j < len(content); j++ {
			if len(content[j]) > len(content[i]) {
				content[i], content[j] = content[j], content[i]
			}
		}
	}
	for _, c := range content {
		if c != "" {
			s = strings.ReplaceAll(s, c, " ")
		}
	}
	return strings.Join(strings.Fields(allowedWords.Replace(s)), " ")
}

// content is the fixture's stored text as the page shows it.
func (fx *fixture) content() []string {
	fx.t.Helper()
	ctx := context.Background()
	list, err := fx.store.ListFindings(ctx, findings.Filter{Limit: 100})
	fx.must(err)
	out := []string{"carol"}
	add := func(ss ...string) {
		for _, s := range ss {
			out = append(out, text(s))
		}
	}
	for _, f := range list {
		add(f.Message, f.Suggestion, f.Path, f.Repo, f.Category, f.Agent, f.Model, f.FirstAuthor, f.ResolvedAuthor, f.ActedBy, f.Note, f.Path+":"+strconv.Itoa(f.Line))
		hist, err := fx.store.FindingHistory(ctx, f.ID)
		fx.must(err)
		for _, e := range hist {
			add(e.Actor, e.Note, e.Path)
		}
	}
	for _, id := range []int64{fx.runA, fx.runB} {
		run, err := fx.store.GetRun(ctx, id)
		fx.must(err)
		add(run.Repo, run.User)
		for _, s := range run.Summaries {
			add(s.Title, s.Markdown)
		}
		for _, d := range run.Dispatches {
			add(d.Channel, d.LastError)
		}
	}
	return out
}

// englishWord is a word of three letters or more; what is left of a
// Chinese page once the content is out must have none.
var englishWord = regexp.MustCompile(`[A-Za-z]{3,}`)

// A Chinese page says every word of aicr's in Chinese: the finding list,
// a finding (signed in and through a signed link), a run, the error
// page; <html lang> says so, dates are written as Chinese writes them.
func TestChinesePages(t *testing.T) {
	fx := newFixtureIn(t, "proxy", im.LangChinese)
	h := fx.handler(nil)
	content := fx.content()
	login := strconv.FormatInt(fx.login, 10)
	cases := []struct {
		name, target string
		status       int
		want         []string
		typed        []string // what the reader types, as typed
	}{
		{"finding list", "/findings", 200, []string{"<title>问题 · aicr</title>", "运行记录", "严重程度", "未解决", "首次发现", "3 小时前", "筛选"}, nil},
		{"finding", "/findings/" + login, 200, []string{"<title>问题 " + login + " · aicr</title>", "首次发现", "2026年12月2日 06:00 UTC", "代码", "历史", "首次报告", "误报", "接受风险", `sev-medium">中<`}, nil},
		{"signed link", fx.link(fx.login, string(findings.ActionFalsePositive), fx.now), 200, []string{"误报？", "你的名字", "确认：误报"}, []string{"“link”"}},
		{"run", "/runs/" + strconv.FormatInt(fx.runA, 10), 200, []string{"运行 " + strconv.FormatInt(fx.runA, 10), "成功", "触发器", "投递", "已发送", "2 轮审查，7 次往返，输入 12,000", "aicr 审查"}, nil},
		{"error page", "/findings/999", 404, []string{"没有这个问题", "问题 999 不存在"}, nil},
		{"bad filter", "/findings?state=closed", 400, []string{"筛选条件有误"}, []string{"state", "active", "open", "reopened", "resolved", "dismissed", "closed"}},
	}
	for _, c := range cases {
		rec := fx.do(h, "GET", c.target, "", proxyUser)
		page := rec.Body.String()
		if rec.Code != c.status {
			t.Errorf("%s: %d, want %d", c.name, rec.Code, c.status)
		}
		if !strings.Contains(page, `<html lang="zh-CN">`) {
			t.Errorf("%s: no <html lang=\"zh-CN\">", c.name)
		}
		for _, w := range c.want {
			if !strings.Contains(html.UnescapeString(page), w) {
				t.Errorf("%s lacks %q", c.name, w)
			}
		}
		seen := visibleText(page, append(c.typed, content...))
		if w := englishWord.FindAllString(seen, -1); len(w) > 0 {
			t.Errorf("%s has English words %q:\n%s", c.name, w, seen)
		}
	}
}

// ?lang= overrides [web] language for the reader, and a cookie keeps it
// for the next pages (and their forms); an unknown value leaves the
// configured language.
func TestLangParameter(t *testing.T) {
	fx := newFixture(t, "proxy")
	h := fx.handler(nil)
	rec := fx.do(h, "GET", "/findings?lang=zh-CN", "", proxyUser)
	if !strings.Contains(rec.Body.String(), `<html lang="zh-CN">`) || !strings.Contains(rec.Body.String(), "严重程度") {
		t.Fatalf("?lang=zh-CN: not Chinese:\n%s", rec.Body)
	}
	var cookie string
	for _, c := range rec.Result().Cookies() {
		if c.Name == langCookie {
			cookie = c.Name + "=" + c.Value
		}
	}
	if cookie != langCookie+"=zh-CN" {
		t.Fatalf("cookie %q", cookie)
	}
	hdr := map[string]string{"X-Forwarded-User": "carol", "Cookie": cookie}
	link := fx.link(fx.login, weblink.ActionView, fx.now)
	for _, target := range []string{"/runs", link} {
		if page := fx.do(h, "GET", target, "", hdr).Body.String(); !strings.Contains(page, `<html lang="zh-CN">`) {
			t.Errorf("%s with the cookie: not Chinese", target)
		}
	}
	// A signed link with ?lang= still verifies, and the page is Chinese.
	if rec := fx.do(h, "GET", link+"&lang=zh", "", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), "首次发现") {
		t.Errorf("signed link with lang: %d", rec.Code)
	}
	for _, target := range []string{"/findings", "/findings?lang=fr"} {
		if page := fx.do(h, "GET", target, "", proxyUser).Body.String(); !strings.Contains(page, `<html lang="en">`) || !strings.Contains(page, "Severity") {
			t.Errorf("%s: not the configured English", target)
		}
	}
	hdr["Cookie"] = langCookie + "=en"
	if page := fx.do(h, "GET", "/findings?lang=zh-CN", "", hdr).Body.String(); !strings.Contains(page, `<html lang="zh-CN">`) {
		t.Error("?lang= does not override the cookie")
	}
}
