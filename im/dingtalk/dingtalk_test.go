package dingtalk

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/httppost"
	"github.com/aicr-dev/aicr/internal/imtest"
)

const (
	token  = "tok-dingtalk-4be81f0c"
	secret = "SECdingtalk9f3a77c0"
)

func TestSignGoldenVector(t *testing.T) {
	const want = "TSZbRFUuvaSQaRKUpF970OPCb2/LcQAP3wOvwZIzBZk="
	if got := Sign("SEC0123456789abcdef", 1700000000000); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if got := imtest.DingTalkSign("1700000000000", "SEC0123456789abcdef"); got != want {
		t.Fatalf("stand-in sign = %s", got)
	}
	// '+', '/' and '=' are percent-encoded exactly once.
	u, err := SignedURL("https://oapi.dingtalk.com/robot/send?access_token=x", "SEC0123456789abcdef", 1700000000000)
	if err != nil || !strings.Contains(u, "sign=TSZbRFUuvaSQaRKUpF970OPCb2%2FLcQAP3wOvwZIzBZk%3D") || !strings.Contains(u, "timestamp=1700000000000") {
		t.Fatalf("SignedURL = %s, %v", u, err)
	}
	if q, _ := url.ParseQuery(strings.SplitN(u, "?", 2)[1]); q.Get("sign") != want {
		t.Fatalf("decoding once gives %q", q.Get("sign"))
	}
}

