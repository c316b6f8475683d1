package slack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/internal/imtest"
)

func TestRenderTrackedGolden(t *testing.T) {
	rep := im.BuildReport(imtest.TrackedMessage())
	got, err := json.MarshalIndent(map[string]any{
		"summary": slack.RenderSummary(rep, "<@U123>", false), "replies": slack.RenderReplies(rep, 10),
		"webhook": slack.RenderSummary(rep, "", true)}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	imtest.Golden(t, "tracked.golden.json", string(got)+"\n")
	// Every finding in the thread has its buttons, as Socket Mode reads
	// them back, with the signed link beside.
	replies := string(got)
	for _, a := range []string{"useful", "false_positive", "wont_fix"} {
		if !strings.Contains(replies, `"action_id": "`+slack.ActionID(a)+`"`) {
			t.Errorf("no %s button", a)
		}
	}
	if id, action, ok := slack.ParseAction(slack.ActionID("wont_fix"), slack.ActionValue(11)); !ok || id != 11 || action != "wont_fix" {
		t.Fatal("button ids do not read back")
	}
}

func TestRenderResolutionGolden(t *testing.T) {
	rep := imtest.ResolutionReport()
	got, err := json.MarshalIndent(map[string]any{
		"updated": slack.RenderSummary(*rep.Followups[0].Updated, "", false),
		"reply":   slack.RenderResolutionReply(rep, rep.Followups[0]),
		"own":     slack.RenderResolution(rep, rep.Followups[1:])}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	imtest.Golden(t, "resolution.golden.json", string(got)+"\n")
}

// resolutionFor is the resolution of the report f's first post carried.
func resolutionFor(t *testing.T, f *fakeSlack, earlier im.Report, messageID string) im.Message {
	t.Helper()
	rep := imtest.ResolutionReport()
	rep.Followups[0].MessageID = messageID
	rep.Followups[0].Updated = im.MarkResolved(earlier, map[int64]string{11: "Resolved in r43 by bob"})
	rep.Followups = rep.Followups[:1]
	return im.Message{Report: &rep, DedupeKey: "aicr-8-team-resolution"}
}

// A fix is acknowledged where the finding was announced: the summary is
// edited (chat.update) and a reply goes into its thread, once, even when
// a crash makes the dispatcher send the resolution again.
func TestResolutionEditsAndRepliesOnce(t *testing.T) {
	f := &fakeSlack{}
	ch := newChannel(t, f, nil)
	msg := imtest.TrackedMessage()
	msg.DedupeKey = "aicr-7-team"
	rec, err := ch.Send(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	if rec.MessageID != "C0TEST001:"+f.posts[0].TS {
		t.Fatalf("message id %q", rec.MessageID)
	}
	res := resolutionFor(t, f, im.BuildReport(msg), rec.MessageID)
	before := len(f.posts)
	r2, err := ch.Send(context.Background(), res)
	if err != nil {
		t.Fatal(err)
	}
	// The summary, and the reply in its thread that carries the finding.
	if len(f.updates) != 2 || f.updates[0].TS != f.posts[0].TS || f.updates[1].TS != f.posts[1].TS {
		t.Fatalf("updates %+v, want the summary and its reply edited", f.updates)
	}
	for _, u := range f.updates {
		if b, _ := json.Marshal(u.Blocks); !strings.Contains(string(b), "Resolved in r43 by bob") {
			t.Fatalf("the edit does not mark the finding resolved: %s", b)
		}
	}
	if b, _ := json.Marshal(f.updates[1].Blocks); strings.Contains(string(b), `"value":"11"`) {
		t.Fatalf("the resolved finding kept its buttons: %s", b)
	}
	if len(f.posts) != before+1 || f.posts[before].ThreadTS != f.posts[0].TS || r2.Parts != 2 {
		t.Fatalf("posts %d→%d, parts %d: want one reply in the report's thread", before, len(f.posts), r2.Parts)
	}
	if b, _ := json.Marshal(f.posts[before].Blocks); !strings.Contains(string(b), "aicr: resolved in main r43 by bob") {
		t.Fatalf("reply: %s", b)
	}
	// A crash after the reply, before the attempt was recorded.
	res.MaybeDelivered = true
	if _, err := ch.Send(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	if len(f.posts) != before+1 {
		t.Fatalf("the reply was posted again after a crash: %d posts", len(f.posts))
	}
	// A retry after the parts were recorded sends nothing more.
	res.MaybeDelivered, res.PartsDelivered = false, 2
	if _, err := ch.Send(context.Background(), res); err != nil || len(f.posts) != before+1 || len(f.updates) != 4 {
		t.Fatalf("resumed retry: err %v, %d posts, %d updates", err, len(f.posts), len(f.updates))
	}
}

// A message that cannot be edited any more still gets the reply; a
// report whose message id an older aicr recorded (the bare ts) is found
// in the configured conversation.
func TestResolutionWhenTheEditIsRefused(t *testing.T) {
	for _, code := range []string{"edit_window_closed", "cant_update_message", "message_not_found"} {
		t.Run(code, func(t *testing.T) {
			f := &fakeSlack{updateFail: code}
			ch := newChannel(t, f, nil)
			msg := imtest.TrackedMessage()
			if _, err := ch.Send(context.Background(), msg); err != nil {
				t.Fatal(err)
			}
			before := len(f.posts)
			if _, err := ch.Send(context.Background(), resolutionFor(t, f, im.BuildReport(msg), f.posts[0].TS)); err != nil {
				t.Fatalf("resolution failed: %v", err)
			}
			if len(f.posts) != before+1 || f.posts[before].ThreadTS != f.posts[0].TS {
				t.Fatalf("want the thread reply, got %d posts", len(f.posts)-before)
			}
		})
	}
}

// Without a message id (the earlier report was still pending when the
// resolution was planned) the follow-up is a message of its own that
// names the earlier report.
func TestResolutionWithoutMessageIsItsOwnMessage(t *testing.T) {
	f := &fakeSlack{}
	ch := newChannel(t, f, func(c *slack.Config) { c.Channel = "#reviews" })
	rep := imtest.ResolutionReport()
	rep.Followups[0].MessageID = ""
	if _, err := ch.Send(context.Background(), im.Message{Report: &rep}); err != nil {
		t.Fatal(err)
	}
	if len(f.posts) != 1 || f.posts[0].ThreadTS != "" || len(f.updates) != 0 {
		t.Fatalf("%d posts, %d updates: want one message of its own", len(f.posts), len(f.updates))
	}
	b, _ := json.Marshal(f.posts[0].Blocks)
	for _, want := range []string{"Earlier report: aicr review: main r42 by alice", "Earlier report: aicr review: main r41 by carol"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%q missing: %s", want, b)
		}
	}
}
