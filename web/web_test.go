package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/weblink"
)

var proxyUser = map[string]string{"X-Forwarded-User": "carol"}

// Every response carries the strict CSP and the headers that keep a
// capability URL out of Referer and caches.
func TestSecurityHeadersOnEveryPage(t *testing.T) {
	fx := newFixture(t, "proxy")
	h := fx.handler(nil)
	for _, target := range []string{"/findings", "/findings/" + strconv.FormatInt(fx.login, 10), "/runs", "/runs/" + strconv.FormatInt(fx.runA, 10),
		fx.link(fx.login, weblink.ActionView, fx.now), "/nowhere", "/static/style.css"} {
		rec := fx.do(h, "GET", target, "", proxyUser)
		hd := rec.Header()
		if got := hd.Get("Content-Security-Policy"); got != CSP {
			t.Errorf("%s: CSP = %q", target, got)
		}
		if hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", target, hd)
		}
		if target != "/static/style.css" && hd.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control = %q", target, hd.Get("Cache-Control"))
		}
	}
}

func TestProxyAuth(t *testing.T) {
	fx := newFixture(t, "proxy")
	h := fx.handler(nil)
	cases := []struct {
		name   string
		hdr    map[string]string
		status int
		want   string
	}{
		{"from the proxy", map[string]string{"X-Forwarded-User": "carol"}, 200, "carol"},
		{"header from elsewhere", map[string]string{"X-Forwarded-User": "carol", "RemoteAddr": "192.0.2.9:4000"}, 401, "not in [web] trusted_proxies"},
		{"no user named", map[string]string{}, 401, "did not name a signed-in user in the X-Forwarded-User header"},
	}
	for _, c := range cases {
		rec := fx.do(h, "GET", "/findings", "", c.hdr)
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s: %d, want %d with %q:\n%s", c.name, rec.Code, c.status, c.want, rec.Body)
		}
	}
}

func TestTokenAuthAndLogin(t *testing.T) {
	fx := newFixture(t, "token")
	fx.cfg.BaseURL = "https://aicr.test"
	h := fx.handler(nil)
	if rec := fx.do(h, "GET", "/runs", "", nil); rec.Code != 401 || !strings.Contains(rec.Body.String(), `name="token"`) {
		t.Fatalf("no token: %d\n%s", rec.Code, rec.Body)
	}
	if rec := fx.do(h, "GET", "/runs", "", map[string]string{"Authorization": "Bearer wrong"}); rec.Code != 401 {
		t.Errorf("wrong bearer: %d", rec.Code)
	}
	if rec := fx.do(h, "GET", "/runs", "", map[string]string{"Authorization": "Bearer " + testToken}); rec.Code != 200 {
		t.Errorf("bearer: %d", rec.Code)
	}
	// The login form: its CSRF token, then the cookie.
	page := fx.do(h, "GET", "/login?next=/runs", "", nil).Body.String()
	csrf := formValue(t, page, "csrf")
	if rec := fx.do(h, "POST", "/login", url.Values{"token": {testToken}, "next": {"/runs"}}.Encode(), nil); rec.Code != 403 {
		t.Errorf("login without its CSRF token: %d", rec.Code)
	}
	rec := fx.do(h, "POST", "/login", url.Values{"token": {"nope"}, "csrf": {csrf}}.Encode(), nil)
	if rec.Code != 401 || len(rec.Result().Cookies()) != 0 {
		t.Errorf("wrong token signed in: %d %v", rec.Code, rec.Result().Cookies())
	}
	rec = fx.do(h, "POST", "/login", url.Values{"token": {testToken}, "next": {"//evil.example/x"}, "csrf": {csrf}}.Encode(), nil)
	if rec.Code != 303 || rec.Header().Get("Location") != "/findings" {
		t.Errorf("login redirect: %d %q (an off-site next must not be followed)", rec.Code, rec.Header().Get("Location"))
	}
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || !cookies[0].Secure || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie: %+v", cookies)
	}
	if strings.Contains(cookies[0].Value, testToken) {
		t.Error("the cookie holds the token itself")
	}
	if rec := fx.do(h, "GET", "/runs", "", map[string]string{"Cookie": cookies[0].Name + "=" + cookies[0].Value}); rec.Code != 200 {
		t.Errorf("cookie: %d", rec.Code)
	}
	later := fx.handler(func() time.Time { return fx.now.Add(sessionTTL + time.Minute) })
	if rec := fx.do(later, "GET", "/runs", "", map[string]string{"Cookie": cookies[0].Name + "=" + cookies[0].Value}); rec.Code != 401 {
		t.Errorf("expired session: %d", rec.Code)
	}
}

