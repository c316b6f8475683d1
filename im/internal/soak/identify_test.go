package soak

import (
	"net/url"
	"testing"
)

// The crash-window tolerance rests on identify naming what each accepted
// request carried; the bodies are as the channels send them.
func TestIdentifyNamesRunAndPart(t *testing.T) {
	slackForm := url.Values{"channel": {"C0SOAK0001"}, "text": {"x"},
		"metadata": {`{"event_type":"aicr_review_part","event_payload":{"dedupe_key":"aicr-12-slack-bot","part":3}}`}}.Encode()
	for _, c := range []struct {
		path, body string
		want       delivery
	}{
		{"/api/chat.postMessage", slackForm, delivery{channel: "slack-bot", run: 12, part: 3}},
		{"/services/T0SOAK/B0SOAK/x", `{"text":"aicr review: alpha r6 by dave — No problems found.","blocks":[{"text":{"text":"Reviewed by llm (m) · run 15"}}]}`, delivery{channel: "slack-hook", run: 15, part: 1, title: "alpha r6 by dave — No problems found."}},
		{"/services/T0SOAK/B0SOAK/x", `{"text":"aicr review: depot change 11 by bob — Problems: 1 critical","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"Partial review: …"}},{"type":"section","text":{"type":"mrkdwn","text":"run 18"}}]}`, delivery{channel: "slack-hook", run: 18, part: 1, title: "depot change 11 by bob — Problems: 1 critical"}},
		{"/hooks/aicr/x", `{"version":1,"run_id":44,"channel":"webhook"}`, delivery{channel: "webhook", run: 44, part: 1}},
		{"/open-apis/bot/v2/hook/x", `{"card":{"header":{"title":{"content":"aicr review: depot change 6 by carol (2/2)"}},"body":{"elements":[{"content":"x\n\nrun 1"}]}}}`, delivery{channel: "feishu", run: 1, part: 2, title: "depot change 6 by carol"}},
		{"/robot/send", `{"markdown":{"title":"aicr review: beta r2 by bob","text":"x\n\nReviewed by llm · run 2"}}`, delivery{channel: "dingtalk", run: 2, part: 1, title: "beta r2 by bob"}},
		// The first part of a split report: its run is in the last part's footer.
		{"/cgi-bin/webhook/send", `{"markdown":{"content":"### aicr review: beta r2 by bob (1/2)\n"}}`, delivery{channel: "wecom", run: 0, part: 1, title: "beta r2 by bob"}},
	} {
		got, ok := identify(c.path, []byte(c.body))
		if !ok || got != c.want {
			t.Errorf("identify(%s) = %+v, %v; want %+v", c.path, got, ok, c.want)
		}
	}
	parts := resolveRuns([]delivery{{channel: "wecom", part: 1, title: "t"}, {channel: "wecom", part: 2, title: "t", run: 9},
		{channel: "wecom", part: 1, title: "t"}, {channel: "wecom", part: 2, title: "t", run: 10}})
	if parts[0].run != 9 || parts[2].run != 10 {
		t.Errorf("resolveRuns: %+v, want the parts before the footer in the run of the part that has it", parts)
	}
	if _, ok := identify("/api/conversations.history", nil); ok {
		t.Error("a history lookup is not a delivery")
	}
	for _, ok := range []string{"ok", `{"ok":true,"ts":"1.2"}`, `{"errcode":0,"errmsg":"ok"}`, `{"StatusCode":0,"code":0,"data":{}}`} {
		if !acceptedRE.MatchString(ok) {
			t.Errorf("%s is an acceptance", ok)
		}
	}
	for _, no := range []string{`{"errcode":45009,"errmsg":"api freq out of limit"}`, `{"code":11232,"msg":"frequency limited"}`, `{"ok":false,"error":"ratelimited"}`} {
		if acceptedRE.MatchString(no) {
			t.Errorf("%s is a refusal", no)
		}
	}
}