func newChannel(t *testing.T, hook, sec string, now func() time.Time) *Channel {
	t.Helper()
	c, err := New("team", Options{WebhookURL: hook, Secret: sec, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSendSignsEveryRequestAndMentions(t *testing.T) {
	bot := imtest.NewDingTalk(t, token, secret)
	clock := time.UnixMilli(1700000000123)
	bot.SetNow(func() time.Time { return clock })
	var signs []string
	c := newChannel(t, bot.URL(), secret, func() time.Time { return clock })
	c.Client = &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		signs = append(signs, r.URL.Query().Get("timestamp")+"/"+r.URL.Query().Get("sign"))
		return http.DefaultTransport.RoundTrip(r)
	})}
	rec, err := c.Send(context.Background(), imtest.Message())
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	clock = clock.Add(2 * time.Hour)
	if _, err := c.Send(context.Background(), imtest.Message()); err != nil {
		t.Fatalf("second Send two hours later: %v", err)
	}
	if len(signs) != 2 || signs[0] == signs[1] || !strings.HasPrefix(signs[0], "1700000000123/") {
		t.Fatalf("signatures = %v, want two different, millisecond timestamps", signs)
	}
	got := bot.Received()
	m := got[0]
	// Both places: the at list and the text.
	if strings.Join(m.Notified, ",") != "13800000000,alice01" {
		t.Fatalf("notified = %v (at %+v)\n%s", m.Notified, m.At, m.Markdown.Text)
	}
	if m.At.IsAtAll {
		t.Fatal("isAtAll set")
	}
	imtest.AssertNoLeak(t, "receipt", rec.Rendered, token, secret)
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestWrongSecretIsPermanentAuth(t *testing.T) {
	bot := imtest.NewDingTalk(t, token, secret)
	c := newChannel(t, bot.URL(), "SECwrong000000", nil)
	_, err := c.Send(context.Background(), imtest.Message())
	var se *im.SendError
	if !errors.As(err, &se) || se.Reason != im.ReasonAuth || se.Retryable || se.PlatformCode != "310000" {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(se.Response, "sign not match") {
		t.Fatalf("response = %q", se.Response)
	}
	imtest.AssertNoLeak(t, "error", err.Error(), token, "SECwrong000000")
}

func TestErrorsNeverContainToken(t *testing.T) {
	bot := imtest.NewDingTalk(t, token, secret)
	hook := bot.URL()
	bot.Server.Close()
	c := newChannel(t, hook, secret, nil)
	_, err := c.Send(context.Background(), imtest.Message())
	if ok, _ := im.IsRetryable(err); !ok {
		t.Fatalf("network error not retryable: %v", err)
	}
	imtest.AssertNoLeak(t, "error", err.Error(), token, secret, hook)
}

func TestClassify(t *testing.T) {
	tests := []imtest.Answer{
		{"ok", 200, imtest.DingTalkOK, "", false},
		{"too fast", 200, imtest.DingTalkTooFast, im.ReasonRateLimited, true},
		{"too fast, new table", 200, `{"errcode":410100,"errmsg":"send too fast"}`, im.ReasonRateLimited, true},
		{"system busy", 200, imtest.DingTalkSystemBusy, im.ReasonServer, true},
		{"sign", 200, imtest.DingTalkSignFail, im.ReasonAuth, false},
		{"timestamp", 200, imtest.DingTalkBadTime, im.ReasonAuth, false},
		{"ip", 200, `{"errcode":310000,"errmsg":"ip 1.2.3.4 not in whitelist"}`, im.ReasonAuth, false},
		{"keywords", 200, imtest.DingTalkKeywords, im.ReasonClient, false},
		{"token", 200, imtest.DingTalkBadToken, im.ReasonAuth, false},
		{"token, old code", 200, `{"errcode":300001,"errmsg":"token is not exist"}`, im.ReasonAuth, false},
		{"robot stopped", 200, `{"errcode":400102,"errmsg":"robot stopped"}`, im.ReasonAuth, false},
		{"too long", 200, imtest.DingTalkTooLong, im.ReasonTooLarge, false},
		{"missing param", 200, imtest.DingTalkMissing, im.ReasonClient, false},
		{"not json", 200, `<html/>`, im.ReasonServer, true},
		{"http 503", 503, ``, im.ReasonServer, true},
	}
	imtest.CheckClassify(t, Classify, tests)
}

func TestStandInRateLimitReachesChannel(t *testing.T) {
	bot := imtest.NewDingTalk(t, token, "")
	fixed := time.Unix(1700000000, 0)
	bot.SetNow(func() time.Time { return fixed })
	c := newChannel(t, bot.URL(), "", nil)
	imtest.CheckPlatformLimit(t, c, 20, "130101")
}

func TestSplitHugeReview(t *testing.T) {
	bot := imtest.NewDingTalk(t, token, "")
	clock := time.Unix(1700000000, 0)
	bot.SetNow(func() time.Time { clock = clock.Add(time.Minute); return clock })
	c := newChannel(t, bot.URL(), "", nil)
	for _, tc := range []struct {
		maxParts int
		capped   bool
	}{{0, false}, {2, true}} {
		msg := imtest.BigMessage(300)
		c.MaxParts = tc.maxParts
		payloads, err := Render(im.BuildReport(msg), tc.maxParts)
		if err != nil {
			t.Fatal(err)
		}
		if len(payloads) < 2 || (tc.capped && len(payloads) != tc.maxParts) {
			t.Fatalf("%d parts", len(payloads))
		}
		for i, p := range payloads {
			b, _ := httppost.Encode(p)
			if len(b) > MaxBodyBytes {
				t.Errorf("part %d is %d bytes", i+1, len(b))
			}
			imtest.CheckPart(t, "dingtalk", p.Markdown.Title, p.Markdown.Text, i+1, len(payloads))
			if i > 0 && len(p.At.AtMobiles)+len(p.At.AtUserIds) > 0 {
				t.Errorf("part %d mentions again", i+1)
			}
		}
		last := payloads[len(payloads)-1].Markdown.Text
		if got := strings.Contains(last, "problems were left out"); got != tc.capped {
			t.Errorf("left-out note present = %v, want %v", got, tc.capped)
		}
		before := len(bot.Received())
		rec, err := c.Send(context.Background(), msg)
		if err != nil || rec.Parts != len(payloads) || len(bot.Received())-before != len(payloads) {
			t.Fatalf("Send: %v, parts %d", err, rec.Parts)
		}
	}
}

func TestRenderGolden(t *testing.T) {
	for name, msg := range map[string]im.Message{"review": imtest.Message(), "empty": imtest.EmptyMessage(),
		"tracked": imtest.TrackedMessage(), "resolution": resolutionMessage()} {
		t.Run(name, func(t *testing.T) {
			payloads, err := Render(im.BuildReport(msg), 0)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, p := range payloads {
				body, _ := httppost.Encode(p)
				b.Write(body)
				b.WriteString("\n---\n" + p.Markdown.Text + "\n")
			}
			imtest.Golden(t, name+".golden", b.String())
		})
	}
}

// Channels no longer throttle themselves: a split report asks the
// dispatcher's pacer before every part, and the platform's limit is
// declared through im.RateLimited.
func TestSplitReportPacesEveryPart(t *testing.T) {
	bot := imtest.NewDingTalk(t, token, "")
	c := newChannel(t, bot.URL(), "", time.Now)
	c.MaxParts = 20
	waits := 0
	ctx := im.WithPacer(context.Background(), func(context.Context) error { waits++; return nil })
	rec, err := c.Send(ctx, imtest.BigMessage(300))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Parts < 2 || waits != rec.Parts || len(bot.Received()) != rec.Parts {
		t.Fatalf("%d parts, %d waits, %d received", rec.Parts, waits, len(bot.Received()))
	}
	imtest.AssertSendLeaksNothing(t, rec, err, bot.URL(), token)
	if r, burst := c.RateLimit(); float64(r)*60 > 20 || burst < 1 || float64(r)*60+float64(burst) > 20 {
		t.Fatalf("RateLimit = %v/s burst %d exceeds 20 a minute", r, burst)
	}
}

// Committer text (commit message, file names, author) never becomes a
// link, or an image every reader's client fetches, and mentions nobody:
// in the rendered payload and as the stand-in receives it (issue 22 C9).
func TestHostileCommitTextIsInert(t *testing.T) {
	payloads, err := Render(im.BuildReport(imtest.HostileMessage()), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		imtest.AssertInertMarkdown(t, "rendered", p.Markdown.Text)
		if p.At.IsAtAll {
			t.Error("isAtAll set")
		}
	}
	bot := imtest.NewDingTalk(t, token, secret)
	if _, err := newChannel(t, bot.URL(), secret, nil).Send(context.Background(), imtest.HostileMessage()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := bot.Received()
	if len(got) == 0 {
		t.Fatal("stand-in received nothing")
	}
	for _, m := range got {
		imtest.AssertInertMarkdown(t, "received", m.Markdown.Text)
		if m.At.IsAtAll || len(m.Notified) > 0 && strings.Join(m.Notified, ",") != "13800000000,alice01" {
			t.Errorf("notified %v (isAtAll %v), want the author only", m.Notified, m.At.IsAtAll)
		}
	}
}

// resolutionMessage carries a resolution report, as a planned dispatch
// does: these bots cannot edit, so it is a message of its own naming the
// earlier reports.
func resolutionMessage() im.Message {
	rep := imtest.ResolutionReport()
	return im.Message{Report: &rep}
}
