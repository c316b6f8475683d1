package web

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/weblink"
)

// browser starts Debian's chromium, headless (and without its sandbox,
// which needs privileges a container or root lacks). Without a browser
// the test is skipped, and fails under AICR_REQUIRE_BROWSER=1 (CI).
func browser(t *testing.T) context.Context {
	t.Helper()
	var exe string
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		if os.Getenv("AICR_REQUIRE_BROWSER") == "1" {
			t.Fatal("chromium is not installed (make deps installs it); AICR_REQUIRE_BROWSER=1 makes that a failure")
		}
		t.Skip("chromium is not installed (make deps installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("lang", "en-US"))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser and lives as long as its context:
	// no timeout on it, one on each step after.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// step runs browser actions with a bound, failing the test on error.
func step[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// navigate runs actions that load a page (a click on a link or a
// button) and returns the page's response.
func navigate(t *testing.T, ctx context.Context, what string, a chromedp.Action[chromedp.Void]) *network.Response {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.RunResponse(c, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return resp
}

// shot keeps a screenshot of the whole page in $AICR_TEST_ARTIFACTS (a
// temp dir when unset); with AICR_UPDATE_SCREENSHOTS=1 the README's
// ones go to docs/img too.
func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png := step(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("AICR_UPDATE_SCREENSHOTS") == "1" && (name == "finding" || name == "run") {
		if err := os.WriteFile(filepath.Join("..", "docs", "img", "web-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("AICR_TEST_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, "web")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func checkPage(t *testing.T, what string, resp *network.Response, status int64) {
	t.Helper()
	if resp.Status != status {
		t.Errorf("%s: HTTP %d, want %d", what, resp.Status, status)
	}
	if got := fmt.Sprint(resp.Headers["Content-Security-Policy"]); got != CSP {
		t.Errorf("%s: the browser got CSP %q", what, got)
	}
}

// The pages in a real browser: sign in with the token, the finding list,
// a finding with hostile text, an action clicked and the state changed,
// a run, the runs list, a signed link's confirm form without sign-in,
// and an expired link refused.
func TestPagesInChromium(t *testing.T) {
	fx := newFixture(t, "token")
	srv := httptest.NewServer(fx.handler(nil))
	defer srv.Close()
	ctx, dir := browser(t), artifacts(t)
	t.Logf("screenshots in %s", dir)

	resp := step(t, ctx, "open /findings", chromedp.NavigateResponse(srv.URL+"/findings"))
	checkPage(t, "sign-in page", resp, 401)
	shot(t, ctx, dir, "login")
	step(t, ctx, "type the token", chromedp.SendKeys(chromedp.ID("token"), testToken))
	resp = navigate(t, ctx, "sign in", chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	checkPage(t, "finding list", resp, 200)
	if n := step(t, ctx, "count rows", chromedp.Evaluate[int](`document.querySelectorAll("table.list tbody tr").length`)); n != 5 {
		t.Errorf("finding list: %d rows, want 5", n)
	}
	shot(t, ctx, dir, "findings")

	signedInPages(t, ctx, fx, srv.URL, dir)
	linkPages(t, ctx, fx, srv.URL, dir)
}

// signedInPages: a finding with hostile text reached from the list, a
// finding acted on, a run, the runs list.
func signedInPages(t *testing.T, ctx context.Context, fx *fixture, base, dir string) {
	// The hostile finding, reached by its link in the list.
	hostile := strconv.FormatInt(fx.hostile, 10)
	resp := navigate(t, ctx, "open the hostile finding", chromedp.Click(chromedp.CSS(`td a[href="/findings/`+hostile+`"]`)))
	checkPage(t, "hostile finding", resp, 200)
	msg := step(t, ctx, "read the message", chromedp.TextContent(chromedp.CSS("p.message")))
	if !strings.Contains(msg, `<script>alert("x")</script><img src=x onerror=alert(1)>`) {
		t.Errorf("the hostile message did not render as text: %q", msg)
	}
	bad := step(t, ctx, "look for injected nodes", chromedp.Evaluate[int](
		`document.querySelectorAll("script, img, iframe, p.message *, a[href*='evil.example'], a[href^='javascript:']").length`))
	if bad != 0 {
		t.Errorf("%d injected nodes on the page", bad)
	}
	shot(t, ctx, dir, "finding-hostile")

	// The README's finding: an excerpt with its anchored lines, acted on.
	login := strconv.FormatInt(fx.login, 10)
	resp = step(t, ctx, "open a finding", chromedp.NavigateResponse(base+"/findings/"+login))
	checkPage(t, "finding", resp, 200)
	if n := step(t, ctx, "count anchored lines", chromedp.Evaluate[int](`document.querySelectorAll("pre.code .ln.anchor").length`)); n != 3 {
		t.Errorf("%d anchored lines highlighted, want 3 (12-14)", n)
	}
	resp = navigate(t, ctx, "click useful", chromedp.Click(chromedp.CSS(`button[value="useful"]`)))
	checkPage(t, "finding marked useful", resp, 200)
	if done := step(t, ctx, "read the confirmation", chromedp.TextContent(chromedp.CSS(".done"))); !strings.Contains(done, "useful") {
		t.Errorf("after useful: %q", done)
	}
	shot(t, ctx, dir, "finding")
	step(t, ctx, "give a reason", chromedp.SendKeys(chromedp.ID("reason"), "the caller checks it"))
	resp = navigate(t, ctx, "click false positive", chromedp.Click(chromedp.CSS(`button[value="false_positive"]`)))
	checkPage(t, "finding after the action", resp, 200)
	if st := step(t, ctx, "read the state", chromedp.TextContent(chromedp.CSS(".head .state"))); st != "Dismissed" {
		t.Errorf("state on the page after the click: %q", st)
	}
	f, err := fx.store.GetFinding(ctx, fx.login)
	fx.must(err)
	if f.State != findings.StateDismissed || f.ActedBy != tokenActor || !strings.Contains(f.Note, "the caller checks it") {
		t.Errorf("stored after the click: %s by %q, %q", f.State, f.ActedBy, f.Note)
	}
	shot(t, ctx, dir, "finding-dismissed")

	resp = step(t, ctx, "open the run", chromedp.NavigateResponse(base+"/runs/"+strconv.FormatInt(fx.runA, 10)))
	checkPage(t, "run", resp, 200)
	shot(t, ctx, dir, "run")
	resp = navigate(t, ctx, "open the runs", chromedp.Click(chromedp.CSS(`nav a[href="/runs"]`)))
	checkPage(t, "runs", resp, 200)
	shot(t, ctx, dir, "runs")

}

// linkPages: signed out, a report's action link still works, through
// its form; an expired one is refused.
func linkPages(t *testing.T, ctx context.Context, fx *fixture, base, dir string) {
	resp := navigate(t, ctx, "sign out", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)))
	checkPage(t, "after signing out", resp, 200)
	resp = step(t, ctx, "open the list signed out", chromedp.NavigateResponse(base+"/findings"))
	checkPage(t, "list signed out", resp, 401)
	resp = step(t, ctx, "open an action link", chromedp.NavigateResponse(base+fx.link(fx.hostile, string(findings.ActionWontFix), fx.now)))
	checkPage(t, "action link", resp, 200)
	step(t, ctx, "type a name", chromedp.SendKeys(chromedp.ID("name"), "Erin"))
	shot(t, ctx, dir, "link-confirm")
	resp = navigate(t, ctx, "confirm", chromedp.Click(chromedp.CSS(`button[name="confirm"]`)))
	checkPage(t, "after confirming", resp, 200)
	if done := step(t, ctx, "read the confirmation", chromedp.TextContent(chromedp.CSS(".done"))); !strings.Contains(done, "won't fix") {
		t.Errorf("confirmation: %q", done)
	}
	if f, _ := fx.store.GetFinding(ctx, fx.hostile); f.State != findings.StateDismissed || f.ActedBy != "link:Erin" {
		t.Errorf("stored after the link: %s by %q", f.State, f.ActedBy)
	}
	shot(t, ctx, dir, "link-done")

	resp = step(t, ctx, "open an expired link", chromedp.NavigateResponse(base+fx.link(fx.login, weblink.ActionView, fx.now.Add(-30*24*time.Hour))))
	checkPage(t, "expired link", resp, 403)
	if h1 := step(t, ctx, "read the refusal", chromedp.TextContent(chromedp.CSS("h1"))); h1 != "This link has expired" {
		t.Errorf("expired link page says %q", h1)
	}
	shot(t, ctx, dir, "link-expired")
}

// A Chinese team's signed link in a real browser: the finding page in
// zh-CN (<html lang>, state, sections), its action link's confirm form
// and the confirmation, all in Chinese, through the form's CSRF token.
func TestChineseFindingInChromium(t *testing.T) {
	fx := newFixtureIn(t, "token", im.LangChinese)
	srv := httptest.NewServer(fx.handler(nil))
	defer srv.Close()
	ctx, dir := browser(t), artifacts(t)

	resp := step(t, ctx, "open a finding link", chromedp.NavigateResponse(srv.URL+fx.link(fx.login, weblink.ActionView, fx.now)))
	checkPage(t, "zh finding", resp, 200)
	if lang := step(t, ctx, "read the page's language", chromedp.Evaluate[string](`document.documentElement.lang`)); lang != "zh-CN" {
		t.Errorf("<html lang> = %q", lang)
	}
	if st := step(t, ctx, "read the state", chromedp.TextContent(chromedp.CSS(".head .state"))); st != "未解决" {
		t.Errorf("state: %q", st)
	}
	h2 := step(t, ctx, "read the sections", chromedp.Evaluate[string](`[...document.querySelectorAll("h2")].map(e => e.textContent).join("|")`))
	if h2 != "代码|操作|历史" {
		t.Errorf("sections: %q", h2)
	}
	shot(t, ctx, dir, "finding-zh")
	resp = navigate(t, ctx, "click false positive", chromedp.Click(chromedp.CSS(`.actions a.button:nth-child(2)`)))
	checkPage(t, "zh confirm", resp, 200)
	if h := step(t, ctx, "read the question", chromedp.TextContent(chromedp.CSS("section.act h2"))); h != "误报？" {
		t.Errorf("confirm heading: %q", h)
	}
	resp = navigate(t, ctx, "confirm", chromedp.Click(chromedp.CSS(`button[name="confirm"]`)))
	checkPage(t, "zh after confirming", resp, 200)
	if done := step(t, ctx, "read the confirmation", chromedp.TextContent(chromedp.CSS(".done"))); !strings.Contains(done, "已作为误报驳回") {
		t.Errorf("confirmation: %q", done)
	}
	if f, _ := fx.store.GetFinding(ctx, fx.login); f.State != findings.StateDismissed || f.Dismissal != findings.ActionFalsePositive {
		t.Errorf("stored after the zh link: %s %s", f.State, f.Dismissal)
	}
	shot(t, ctx, dir, "finding-zh-done")
}
