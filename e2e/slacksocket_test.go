package e2e

// The Slack Socket Mode side of the findings scenario: the stand-in of
// internal/imtest speaks Slack's protocol to the daemon's real slack-go
// socketmode client, and hands every other Web API method to the Web API
// stand-in (chat.postMessage, chat.update), so one api_url serves both as
// slack.com does.

import (
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/internal/imtest"
)

// slackSocket delivers a reader's button clicks to the daemon.
type slackSocket struct {
	*imtest.SlackSocket
}

func newSlackSocket(t *testing.T, api *slackAPI, appToken, botToken string) *slackSocket {
	t.Helper()
	s := imtest.NewSlackSocket(t, appToken, botToken)
	s.SetFallback(api)
	return &slackSocket{SlackSocket: s}
}

// click sends the block_actions envelope of a user pressing the action
// button of a finding in the report at ts, once the daemon is connected,
// and waits for its ack.
func (s *slackSocket) click(t *testing.T, userID, userName, ts string, findingID int64, action string) {
	t.Helper()
	s.WaitFor(t, "the daemon's Socket Mode connection", 60*time.Second, func() bool { return s.Connections() > 0 })
	id := s.Click(imtest.Click{UserID: userID, UserName: userName, ChannelID: fxSlackChannel, MessageTS: ts, ThreadTS: ts,
		ActionID: slack.ActionID(action), BlockID: "aicr-finding", Value: slack.ActionValue(findingID), ButtonText: "False positive"})
	s.WaitFor(t, "the ack of the click", 30*time.Second, func() bool { acked, _ := s.Acked(id); return acked })
}

// checkAnswered checks the user was told, where only they see it, what
// the click did and how to undo it.
func (s *slackSocket) checkAnswered(t *testing.T, userID string) {
	t.Helper()
	var texts []string
	s.WaitFor(t, "the answer to the click", 30*time.Second, func() bool {
		texts = texts[:0]
		for _, e := range s.Ephemerals() {
			if e.User == userID {
				texts = append(texts, e.Text+e.Blocks)
			}
		}
		for _, r := range s.Responses() {
			texts = append(texts, strings.ToLower(jsonText(r.Body)))
		}
		return len(texts) > 0
	})
	all := strings.ToLower(strings.Join(texts, "\n"))
	if !strings.Contains(all, "reopen") {
		t.Errorf("the answer to the click does not say how to undo it: %s", all)
	}
}

func jsonText(m map[string]any) string {
	s, _ := m["text"].(string)
	return s
}
