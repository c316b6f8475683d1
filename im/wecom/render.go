package wecom

import (
	"regexp"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/botpost"
	"github.com/aicr-dev/aicr/im/markdown"
)

// MaxContentBytes is WeCom's limit on markdown.content, in UTF-8 bytes
// (a Chinese character counts 3).
const MaxContentBytes = 4096

// Payload is one request: a markdown message.
type Payload struct {
	MsgType  string   `json:"msgtype"`
	Markdown Markdown `json:"markdown"`
}

type Markdown struct {
	Content string `json:"content"`
}

var userIDRE = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)

// Render fits rep into the messages to send, in order. The markdown
// message type has no mentioned_list; the author is mentioned with
// <@userid> in the first part's content.
func Render(rep im.Report, maxParts int) ([]Payload, error) {
	mention := ""
	if a := rep.Author; a != nil && userIDRE.MatchString(a.WeComUserID) {
		mention = "<@" + a.WeComUserID + ">"
	}
	blocks := markdown.BlocksMentioning(rep, markdown.WeCom, mention)
	content := func(head, body string) string {
		return "### " + markdown.Literal(head, markdown.WeCom) + "\n" + body
	}
	fits := func(head, body string) bool { return len(content(head, body)) <= MaxContentBytes }
	build := func(head, body string, _ bool) Payload {
		return Payload{MsgType: "markdown", Markdown: Markdown{Content: content(head, body)}}
	}
	return botpost.Fit(rep, blocks, maxParts, fits, build)
}
