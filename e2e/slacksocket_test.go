package e2e

// The Slack Socket Mode side of the findings scenario: the stand-in of
// internal/imtest that speaks Slack's protocol to the daemon's real
// slack-go socketmode client, mounted behind the Web API stand-in (the
// client opens its connection with apps.connections.open on the
// channel's api_url).

import "testing"

// slackSocket delivers a reader's button clicks to the daemon.
type slackSocket struct {
	api *slackAPI
}

func newSlackSocket(t *testing.T, api *slackAPI, appToken string) *slackSocket {
	t.Helper()
	return &slackSocket{api: api}
}

// click sends the block_actions envelope of user clicking the action
// button of a finding in the message at ts.
func (s *slackSocket) click(t *testing.T, userID, userName, ts string, findingID int64, action string) {
	t.Helper()
	t.Fatal("the Socket Mode stand-in (helper socket) has not landed")
}

// checkAnswered checks the user heard back what was done.
func (s *slackSocket) checkAnswered(t *testing.T, userID string) {
	t.Helper()
}