var formValueRE = regexp.MustCompile(`name="([a-z]+)" value="([^"]*)"`)

func formValue(t *testing.T, page, name string) string {
	t.Helper()
	for _, m := range formValueRE.FindAllStringSubmatch(page, -1) {
		if m[1] == name {
			return strings.ReplaceAll(m[2], "&amp;", "&")
		}
	}
	t.Fatalf("no %s in the page:\n%s", name, page)
	return ""
}

var formActionRE = regexp.MustCompile(`<form method="post" action="([^"]*)"`)

// A signed action link: its GET shows the finding and a confirm form and
// changes nothing; its POST needs the form's token and does the action
// as "link" and the name given, recording where it came from.
func TestSignedActionLink(t *testing.T) {
	fx := newFixture(t, "proxy")
	h := fx.handler(nil)
	ctx := context.Background()
	link := fx.link(fx.login, string(findings.ActionFalsePositive), fx.now)
	rec := fx.do(h, "GET", link, "", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "Confirm: False positive") {
		t.Fatalf("GET %s: %d\n%s", link, rec.Code, rec.Body)
	}
	if f, _ := fx.store.GetFinding(ctx, fx.login); f.State != findings.StateOpen {
		t.Fatalf("a GET changed the state to %s", f.State)
	}
	page := rec.Body.String()
	csrf := formValue(t, page, "csrf")
	action := strings.ReplaceAll(formActionRE.FindStringSubmatch(page)[1], "&amp;", "&")
	if action != link {
		t.Errorf("form posts to %q, want the link %q", action, link)
	}
	remote := map[string]string{"RemoteAddr": "127.0.0.1:1", "X-Forwarded-For": "203.0.113.7"}
	if rec := fx.do(h, "POST", link, url.Values{"name": {"dave"}}.Encode(), remote); rec.Code != 403 {
		t.Errorf("POST without a token: %d", rec.Code)
	}
	other := fx.link(fx.hostile, string(findings.ActionFalsePositive), fx.now)
	if rec := fx.do(h, "POST", other, url.Values{"csrf": {csrf}}.Encode(), remote); rec.Code != 403 {
		t.Errorf("the token worked for another link: %d", rec.Code)
	}
	for _, cross := range []map[string]string{{"Origin": "null", "Sec-Fetch-Site": "cross-site"}, {"Origin": "http://evil.example"}} {
		if rec := fx.do(h, "POST", link, url.Values{"csrf": {csrf}}.Encode(), cross); rec.Code != 403 {
			t.Errorf("a cross-site POST (%v): %d", cross, rec.Code)
		}
	}
	rec = fx.do(h, "POST", link, url.Values{"csrf": {csrf}, "name": {"dave\x1b[31m"}, "reason": {"generated code"}}.Encode(), remote)
	if rec.Code != 303 || !strings.HasPrefix(rec.Header().Get("Location"), "/f/"+strconv.FormatInt(fx.login, 10)+"/view?") {
		t.Fatalf("POST: %d %q\n%s", rec.Code, rec.Header().Get("Location"), rec.Body)
	}
	f, err := fx.store.GetFinding(ctx, fx.login)
	fx.must(err)
	if f.State != findings.StateDismissed || f.Dismissal != findings.ActionFalsePositive || f.ActedBy != "link:dave[31m" || f.ActedVia != findings.ViaWeb {
		t.Errorf("after the POST: %s %s by %q via %s", f.State, f.Dismissal, f.ActedBy, f.ActedVia)
	}
	hist, err := fx.store.FindingHistory(ctx, fx.login)
	fx.must(err)
	last := hist[len(hist)-1]
	if last.Kind != findings.EventDismissed || !strings.Contains(last.Note, "generated code") || !strings.Contains(last.Note, "web link from 203.0.113.7") {
		t.Errorf("history: %+v", last)
	}
	// The view link it redirects to shows the new state and, signed for
	// the viewer, the action that applies now.
	view := fx.do(h, "GET", rec.Header().Get("Location"), "", nil).Body.String()
	if !strings.Contains(view, "Dismissed as a false positive") || !strings.Contains(view, "/f/"+strconv.FormatInt(fx.login, 10)+"/reopen?exp=") {
		t.Errorf("view page after the action:\n%s", view)
	}
	if strings.Contains(view, `href="/runs/`) || strings.Contains(view, `href="/findings`) {
		t.Error("a link's page links to pages that need sign-in")
	}
	// The same link again: nothing to do, said so.
	if rec := fx.do(h, "POST", link, url.Values{"csrf": {csrf}}.Encode(), remote); rec.Code != 409 {
		t.Errorf("second dismissal: %d", rec.Code)
	}
}

