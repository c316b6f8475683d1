package slack

import (
	"strconv"
	"strings"
)

// A finding's buttons in a Slack report: action_id names the action,
// value the finding. Slack sends the click to the daemon over Socket Mode
// (block_actions), authenticated by the app-level token, with the user
// who clicked; the daemon applies it as that user. Both sides build and
// read the ids here.
const actionIDPrefix = "aicr.finding."

// ActionID is the action_id of the button for action (a findings.Action).
func ActionID(action string) string { return actionIDPrefix + action }

// ActionValue is the value of a finding's button.
func ActionValue(findingID int64) string { return strconv.FormatInt(findingID, 10) }

// ParseAction reads a clicked button back: the finding and the action; ok
// is false for a button aicr did not make.
func ParseAction(actionID, value string) (findingID int64, action string, ok bool) {
	action, found := strings.CutPrefix(actionID, actionIDPrefix)
	if !found || action == "" {
		return 0, "", false
	}
	id, err := strconv.ParseInt(value, 10, 64)
	if err != nil || id <= 0 {
		return 0, "", false
	}
	return id, action, true
}
