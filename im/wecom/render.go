package wecom

import (
	"regexp"
	"strings"

	"github.com/aicr-dev/aicr/im"
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

// Render splits msg into the payloads to send, in order. The markdown
// message type has no mentioned_list; the author is mentioned with
// <@userid> in the first part's content.
func Render(msg im.Message, maxParts int) ([]Payload, error) {
	rep := markdown.Render(msg, markdown.WeCom)
	blocks := rep.Blocks
	if a := msg.Author; a != nil && userIDRE.MatchString(a.WeComUserID) {
		blocks[0].Text += "\n<@" + a.WeComUserID + ">"
	}
	content := func(head, body string) string {
		return "### " + markdown.Escape(head, markdown.WeCom) + "\n" + body
	}
	parts, err := im.Split(blocks, im.SplitOptions{
		MaxParts: maxParts,
		Head: func(i, n int) string {
			return strings.TrimSpace(rep.Title + " " + im.PartLabel(i, n))
		},
		Fits: func(head, body string) bool {
			return len(content(head, body)) <= MaxContentBytes
		},
	})
	if err != nil {
		return nil, err
	}
	out := make([]Payload, len(parts))
	for i, p := range parts {
		out[i] = Payload{MsgType: "markdown", Markdown: Markdown{Content: content(p.Head, p.Body)}}
	}
	return out, nil
}