func TestRefusedLinks(t *testing.T) {
	fx := newFixture(t, "proxy")
	h := fx.handler(nil)
	id := strconv.FormatInt(fx.login, 10)
	expired := fx.link(fx.login, weblink.ActionView, fx.now.Add(-48*time.Hour))
	good := fx.link(fx.login, weblink.ActionView, fx.now)
	cases := []struct{ name, target, want string }{
		{"expired", expired, "This link has expired"},
		{"another finding", strings.Replace(good, "/f/"+id+"/", "/f/"+strconv.FormatInt(fx.hostile, 10)+"/", 1), "This link is not valid"},
		{"another action", strings.Replace(good, "/view?", "/wont_fix?", 1), "This link is not valid"},
		{"no signature", "/f/" + id + "/view", "This link is not valid"},
	}
	for _, c := range cases {
		rec := fx.do(h, "GET", c.target, "", nil)
		if rec.Code != 403 || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s: %d\n%s", c.name, rec.Code, rec.Body)
		}
		if rec := fx.do(h, "POST", c.target, "csrf=x", nil); rec.Code != 403 {
			t.Errorf("%s POST: %d", c.name, rec.Code)
		}
	}
	if rec := fx.do(h, "GET", "/f/"+id+"/delete?exp=1&sig=x", "", nil); rec.Code != 404 {
		t.Errorf("unknown action: %d", rec.Code)
	}
}

// A signed-in user acts from the finding page with the page's token; a
// token from another user's page or none is refused.
func TestSignedInUserActs(t *testing.T) {
	fx := newFixture(t, "proxy")
	h := fx.handler(nil)
	page := fx.do(h, "GET", "/findings/"+strconv.FormatInt(fx.hostile, 10), "", proxyUser).Body.String()
	csrf := formValue(t, page, "csrf")
	target := "/findings/" + strconv.FormatInt(fx.hostile, 10) + "/act"
	body := url.Values{"csrf": {csrf}, "action": {"wont_fix"}, "reason": {"legacy"}}.Encode()
	if rec := fx.do(h, "POST", target, body, map[string]string{"X-Forwarded-User": "mallory"}); rec.Code != 403 {
		t.Errorf("another user's token: %d", rec.Code)
	}
	if rec := fx.do(h, "POST", target, url.Values{"action": {"wont_fix"}}.Encode(), proxyUser); rec.Code != 403 {
		t.Errorf("no token: %d", rec.Code)
	}
	rec := fx.do(h, "POST", target, body, proxyUser)
	if rec.Code != 303 {
		t.Fatalf("act: %d\n%s", rec.Code, rec.Body)
	}
	f, err := fx.store.GetFinding(context.Background(), fx.hostile)
	fx.must(err)
	if f.State != findings.StateDismissed || f.ActedBy != "carol" {
		t.Fatalf("after: %s by %s", f.State, f.ActedBy)
	}
	page = fx.do(h, "GET", rec.Header().Get("Location"), "", proxyUser).Body.String()
	if !strings.Contains(page, "Dismissed as won&#39;t fix") || !strings.Contains(page, `value="reopen"`) {
		t.Errorf("page after the action:\n%s", page)
	}
	rec = fx.do(h, "POST", target, url.Values{"csrf": {formValue(t, page, "csrf")}, "action": {"reopen"}}.Encode(), proxyUser)
	if f, _ := fx.store.GetFinding(context.Background(), fx.hostile); rec.Code != 303 || !f.State.Active() {
		t.Errorf("reopen: %d, state %s", rec.Code, f.State)
	}
}

