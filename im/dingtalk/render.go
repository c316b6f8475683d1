package dingtalk

import (
	"regexp"
	"strings"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/botpost"
	"github.com/aicr-dev/aicr/im/internal/httppost"
	"github.com/aicr-dev/aicr/im/markdown"
)

// MaxBodyBytes is DingTalk's limit on the serialized request.
const MaxBodyBytes = 20000

// Payload is one request: a markdown message with its mentions.
type Payload struct {
	MsgType  string   `json:"msgtype"`
	Markdown Markdown `json:"markdown"`
	At       At       `json:"at"`
}

type Markdown struct {
	// Title is what the notification and the chat list show.
	Title string `json:"title"`
	Text  string `json:"text"`
}

// At lists who is notified. DingTalk notifies a person only when they
// are listed here AND "@<mobile or userid>" appears in the text.
type At struct {
	AtMobiles []string `json:"atMobiles,omitempty"`
	AtUserIds []string `json:"atUserIds,omitempty"`
	IsAtAll   bool     `json:"isAtAll"`
}

var (
	mobileRE = regexp.MustCompile(`^\+?[0-9][0-9-]{4,19}$`)
	userIDRE = regexp.MustCompile(`^[A-Za-z0-9_$-]{1,64}$`)
)

// Render fits rep into the messages to send, in order. The author is
// mentioned in the first part only: one notification per report.
func Render(rep im.Report, maxParts int) ([]Payload, error) {
	var at At
	mention := ""
	if a := rep.Author; a != nil {
		var mentions []string
		if mobileRE.MatchString(a.Mobile) {
			at.AtMobiles = []string{a.Mobile}
			mentions = append(mentions, "@"+a.Mobile)
		}
		if userIDRE.MatchString(a.DingTalkUserID) {
			at.AtUserIds = []string{a.DingTalkUserID}
			mentions = append(mentions, "@"+a.DingTalkUserID)
		}
		mention = strings.Join(mentions, " ")
	}
	blocks := markdown.BlocksMentioning(rep, markdown.DingTalk, mention)
	build := func(head, body string, first bool) Payload {
		p := Payload{MsgType: "markdown", Markdown: Markdown{
			Title: head,
			Text:  "### " + markdown.Literal(head, markdown.DingTalk) + "\n\n" + body,
		}}
		if first {
			p.At = at
		}
		return p
	}
	fits := func(head, body string) bool {
		// Measured with the mentions whichever part this is: they are
		// small, and the first part must fit with them.
		b, err := httppost.Encode(build(head, body, true))
		return err == nil && len(b) <= MaxBodyBytes
	}
	return botpost.Fit(rep, blocks, maxParts, fits, build)
}
