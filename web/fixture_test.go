package web

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/weblink"
)

// hostileText is an agent's message that tries every way to become
// markup, a link, a script or a terminal escape on the page.
const hostileText = `<script>alert("x")</script><img src=x onerror=alert(1)> [click](javascript:alert(1)) ` +
	"<a href=\"http://evil.example/a\">a</a> \x1b]8;;http://evil.example/t\x07term\x1b]8;;\x07 \u202Eevil\u202C end"

// leaked is a credential in the reviewed code; the page redacts it.
const leaked = "AKIAZ7VRSQ5TJ4DHLXMB"

const testToken = "correct-horse-battery-staple-token"

// fixture is a real SQLite store with two reviewed runs and their
// findings, a data_dir with the first run's src/, and the web handler
// over them.
type fixture struct {
	t        *testing.T
	store    *audit.Store
	dataDir  string
	signer   weblink.Signer
	now      time.Time
	runA     int64 // r42: imtest.Message's problems plus a hostile one; src/ kept
	runB     int64 // r43: imtest.HostileMessage; src/ dropped
	login    int64 // the finding on web/login.go:12-14
	hostile  int64 // the finding with hostileText
	evilFile int64 // the finding in run B's hostile file name
	cfg      config.Web
}

var loginGo = `package web

import "net/http"

// Login signs a user in.
func Login(w http.ResponseWriter, r *http.Request) {
	user := r.FormValue("user")
	pass := r.FormValue("pass")
	key := "` + leaked + `"
	_ = key
	s, _ := lookup(user)
	err := s.Check(pass)
	s.Start(w)
	_ = err
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
`

func newFixture(t *testing.T, auth string) *fixture {
	t.Helper()
	return newFixtureIn(t, auth, im.LangEnglish)
}