// No committer or agent text becomes markup, a link, an image, a script
// or an escape sequence on any page.
func TestHostileTextRendersAsText(t *testing.T) {
	fx := newFixture(t, "proxy")
	h := fx.handler(nil)
	for _, target := range []string{"/findings", "/findings/" + strconv.FormatInt(fx.hostile, 10), "/findings/" + strconv.FormatInt(fx.evilFile, 10),
		"/runs", "/runs/" + strconv.FormatInt(fx.runA, 10), "/runs/" + strconv.FormatInt(fx.runB, 10), fx.link(fx.hostile, weblink.ActionView, fx.now)} {
		rec := fx.do(h, "GET", target, "", proxyUser)
		body := rec.Body.String()
		if rec.Code != 200 {
			t.Fatalf("%s: %d\n%s", target, rec.Code, body)
		}
		assertInertHTML(t, target, body)
	}
	page := fx.do(h, "GET", "/findings/"+strconv.FormatInt(fx.hostile, 10), "", proxyUser).Body.String()
	if !strings.Contains(page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Errorf("the hostile message is not shown as text:\n%s", page)
	}
}

var tagRE = regexp.MustCompile(`(?i)<(script|img|iframe|object|embed|svg|base|meta http-equiv)|<[a-z][^>]*\son[a-z]+\s*=|="javascript:`)

func assertInertHTML(t *testing.T, what, body string) {
	t.Helper()
	if m := tagRE.FindString(body); m != "" {
		t.Errorf("%s: %q in the page", what, m)
	}
	for _, bad := range []string{"href=\"http://" + imtest.Evil, "src=\"http://" + imtest.Evil, "\x1b", "\u202E", leaked} {
		if strings.Contains(body, bad) {
			t.Errorf("%s: %q in the page", what, bad)
		}
	}
}

func TestFindingExcerpt(t *testing.T) {
	fx := newFixture(t, "proxy")
	h := fx.handler(nil)
	page := fx.do(h, "GET", "/findings/"+strconv.FormatInt(fx.login, 10), "", proxyUser).Body.String()
	for _, want := range []string{`<span class="ln anchor"><span class="n">12</span>	err := s.Check(pass)`, `<span class="ln"><span class="n">8</span>`, "web/login.go as r42 has it", "&lt;redacted&gt;"} {
		if !strings.Contains(strings.ReplaceAll(page, "    ", "\t"), want) {
			t.Errorf("excerpt lacks %q:\n%s", want, page)
		}
	}
	gone := fx.do(h, "GET", "/findings/"+strconv.FormatInt(fx.evilFile, 10), "", proxyUser).Body.String()
	if !strings.Contains(gone, "The code of r43 is gone") || !strings.Contains(gone, "plain message") {
		t.Errorf("dropped src/:\n%s", gone)
	}
}

