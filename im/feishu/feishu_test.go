package feishu

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/botpost"
	"github.com/aicr-dev/aicr/im/internal/httppost"
	"github.com/aicr-dev/aicr/internal/imtest"
	secretref "github.com/aicr-dev/aicr/secret"
)

const (
	token  = "tok-feishu-5f3c9a1e"
	secret = "sec-feishu-b7d2e0aa"
)

func TestSignGoldenVector(t *testing.T) {
	// From Feishu's custom bot documentation.
	if got, want := Sign("demo", 1599360473), "l1N0gAcBjdwBvGm1xMjOF0XSyaLRpR7tuO5dHfhAYc8="; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if got := imtest.FeishuSign("1599360473", "demo"); got != "l1N0gAcBjdwBvGm1xMjOF0XSyaLRpR7tuO5dHfhAYc8=" {
		t.Fatalf("stand-in sign = %s", got)
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

func TestSendSignsEveryRequest(t *testing.T) {
	bot := imtest.NewFeishu(t, token, secret)
	clock := time.Unix(1700000000, 0)
	bot.SetNow(func() time.Time { return clock })
	c := newChannel(t, bot.URL(), secret, func() time.Time { return clock })

	rec, err := c.Send(context.Background(), imtest.Message())
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if rec.Parts != 1 || rec.StatusCode != 200 {
		t.Fatalf("receipt = %+v", rec)
	}
	// An hour and a half later (a retry after an outage): a signature
	// cached from the first request would be refused.
	clock = clock.Add(90 * time.Minute)
	if _, err := c.Send(context.Background(), imtest.Message()); err != nil {
		t.Fatalf("second Send: %v", err)
	}
	got := bot.Received()
	if len(got) != 2 {
		t.Fatalf("received %d cards, want 2", len(got))
	}
	if got[0].Sign == got[1].Sign || got[0].Timestamp == got[1].Timestamp {
		t.Fatalf("signature reused: %s/%s and %s/%s", got[0].Timestamp, got[0].Sign, got[1].Timestamp, got[1].Sign)
	}
	if got[1].Timestamp != "1700005400" {
		t.Fatalf("timestamp = %s, want seconds 1700005400", got[1].Timestamp)
	}
	card := got[0]
	if card.Card.Schema != "2.0" || card.Card.Header.Template != "red" {
		t.Fatalf("schema %q template %q", card.Card.Schema, card.Card.Header.Template)
	}
	if !strings.Contains(card.Markdown(), "<at id=ou_0123abcd></at>") {
		t.Fatalf("author not mentioned:\n%s", card.Markdown())
	}
	if strings.Contains(card.Markdown(), "<at id=all>") {
		t.Fatalf("agent text produced an @all:\n%s", card.Markdown())
	}
	imtest.AssertNoLeak(t, "receipt", rec.Rendered, token, secret)
}

func TestWrongSecretIsPermanentAuth(t *testing.T) {
	bot := imtest.NewFeishu(t, token, secret)
	c := newChannel(t, bot.URL(), "wrong-secret", nil)
	_, err := c.Send(context.Background(), imtest.Message())
	var se *im.SendError
	if !errors.As(err, &se) || se.Reason != im.ReasonAuth || se.Retryable || se.PlatformCode != "19021" {
		t.Fatalf("err = %#v", err)
	}
	imtest.AssertNoLeak(t, "error", err.Error(), token, "wrong-secret")
	imtest.AssertNoLeak(t, "response", se.Response, token, "wrong-secret")
}

func TestErrorsNeverContainToken(t *testing.T) {
	bot := imtest.NewFeishu(t, token, "")
	hook := bot.URL()
	bot.Server.Close() // connection refused: the transport error names the URL
	c := newChannel(t, hook, secret, nil)
	_, err := c.Send(context.Background(), imtest.Message())
	if ok, _ := im.IsRetryable(err); !ok {
		t.Fatalf("network error not retryable: %v", err)
	}
	imtest.AssertNoLeak(t, "error", err.Error(), token, secret, hook)
	if !strings.Contains(err.Error(), "<redacted>") {
		t.Fatalf("error does not say what was redacted: %v", err)
	}
}

func TestClassify(t *testing.T) {
	tests := []imtest.Answer{
		{"ok", 200, imtest.FeishuOK, "", false},
		{"legacy ok", 200, `{"StatusCode":0,"StatusMessage":"success"}`, "", false},
		{"rate limited", 200, imtest.FeishuRateLimited, im.ReasonRateLimited, true},
		{"too many request", 200, `{"code":9499,"msg":"too many request"}`, im.ReasonRateLimited, true},
		{"bad request", 200, imtest.FeishuBadRequest, im.ReasonClient, false},
		{"bad token", 200, imtest.FeishuBadToken, im.ReasonAuth, false},
		{"bot not enabled", 200, `{"code":19007,"msg":"Bot Not Enabled"}`, im.ReasonAuth, false},
		{"sign fail", 200, imtest.FeishuSignFail, im.ReasonAuth, false},
		{"ip", 200, imtest.FeishuIPNotAllow, im.ReasonAuth, false},
		{"keywords", 200, imtest.FeishuKeywords, im.ReasonClient, false},
		{"unknown code", 200, `{"code":12345,"msg":"?"}`, im.ReasonClient, false},
		{"not json", 200, `<html>proxy</html>`, im.ReasonServer, true},
		{"no code", 200, `{}`, im.ReasonServer, true},
		{"http 429", 429, `{"code":9499}`, im.ReasonRateLimited, true},
		{"http 502", 502, ``, im.ReasonServer, true},
		{"http 400", 400, imtest.FeishuBadRequest, im.ReasonClient, false},
	}
	imtest.CheckClassify(t, Classify, tests)
}

func TestStandInRateLimitReachesChannel(t *testing.T) {
	bot := imtest.NewFeishu(t, token, "")
	fixed := time.Unix(1700000000, 0)
	bot.SetNow(func() time.Time { return fixed })
	c := newChannel(t, bot.URL(), "", nil)
	imtest.CheckPlatformLimit(t, c, 5, "11232")
}

func TestSplitHugeReview(t *testing.T) {
	bot := imtest.NewFeishu(t, token, "")
	// Every request a minute after the last: the rate limit is not what
	// this test is about.
	clock := time.Unix(1700000000, 0)
	bot.SetNow(func() time.Time { clock = clock.Add(time.Minute); return clock })
	c := newChannel(t, bot.URL(), "", nil)
	for _, tc := range []struct {
		problems, maxParts int
		capped             bool
	}{{300, 0, false}, {300, 2, true}} {
		msg := imtest.BigMessage(tc.problems)
		c.MaxParts = tc.maxParts
		payloads, err := Render(im.BuildReport(msg), true, tc.maxParts)
		if err != nil {
			t.Fatal(err)
		}
		if len(payloads) < 2 || len(payloads) > max(tc.maxParts, im.DefaultMaxParts) || (tc.capped && len(payloads) != tc.maxParts) {
			t.Fatalf("%d problems: %d parts", tc.problems, len(payloads))
		}
		for i, p := range payloads {
			p.Timestamp, p.Sign = "1700000000", Sign(secret, 1700000000)
			b, _ := httppost.Encode(p)
			if len(b) > MaxBodyBytes {
				t.Errorf("part %d is %d bytes", i+1, len(b))
			}
			imtest.CheckPart(t, "feishu", p.Card.Header.Title.Content, p.Card.Body.Elements[0].Content, i+1, len(payloads))
		}
		last := payloads[len(payloads)-1].Card.Body.Elements[0].Content
		if got := strings.Contains(last, "problems were left out"); got != tc.capped {
			t.Errorf("%d problems: left-out note present = %v, want %v", tc.problems, got, tc.capped)
		}
		before := len(bot.Received())
		rec, err := c.Send(context.Background(), msg)
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		if rec.Parts != len(payloads) || len(bot.Received())-before != len(payloads) {
			t.Fatalf("parts %d, received %d, want %d", rec.Parts, len(bot.Received())-before, len(payloads))
		}
	}
}

func TestResumeAfterFailedPart(t *testing.T) {
	bot := imtest.NewFeishu(t, token, "")
	c := newChannel(t, bot.URL(), "", nil)
	msg := imtest.BigMessage(300)
	payloads, _ := Render(im.BuildReport(msg), false, 0)
	n := len(payloads)
	// Part 1 goes through, part 2 meets a 500.
	bot.Script(imtest.Canned{Body: imtest.FeishuOK}, imtest.Canned{Status: 500, Body: "oops"})
	_, err := c.Send(context.Background(), msg)
	var se *im.SendError
	if !errors.As(err, &se) || !se.Retryable || se.PartsDelivered != 1 {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(err.Error(), "part 2/") {
		t.Fatalf("error does not name the part: %v", err)
	}
	msg.PartsDelivered = se.PartsDelivered
	if _, err := c.Send(context.Background(), msg); err != nil {
		t.Fatalf("resume: %v", err)
	}
	got := bot.Received()
	if len(got) != n-1 || !strings.HasSuffix(got[0].Card.Header.Title.Content, "(2/"+strconv.Itoa(n)+")") {
		t.Fatalf("resume sent %d cards starting %q, want %d starting at part 2", len(got), got[0].Card.Header.Title.Content, n-1)
	}
}

func TestRenderGolden(t *testing.T) {
	for name, msg := range map[string]im.Message{"review": imtest.Message(), "empty": imtest.EmptyMessage(),
		"tracked": imtest.TrackedMessage(), "resolution": resolutionMessage()} {
		t.Run(name, func(t *testing.T) {
			payloads, err := Render(im.BuildReport(msg), false, 0)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, p := range payloads {
				body, _ := httppost.Encode(p)
				b.Write(body)
				b.WriteString("\n---\n" + p.Card.Body.Elements[0].Content + "\n")
			}
			imtest.Golden(t, name+".golden", b.String())
		})
	}
}

func TestConfigValidate(t *testing.T) {
	err := (withKeys(botpost.WebhookKeys{WebhookURLEnv: "A", WebhookURLFile: "b"})).Validate()
	if err == nil || !strings.Contains(err.Error(), "webhook_url_env") {
		t.Fatalf("both set: %v", err)
	}
	if err := NewConfig().Validate(); !errors.Is(err, secretref.ErrNotConfigured) {
		t.Fatalf("none set: %v", err)
	}
	t.Setenv("AICR_TEST_FEISHU_HOOK", "https://open.feishu.cn/open-apis/bot/v2/hook/"+token)
	ch, err := (withKeys(botpost.WebhookKeys{WebhookURLEnv: "AICR_TEST_FEISHU_HOOK"})).Build(im.ChannelConfig{Name: "f", Kind: KindName}, im.Deps{})
	if err != nil || ch.Kind() != KindName {
		t.Fatalf("Build: %v", err)
	}
	// An unset variable fails the delivery, not the build (the daemon's
	// start), and says which key and variable to fix.
	ch, err = (withKeys(botpost.WebhookKeys{WebhookURLEnv: "AICR_TEST_UNSET_VAR"})).Build(im.ChannelConfig{Name: "f"}, im.Deps{})
	if err != nil {
		t.Fatalf("Build with an unset variable: %v", err)
	}
	_, err = ch.Send(context.Background(), imtest.Message())
	if err == nil || !strings.Contains(err.Error(), "webhook_url: environment variable AICR_TEST_UNSET_VAR") {
		t.Fatalf("unset env: %v", err)
	}
}

func withKeys(k botpost.WebhookKeys) *Config {
	c := NewConfig()
	c.WebhookKeys = k
	return c
}

// Committer text never becomes a link, image or <at> mention in the card
// (issue 22 C9), rendered and as the stand-in receives it.
func TestHostileCommitTextIsInert(t *testing.T) {
	payloads, err := Render(im.BuildReport(imtest.HostileMessage()), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		for _, e := range p.Card.Body.Elements {
			imtest.AssertInertMarkdown(t, "rendered", strings.ReplaceAll(e.Content, "<at id=ou_0123abcd></at>", ""))
		}
	}
	bot := imtest.NewFeishu(t, token, "")
	if _, err := newChannel(t, bot.URL(), "", nil).Send(context.Background(), imtest.HostileMessage()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	for _, c := range bot.Received() {
		imtest.AssertInertMarkdown(t, "received", strings.ReplaceAll(c.Markdown(), "<at id=ou_0123abcd></at>", ""))
	}
}

// resolutionMessage carries a resolution report, as a planned dispatch
// does: these bots cannot edit, so it is a message of its own naming the
// earlier reports.
func resolutionMessage() im.Message {
	rep := imtest.ResolutionReport()
	return im.Message{Report: &rep}
}
