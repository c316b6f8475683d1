package feishu

import (
	"regexp"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/internal/botpost"
	"github.com/aicr-dev/aicr/im/internal/httppost"
	"github.com/aicr-dev/aicr/im/markdown"
	"github.com/aicr-dev/aicr/review"
)

// MaxBodyBytes is the limit on the serialized request. Feishu documents
// "20 KB"; 20000 leaves room whichever kilobyte they mean.
const MaxBodyBytes = 20000

// Payload is the JSON body of one request: an interactive card in card
// JSON 2.0. Timestamp and Sign are filled per request when signing.
type Payload struct {
	Timestamp string `json:"timestamp,omitempty"`
	Sign      string `json:"sign,omitempty"`
	MsgType   string `json:"msg_type"`
	Card      Card   `json:"card"`
}

// Card is the card JSON 2.0 subset aicr uses.
type Card struct {
	Schema string     `json:"schema"`
	Config CardConfig `json:"config"`
	Header Header     `json:"header"`
	Body   CardBody   `json:"body"`
}

type CardConfig struct {
	WidthMode string `json:"width_mode,omitempty"`
}

type Header struct {
	Title    Text   `json:"title"`
	Template string `json:"template"`
}

type Text struct {
	Tag     string `json:"tag"`
	Content string `json:"content"`
}

type CardBody struct {
	Elements []Element `json:"elements"`
}

type Element struct {
	Tag     string `json:"tag"`
	Content string `json:"content"`
}

// Placeholders of the real lengths, so a part measured before signing is
// exactly as long as the signed request.
const (
	placeholderTimestamp = "0000000000"
	placeholderSign      = "00000000000000000000000000000000000000000000" // base64 of 32 bytes
)

// openIDRE keeps whatever the config says out of the markup: an open id
// is "ou_" and letters and digits.
var openIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Render fits rep into the cards to send, in order. signed says whether
// timestamp and sign will be added, so they are counted.
func Render(rep im.Report, signed bool, maxParts int) ([]Payload, error) {
	mention := ""
	if a := rep.Author; a != nil && openIDRE.MatchString(a.FeishuOpenID) {
		mention = "<at id=" + a.FeishuOpenID + "></at>"
	}
	blocks := markdown.BlocksMentioning(rep, markdown.Feishu, mention)
	template := Template(rep.Problems, rep.Skip != "")
	build := func(head, body string, _ bool) Payload {
		return Payload{
			MsgType: "interactive",
			Card: Card{
				Schema: "2.0",
				Config: CardConfig{WidthMode: "fill"},
				Header: Header{Title: Text{Tag: "plain_text", Content: head}, Template: template},
				Body:   CardBody{Elements: []Element{{Tag: "markdown", Content: body}}},
			},
		}
	}
	fits := func(head, body string) bool {
		p := build(head, body, true)
		if signed {
			p.Timestamp, p.Sign = placeholderTimestamp, placeholderSign
		}
		b, err := httppost.Encode(p)
		return err == nil && len(b) <= MaxBodyBytes
	}
	return botpost.Fit(rep, blocks, maxParts, fits, build)
}

// Template is the header colour (im.ReportStyle): the worst severity's,
// green when the review found nothing, grey when it was skipped. Every
// colour name of im.Style is one of the card's header templates.
func Template(problems []review.Problem, skipped bool) string {
	return im.ReportStyle(problems, skipped).Colour
}