// newFixtureIn is newFixture with its page and its stored reports in
// lang.
func newFixtureIn(t *testing.T, auth string, lang im.Language) *fixture {
	t.Helper()
	dir := t.TempDir()
	fx := &fixture{t: t, dataDir: filepath.Join(dir, "data"), now: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	store, err := audit.Open(context.Background(), filepath.Join(fx.dataDir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	// The reviews ran three hours before the pages are read.
	store.SetClock(func() time.Time { return fx.now.Add(-3 * time.Hour) })
	fx.store = store
	fx.signer = weblink.Signer{Key: bytes.Repeat([]byte{9}, weblink.MinKeyBytes), BaseURL: "http://aicr.test", TTL: 24 * time.Hour}
	tokenFile := filepath.Join(dir, "web-token")
	fx.write(tokenFile, testToken+"\n")
	fx.cfg = config.Web{Listen: "127.0.0.1:0", BaseURL: "http://aicr.test", Auth: auth, UserHeader: "X-Forwarded-User",
		TrustedProxies: []string{"127.0.0.1", "::1"}, TokenFile: tokenFile, LinkTTL: 24 * time.Hour, Language: lang}

	msg := imtest.Message()
	msg.Language = lang
	// The README's screenshots show these, in a font every machine has.
	msg.Result.Problems[0].Message = "The error from s.Check is dropped: a wrong password still starts a session."
	msg.Result.Problems[1].Message = "A database password is committed in plain text."
	msg.Result.Summaries[0] = review.Summary{Title: "Summary", Markdown: "Mostly fine; one **critical** problem: a committed password.\n\n<script>alert(1)</script>"}
	msg.Result.Problems = append(msg.Result.Problems, review.Problem{File: "web/login.go", Line: 9, Severity: review.SeverityHigh,
		Category: "injection", Message: hostileText, Suggestion: "Use <b>bold</b> [here](http://evil.example/s)"})
	var outA findings.Outcome
	fx.runA, outA = fx.review(msg, map[string]string{"web/login.go": loginGo, "config/prod.yaml": "db:\n  password: hunter2\n", "web/__init__.py": "x = 1\n"}, true)
	fx.login, fx.hostile = outA.Seen[0].Finding.ID, outA.Seen[3].Finding.ID
	var outB findings.Outcome
	hm := imtest.HostileMessage()
	hm.Language = lang
	// Its file name is no path src/ can hold: the run kept none.
	fx.runB, outB = fx.review(hm, nil, false)
	fx.evilFile = outB.Seen[0].Finding.ID
	return fx
}

func (fx *fixture) write(name, content string) {
	fx.t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		fx.t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		fx.t.Fatal(err)
	}
}

func (fx *fixture) must(err error) {
	fx.t.Helper()
	if err != nil {
		fx.t.Fatal(err)
	}
}

// review runs msg's change through the store as the daemon does:
// enqueue, claim, src/ written, findings tracked, the run finished, a
// report planned and sent to one channel and failed on another, the
// agent's cost recorded; keepSrc false drops src/ as retention does.
func (fx *fixture) review(msg im.Message, src map[string]string, keepSrc bool) (int64, findings.Outcome) {
	fx.t.Helper()
	ctx := context.Background()
	ch := msg.Change
	e, err := fx.store.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: ch.Repo, Revision: ch.Revision, User: ch.Author}, triggers.SourceTrigger, fx.now.Add(-3*time.Hour))
	fx.must(err)
	run, err := fx.store.ClaimNext(ctx)
	fx.must(err)
	if run.ID != e.RunID {
		fx.t.Fatalf("claimed run %d, enqueued %d", run.ID, e.RunID)
	}
	layout := rundir.ForRun(fx.dataDir, run.ID)
	fx.must(fx.store.SetRunDir(ctx, run.ID, layout.Dir()))
	for name, content := range src {
		p, err := layout.SrcPath(name)
		fx.must(err)
		fx.write(p, content)
	}
	for name := range src {
		ch.Files = append(ch.Files, vcs.FileChange{Path: name, Action: vcs.ActionModify})
	}
	out, err := fx.store.TrackFindings(ctx, findings.Review{Repo: ch.Repo, VCS: vcs.KindSVN, RunID: run.ID, Revision: ch.Revision,
		Author: ch.Author, Agent: "llm", Model: "qwen2.5-coder", At: fx.now.Add(-3 * time.Hour), Change: ch, Problems: msg.Result.Problems, Complete: true,
		Source: func(path string) ([]string, error) {
			p, err := layout.SrcPath(path)
			if err != nil {
				return nil, err
			}
			b, err := os.ReadFile(p)
			return strings.Split(string(b), "\n"), err
		}})
	fx.must(err)
	fx.must(fx.store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunSucceeded, Problems: msg.Result.Problems, Summaries: msg.Result.Summaries}))
	msg.RunID = run.ID
	rep := im.BuildReport(msg)
	// Entries follow the report's (sorted) problems, as the daemon's do.
	for _, p := range rep.Problems {
		e := im.Entry{}
		for _, seen := range out.Seen {
			if q := msg.Result.Problems[seen.Index]; q.File == p.File && q.Line == p.Line && q.Category == p.Category {
				e.FindingID = seen.Finding.ID
			}
		}
		rep.Entries = append(rep.Entries, e)
	}
	cost := 0.0123
	fx.must(fx.store.AddAgentStats(ctx, run.ID, audit.AgentStats{Agent: "llm", Model: "qwen2.5-coder", Passes: 2, Turns: 7, InputTokens: 12000, OutputTokens: 800, CostUSD: &cost}))
	fx.send(run.ID, "team-slack", &rep, delivery.AttemptResult{Status: delivery.StatusSent, Outcome: delivery.OutcomeSent, MessageID: "C1:1.2"})
	fx.send(run.ID, "feishu", &rep, delivery.AttemptResult{Status: delivery.StatusFailed, Outcome: delivery.OutcomeFailed, Reason: "client",
		PlatformCode: "19021", Error: "feishu: sign match fail <b>" + hostileText + "</b>"})
	if !keepSrc {
		ok, err := fx.store.MarkSourcesDropped(ctx, run.ID)
		fx.must(err)
		if !ok {
			fx.t.Fatalf("run %d: sources not marked dropped", run.ID)
		}
		fx.must(os.RemoveAll(layout.SrcDir()))
	}
	return run.ID, out
}

func (fx *fixture) send(runID int64, channel string, rep *im.Report, res delivery.AttemptResult) {
	fx.t.Helper()
	ctx := context.Background()
	d, err := fx.store.PlanDispatch(ctx, runID, channel, delivery.PurposeReport, delivery.StatusPending, "", rep)
	fx.must(err)
	c, err := fx.store.ClaimDispatch(ctx, d.ID, time.Minute)
	fx.must(err)
	_, err = fx.store.FinishAttempt(ctx, c, res)
	fx.must(err)
}

// handler is the web page over the fixture, on the fixture's clock.
func (fx *fixture) handler(now func() time.Time) http.Handler {
	fx.t.Helper()
	if now == nil {
		now = func() time.Time { return fx.now }
	}
	o := Options{Store: fx.store, Config: fx.cfg, Signer: fx.signer, Now: now}
	fx.must(o.Validate())
	return New(o)
}

// get serves one request in process; hdr are extra headers.
func (fx *fixture) do(h http.Handler, method, target, body string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr = "127.0.0.1:5555"
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		if k == "RemoteAddr" {
			req.RemoteAddr = v
			continue
		}
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// link is the path and query of a signed link, as a browser requests it.
func (fx *fixture) link(id int64, action string, at time.Time) string {
	l := fx.signer.Link(id, action, at)
	return strings.TrimPrefix(l, fx.signer.BaseURL)
}

func triggersEvent(rev int) triggers.Event {
	return triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: strconv.Itoa(rev), User: "erin"}
}