func TestFindingListFilters(t *testing.T) {
	fx := newFixture(t, "proxy")
	h := fx.handler(nil)
	count := func(q string) int {
		rec := fx.do(h, "GET", "/findings?"+q, "", proxyUser)
		if rec.Code != 200 {
			t.Fatalf("%s: %d\n%s", q, rec.Code, rec.Body)
		}
		return strings.Count(rec.Body.String(), `<td><a href="/findings/`)
	}
	if n := count(""); n != 5 {
		t.Errorf("all: %d", n)
	}
	if n := count("severity=high"); n != 3 {
		t.Errorf("high or worse: %d", n)
	}
	if n := count("path=web/"); n != 3 {
		t.Errorf("path web/: %d", n)
	}
	if n := count("author=alice&category=style"); n != 1 {
		t.Errorf("alice's style: %d", n)
	}
	if n := count("state=dismissed"); n != 0 {
		t.Errorf("dismissed: %d", n)
	}
	for _, q := range []string{"state=gone", "severity=severe", "offset=-1"} {
		if rec := fx.do(h, "GET", "/findings?"+q, "", proxyUser); rec.Code != 400 {
			t.Errorf("%s: %d", q, rec.Code)
		}
	}
}

func TestRunPage(t *testing.T) {
	fx := newFixture(t, "proxy")
	h := fx.handler(nil)
	// As a reader sees it: "+" from the catalogue is escaped as &#43;.
	page := html.UnescapeString(fx.do(h, "GET", "/runs/"+strconv.FormatInt(fx.runA, 10), "", proxyUser).Body.String())
	for _, want := range []string{"team-slack", "feishu", "sign match fail", "As stored for channel team-slack", "qwen2.5-coder",
		"2 passes, 7 turns, 12,000 input + 800 output tokens", "$0.0123", "Mostly fine; one **critical** problem", `href="/findings/` + strconv.FormatInt(fx.login, 10) + `"`, "hard-coded-credential"} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if rec := fx.do(h, "GET", "/runs/999", "", proxyUser); rec.Code != 404 {
		t.Errorf("unknown run: %d", rec.Code)
	}
}

func TestRunListPages(t *testing.T) {
	fx := newFixture(t, "proxy")
	ctx := context.Background()
	for i := range pageSize + 3 {
		_, err := fx.store.Enqueue(ctx, triggersEvent(100+i), "trigger", fx.now)
		fx.must(err)
	}
	h := fx.handler(nil)
	first := fx.do(h, "GET", "/runs", "", proxyUser).Body.String()
	if n := strings.Count(first, `<td><a href="/runs/`); n != pageSize {
		t.Fatalf("first page: %d runs", n)
	}
	next := regexp.MustCompile(`href="(/runs\?before=\d+)">Older`).FindStringSubmatch(first)
	if next == nil {
		t.Fatalf("no next page:\n%s", first)
	}
	second := fx.do(h, "GET", next[1], "", proxyUser).Body.String()
	if n := strings.Count(second, `<td><a href="/runs/`); n != 5 || !strings.Contains(second, `href="/runs/`+strconv.FormatInt(fx.runA, 10)+`"`) {
		t.Errorf("second page: %d runs\n%s", n, second)
	}
}

// A private key block around the anchored lines is redacted whole, line
// numbers kept.
func TestRedactLinesPrivateKey(t *testing.T) {
	key := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1x2y3z4w5v6u7t8s9r0q1p2o3n4m5l6k7j8i9h0g1f2e3d4c\nb5a6Z7Y8X9W0V1U2T3S4R5Q6P7O8N9M0L1K2J3I4H5G6F7E8D9C0B1A2z3y4x5w6\n-----END RSA PRIVATE KEY-----"
	lines := strings.Split("a := 1\n"+key+"\nb := 2", "\n")
	redactLines(lines, 1, len(lines))
	if len(lines) != 6 || lines[0] != "a := 1" || lines[5] != "b := 2" {
		t.Fatalf("lines moved: %q", lines)
	}
	for _, l := range lines[1:5] {
		if strings.Contains(l, "MIIEow") || strings.Contains(l, "b5a6Z7") {
			t.Errorf("key material shown: %q", lines)
		}
	}
}

