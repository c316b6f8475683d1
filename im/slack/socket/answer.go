package socket

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/aicr-dev/aicr/findings"
	aicrslack "github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/secret"
	"github.com/aicr-dev/aicr/weblink"
)

// answer tells the person who clicked what the click did, in an
// ephemeral message only they see, in the thread the button was in
// (chat.postEphemeral with the channel's bot token). Should Slack refuse
// that (the bot left the conversation), the interaction's response_url
// carries it instead.
func (r *runner) answer(ctx context.Context, cb slack.InteractionCallback, out outcome) {
	text, blocks := r.message(out)
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	thread := cb.Container.ThreadTs
	if thread == "" {
		thread = cb.Message.ThreadTimestamp
	}
	err := r.postEphemeral(ctx, channel, cb.User.ID, thread, text, blocks)
	if err == nil {
		return
	}
	if u := cb.ResponseURL; u != "" && r.slackURL(u) {
		api := slack.New("", slack.OptionHTTPClient(r.opts.HTTPClient))
		_, _, _, rerr := api.SendMessageContext(ctx, "", slack.MsgOptionResponseURL(u, slack.ResponseTypeEphemeral),
			slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...))
		if rerr == nil {
			return
		}
		err = errors.Join(err, fmt.Errorf("response_url: %s", secret.Scrub(rerr.Error(), u)))
	}
	r.log.Warn("slack socket mode: could not tell the user what their click did", "finding", out.id,
		"user", clip(cb.User.ID), "err", err.Error())
}

// postEphemeral posts with the bot token of the channel that posts to
// conversation, read now (like every send).
func (r *runner) postEphemeral(ctx context.Context, conversation, user, thread, text string, blocks []slack.Block) error {
	if len(r.app.Bots) == 0 {
		return errors.New("no bot token to answer with")
	}
	bot := r.app.Bots[0]
	for _, b := range r.app.Bots {
		if b.Conversation == conversation {
			bot = b
		}
	}
	tok, err := bot.Token.Read()
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	api := slack.New(tok.Reveal(), slack.OptionAPIURL(r.app.APIURL), slack.OptionHTTPClient(r.opts.HTTPClient))
	opts := []slack.MsgOption{slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...)}
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	if _, err := api.PostEphemeralContext(ctx, conversation, user, opts...); err != nil {
		return fmt.Errorf("chat.postEphemeral: %s", secret.Scrub(err.Error(), tok.Reveal()))
	}
	return nil
}

// slackURL reports whether a response_url from a payload may be posted
// to: Slack's hooks host, or the host of the configured api_url (an
// Enterprise proxy, a test stand-in), so a payload cannot point the
// daemon's POST at an internal address.
func (r *runner) slackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return false
	}
	if u.Scheme == "https" && u.Host == "hooks.slack.com" {
		return true
	}
	api, err := url.Parse(r.app.APIURL)
	return err == nil && api.Host != "" && u.Host == api.Host && u.Scheme == api.Scheme
}

// dismissedAs is how an answer names a dismissal.
var dismissedAs = map[findings.Action]string{
	findings.ActionFalsePositive: "as a false positive",
	findings.ActionWontFix:       "as won't fix",
	findings.ActionAcceptedRisk:  "as an accepted risk",
}

// message is the answer to one click: the text (also the notification)
// and its blocks, with the Reopen button after a dismissal and the link
// to the finding's page where the web page is configured. Committer and
// agent text (the path) is escaped: it must not mention or link.
func (r *runner) message(out outcome) (string, []slack.Block) {
	what := "finding #" + strconv.FormatInt(out.id, 10)
	if out.known {
		what += " (" + aicrslack.Escape(out.finding.Path)
		if out.finding.Line > 0 {
			what += ":" + strconv.Itoa(out.finding.Line)
		}
		what += ")"
	}
	var text string
	reopen := false
	switch {
	case out.err == nil && out.action.Dismisses():
		text = "You dismissed " + what + " " + dismissedAs[out.action] + ": aicr will not report it again in " +
			aicrslack.Escape(out.finding.Repo) + ". Changed your mind? Reopen it."
		reopen = true
	case out.err == nil && out.action == findings.ActionReopen:
		text = "You reopened " + what + ": aicr reports it again until a change fixes it."
	case out.err == nil:
		text = fmt.Sprintf("Thanks: %s is counted as useful (%d so far).", what, out.finding.Useful)
	case errors.Is(out.err, findings.ErrConflict):
		text = "Nothing changed: " + what + " " + standing(out.finding, out.known) + "."
		reopen = out.known && out.finding.State == findings.StateDismissed
	case errors.Is(out.err, findings.ErrNotFound):
		text = "Nothing changed: aicr has no " + what + " (retention may have removed it)."
	default:
		text = "Nothing changed: aicr could not record this just now (its database did not answer). Try the button again in a minute."
	}
	return r.blocks(out, text, reopen)
}

// standing says where a finding stands, for a click that did not apply.
func standing(f findings.Finding, known bool) string {
	if !known {
		return "is not in a state that action applies to"
	}
	switch f.State {
	case findings.StateDismissed:
		s := "is already dismissed"
		if how, ok := dismissedAs[f.Dismissal]; ok {
			s += " " + how
		}
		if f.ActedBy != "" {
			s += " by " + aicrslack.Escape(f.ActedBy)
		}
		if !f.ActedAt.IsZero() {
			s += " on " + f.ActedAt.UTC().Format("2006-01-02")
		}
		return s
	case findings.StateResolved:
		s := "is resolved"
		if f.ResolvedRevision != "" {
			s += " in " + aicrslack.Escape(f.ResolvedRevision)
		}
		return s
	}
	return "is " + string(f.State) + ": there is nothing to reopen"
}

func (r *runner) blocks(out outcome, text string, reopen bool) (string, []slack.Block) {
	body := text
	action := weblink.ActionView
	if reopen {
		action = string(findings.ActionReopen)
	}
	link := r.opts.Links.Link(out.id, action, r.opts.Now())
	if link != "" && (out.err == nil || out.known) {
		label := "the finding's page"
		if reopen {
			label = "reopen it on its page"
		}
		body += "\n<" + strings.NewReplacer("|", "%7C", ">", "%3E").Replace(link) + "|" + label + ">"
	}
	blocks := []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, body, false, false), nil, nil)}
	if reopen {
		btn := slack.NewButtonBlockElement(aicrslack.ActionID(string(findings.ActionReopen)), aicrslack.ActionValue(out.id),
			slack.NewTextBlockObject(slack.PlainTextType, "Reopen", false, false))
		blocks = append(blocks, slack.NewActionBlock("aicr.undo."+strconv.FormatInt(out.id, 10), btn))
	}
	return text, blocks
}
