package wecom

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/httppost"
	"github.com/aicr-dev/aicr/internal/imtest"
)

const key = "693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa"

func newChannel(t *testing.T, hook string, maxParts int) *Channel {
	t.Helper()
	c, err := New("team", Options{WebhookURL: hook, MaxParts: maxParts})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSendMentionsAuthor(t *testing.T) {
	bot := imtest.NewWeCom(t, key)
	rec, err := newChannel(t, bot.URL(), 0).Send(context.Background(), imtest.Message())
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := bot.Received()
	if len(got) != rec.Parts || rec.Parts < 1 {
		t.Fatalf("received %d, receipt %+v", len(got), rec)
	}
	// The agent's "<at ...>"/"<font ...>" are neutralised, so the only
	// mention is the author.
	if strings.Join(got[0].Mentioned, ",") != "alice.w" {
		t.Fatalf("mentioned = %v", got[0].Mentioned)
	}
	imtest.AssertNoLeak(t, "receipt", rec.Rendered, key)
}

func TestErrorsNeverContainKey(t *testing.T) {
	bot := imtest.NewWeCom(t, key)
	hook := bot.URL()
	// Wrong key: the platform's own error.
	_, err := newChannel(t, strings.Replace(hook, key, key+"x", 1), 0).Send(context.Background(), imtest.Message())
	var se *im.SendError
	if !errors.As(err, &se) || se.Reason != im.ReasonAuth || se.PlatformCode != "93000" {
		t.Fatalf("wrong key: %v", err)
	}
	imtest.AssertNoLeak(t, "error", err.Error(), key)
	// Unreachable: the transport error.
	bot.Server.Close()
	_, err = newChannel(t, hook, 0).Send(context.Background(), imtest.Message())
	if ok, _ := im.IsRetryable(err); !ok {
		t.Fatalf("network error not retryable: %v", err)
	}
	imtest.AssertNoLeak(t, "error", err.Error(), key, hook)
}

func TestClassify(t *testing.T) {
	tests := []imtest.Answer{
		{"ok", 200, imtest.WeComOK, "", false},
		{"freq", 200, imtest.WeComFreqLimit, im.ReasonRateLimited, true},
		{"busy", 200, `{"errcode":-1,"errmsg":"system busy"}`, im.ReasonServer, true},
		{"bad key", 200, imtest.WeComBadKey, im.ReasonAuth, false},
		{"too long", 200, imtest.WeComTooLong, im.ReasonTooLarge, false},
		{"bad type", 200, imtest.WeComBadType, im.ReasonClient, false},
		{"empty", 200, imtest.WeComEmpty, im.ReasonClient, false},
		{"not json", 200, `gateway`, im.ReasonServer, true},
		{"http 429", 429, ``, im.ReasonRateLimited, true},
	}
	imtest.CheckClassify(t, Classify, tests)
}

func TestStandInRateLimitReachesChannel(t *testing.T) {
	bot := imtest.NewWeCom(t, key)
	fixed := time.Unix(1700000000, 0)
	bot.SetNow(func() time.Time { return fixed })
	c := newChannel(t, bot.URL(), 0)
	imtest.CheckPlatformLimit(t, c, 20, "45009")
}

func TestSplitHugeReview(t *testing.T) {
	bot := imtest.NewWeCom(t, key)
	clock := time.Unix(1700000000, 0)
	bot.SetNow(func() time.Time { clock = clock.Add(time.Minute); return clock })
	msg := imtest.BigMessage(300)
	// 300 problems need far more than 5 messages of 4096 bytes: capped.
	payloads, err := Render(im.BuildReport(msg), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(payloads) != im.DefaultMaxParts {
		t.Fatalf("%d parts, want %d", len(payloads), im.DefaultMaxParts)
	}
	for i, p := range payloads {
		if n := len(p.Markdown.Content); n > MaxContentBytes {
			t.Errorf("part %d is %d bytes", i+1, n)
		}
		head, body, _ := strings.Cut(p.Markdown.Content, "\n")
		imtest.CheckPart(t, "wecom", head, body, i+1, len(payloads))
	}
	last := payloads[len(payloads)-1].Markdown.Content
	if !strings.Contains(last, "problems were left out") {
		t.Fatalf("last part does not say problems were left out:\n%s", last)
	}
	rec, err := newChannel(t, bot.URL(), 0).Send(context.Background(), msg)
	if err != nil || rec.Parts != len(payloads) || len(bot.Received()) != len(payloads) {
		t.Fatalf("Send: %v, parts %d, received %d", err, rec.Parts, len(bot.Received()))
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
				b.WriteString("\n---\n" + p.Markdown.Content + "\n")
			}
			imtest.Golden(t, name+".golden", b.String())
		})
	}
}

// Committer text never becomes a link or a <@userid> mention (issue 22
// C9), rendered and as the stand-in receives it.
func TestHostileCommitTextIsInert(t *testing.T) {
	payloads, err := Render(im.BuildReport(imtest.HostileMessage()), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		imtest.AssertInertMarkdown(t, "rendered", strings.ReplaceAll(p.Markdown.Content, "<@alice.w>", ""))
	}
	bot := imtest.NewWeCom(t, key)
	if _, err := newChannel(t, bot.URL(), 0).Send(context.Background(), imtest.HostileMessage()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	for _, m := range bot.Received() {
		if len(m.Mentioned) != 1 || m.Mentioned[0] != "alice.w" {
			t.Errorf("mentioned %v, want the author only", m.Mentioned)
		}
		imtest.AssertInertMarkdown(t, "received", strings.ReplaceAll(m.Markdown.Content, "<@alice.w>", ""))
	}
}

// resolutionMessage carries a resolution report, as a planned dispatch
// does: these bots cannot edit, so it is a message of its own naming the
// earlier reports.
func resolutionMessage() im.Message {
	rep := imtest.ResolutionReport()
	return im.Message{Report: &rep}
}