// Under a base_url with a path, every link, form and redirect keeps it,
// whether or not the reverse proxy strips it from requests.
func TestBaseURLPath(t *testing.T) {
	fx := newFixture(t, "proxy")
	fx.cfg.BaseURL, fx.signer.BaseURL = "http://aicr.test/tools/aicr/", "http://aicr.test/tools/aicr"
	h := fx.handler(nil)
	for _, target := range []string{"/tools/aicr/findings", "/findings"} {
		rec := fx.do(h, "GET", target, "", proxyUser)
		body := rec.Body.String()
		if rec.Code != 200 || !strings.Contains(body, `href="/tools/aicr/static/style.css"`) ||
			!strings.Contains(body, `href="/tools/aicr/findings/`+strconv.FormatInt(fx.login, 10)+`"`) || strings.Contains(body, `href="/findings`) {
			t.Errorf("GET %s: %d\n%s", target, rec.Code, body)
		}
	}
	link := "/tools/aicr" + fx.link(fx.login, string(findings.ActionUseful), fx.now)
	page := fx.do(h, "GET", link, "", nil).Body.String()
	action := strings.ReplaceAll(formActionRE.FindStringSubmatch(page)[1], "&amp;", "&")
	if action != link {
		t.Errorf("form posts to %q, want %q", action, link)
	}
	rec := fx.do(h, "POST", action, url.Values{"csrf": {formValue(t, page, "csrf")}}.Encode(), nil)
	if rec.Code != 303 || !strings.HasPrefix(rec.Header().Get("Location"), "/tools/aicr/f/"+strconv.FormatInt(fx.login, 10)+"/view?") {
		t.Errorf("POST: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if rec := fx.do(h, "GET", "/tools/aicrx/findings", "", proxyUser); rec.Code != 404 {
		t.Errorf("a look-alike prefix: %d", rec.Code)
	}
}

func TestHTTPURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://svn.example.com/viewvc?r=42": "https://svn.example.com/viewvc?r=42",
		"javascript:alert(1)":                 "",
		"//evil.example/x":                    "",
		"http://a.example/\"onmouseover=x":    "",
		"data:text/html,x":                    "",
	} {
		if got := httpURL(in); got != want {
			t.Errorf("httpURL(%q) = %q", in, got)
		}
	}
}

// Options that do not validate serve no page, only the reason.
func TestNewRefusesBadOptions(t *testing.T) {
	fx := newFixture(t, "proxy")
	o := Options{Store: fx.store, Config: fx.cfg}
	o.Config.TrustedProxies = []string{"10.0.0.0/99"}
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "no link key") || !strings.Contains(err.Error(), `"10.0.0.0/99"`) {
		t.Fatalf("Validate = %v", err)
	}
	rec := fx.do(New(o), "GET", "/findings", "", proxyUser)
	if rec.Code != 503 || rec.Header().Get("Content-Security-Policy") != CSP || !strings.Contains(rec.Body.String(), "no link key") {
		t.Errorf("misconfigured page: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}

// Where an action came from: behind a trusted proxy, the last address in
// X-Forwarded-For that is not a proxy; from anywhere else, the peer.
func TestClientAddr(t *testing.T) {
	s := &server{}
	for _, p := range []string{"127.0.0.1", "10.0.0.0/8"} {
		prefix, err := config.ParseTrustedProxy(p)
		if err != nil {
			t.Fatal(err)
		}
		s.proxies = append(s.proxies, prefix)
	}
	cases := []struct{ remote, xff, want string }{
		{"127.0.0.1:1", "198.51.100.1, 203.0.113.7", "203.0.113.7"},
		{"127.0.0.1:1", "203.0.113.7, 10.1.2.3", "203.0.113.7"},
		{"192.0.2.5:1", "203.0.113.7", "192.0.2.5"},
		{"127.0.0.1:1", "", "127.0.0.1"},
		{"127.0.0.1:1", "not-an-ip", "127.0.0.1"},
		{"[::ffff:127.0.0.1]:1", "203.0.113.8", "203.0.113.8"},
	}
	for _, c := range cases {
		r, _ := http.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := s.clientAddr(r); got != c.want {
			t.Errorf("%s with %q: %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
}
