package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/slack-go/slack"

	"github.com/aicr-dev/aicr/im"
)

// EventResolution marks a resolution's posts, so a retry after a crash
// finds what it already posted.
const EventResolution = "aicr_resolution"

// JoinMessageID is the message id a dispatch records for a post:
// "<channel id>:<ts>", since chat.update needs both; the bare ts when the
// channel id is unknown.
func JoinMessageID(channelID, ts string) string {
	if ts == "" || channelID == "" {
		return ts
	}
	return channelID + ":" + ts
}

// SplitMessageID reads a recorded message id back; a bare ts (recorded by
// an older aicr) has no channel id.
func SplitMessageID(id string) (channelID, ts string) {
	if ch, t, ok := strings.Cut(id, ":"); ok {
		return ch, t
	}
	return "", id
}

// resolutionPart is one request of a resolution: the edit of an earlier
// report's summary, a reply in its thread, or a message of its own.
type resolutionPart struct {
	update  bool
	channel string // the conversation id for an edit; c.cfg.Channel otherwise
	ts      string // the message edited, or the thread replied in; "" for a message of its own
	post    Post
	// updated is the earlier report as edited, for its thread's replies.
	updated *im.Report
}

// resolutionParts lays a resolution out as requests, in a fixed order so
// a retry resumes after the parts already done: per earlier report with
// a known message, the edit of it then the reply in its thread; the
// earlier reports without one share one message of their own.
func (c *Channel) resolutionParts(ctx context.Context, api *slack.Client, rep im.Report) []resolutionPart {
	var parts []resolutionPart
	var loose []im.Followup
	for _, f := range rep.Followups {
		ch, ts := SplitMessageID(f.MessageID)
		if ch == "" && channelIDRE.MatchString(c.cfg.Channel) {
			ch = c.cfg.Channel
		}
		if ts == "" || ch == "" {
			loose = append(loose, f)
			continue
		}
		if f.Updated != nil {
			parts = append(parts, resolutionPart{update: true, channel: ch, ts: ts, updated: f.Updated,
				post: RenderSummary(*f.Updated, c.mention(ctx, api, f.Updated.Author), false)})
		}
		parts = append(parts, resolutionPart{channel: ch, ts: ts, post: RenderResolutionReply(rep, f)})
	}
	if len(loose) > 0 {
		parts = append(parts, resolutionPart{channel: c.cfg.Channel, post: RenderResolution(rep, loose)})
	}
	return parts
}

// editRefused are chat.update's answers for a message that cannot be
// edited any more (deleted, not the bot's, past the workspace's edit
// window): the follow-up still says what was resolved.
var editRefused = map[string]bool{"message_not_found": true, "cant_update_message": true, "edit_window_closed": true}

// sendResolution tells the channel what a change resolved: each earlier
// report it announced is edited (chat.update, its findings marked
// resolved) and gets a reply in its thread; earlier reports whose message
// is unknown get one message naming them. Edits are idempotent; a reply
// is posted once: a retry resumes after the parts delivered, and after a
// crash looks for its own reply first.
func (c *Channel) sendResolution(ctx context.Context, api *slack.Client, token string, rep im.Report, msg im.Message) (im.Receipt, error) {
	parts := c.resolutionParts(ctx, api, rep)
	posts := make([]Post, len(parts))
	for i, p := range parts {
		posts[i] = p.post
	}
	rec := im.Receipt{Parts: len(parts), Rendered: renderedJSON(posts)}
	first := ""
	for i := msg.PartsDelivered; i < len(parts); i++ {
		p := parts[i]
		if err := im.Pace(ctx); err != nil {
			return rec, &im.SendError{Reason: im.ReasonTimeout, Retryable: true, MessageID: first, PartsDelivered: i, Err: err}
		}
		if !p.update && msg.MaybeDelivered && c.alreadyPosted(ctx, api, p, msg.DedupeKey, i) {
			im.Delivered(ctx, i+1, first)
			continue
		}
		id, err := c.sendPart(ctx, api, p, msg.DedupeKey, i)
		if err != nil {
			se := classify(err, token)
			se.MessageID, se.PartsDelivered = first, i
			se.Err = fmt.Errorf("resolution part %d/%d: %w", i+1, len(parts), se.Err)
			return rec, se
		}
		if first == "" {
			first = id
		}
		im.Delivered(ctx, i+1, first)
	}
	rec.MessageID, rec.StatusCode, rec.Response = first, http.StatusOK, `{"ok":true}`
	return rec, nil
}

// sendPart makes one request of a resolution and returns the id of what
// it posted ("" for an edit).
func (c *Channel) sendPart(ctx context.Context, api *slack.Client, p resolutionPart, key string, i int) (string, error) {
	opts := []slack.MsgOption{slack.MsgOptionText(p.post.Text, false), slack.MsgOptionBlocks(p.post.Blocks...)}
	if p.update {
		_, _, _, err := api.UpdateMessageContext(ctx, p.channel, p.ts, opts...)
		var ser slack.SlackErrorResponse
		if errors.As(err, &ser) && editRefused[ser.Err] {
			return "", nil // the reply that follows still says it
		}
		if err != nil {
			return "", err
		}
		return "", c.editReplies(ctx, api, p)
	}
	opts = append(opts, slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl())
	if p.ts != "" {
		opts = append(opts, slack.MsgOptionTS(p.ts))
	}
	if key != "" {
		opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{EventType: EventResolution,
			EventPayload: map[string]any{"dedupe_key": key, "part": i}}))
	}
	ch, ts, err := api.PostMessageContext(ctx, p.channel, opts...)
	var ser slack.SlackErrorResponse
	if p.ts != "" && errors.As(err, &ser) && (ser.Err == "thread_not_found" || ser.Err == "message_not_found") {
		// The earlier report is gone: say it in a message of its own.
		p.ts = ""
		return c.sendPart(ctx, api, p, key, i)
	}
	if err != nil {
		return "", err
	}
	return JoinMessageID(ch, ts), nil
}

// alreadyPosted looks for part i of this resolution where it would be:
// in the earlier report's thread, or in the channel's recent history.
// Only conversation ids can be read back; a lookup that fails says no.
func (c *Channel) alreadyPosted(ctx context.Context, api *slack.Client, p resolutionPart, key string, i int) bool {
	if key == "" || !channelIDRE.MatchString(p.channel) {
		return false
	}
	var msgs []slack.Message
	if p.ts != "" {
		replies, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: p.channel, Timestamp: p.ts, Limit: 200, IncludeAllMetadata: true})
		if err != nil {
			return false
		}
		msgs = replies
	} else {
		hist, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: p.channel, Limit: 100, IncludeAllMetadata: true})
		if err != nil {
			return false
		}
		msgs = hist.Messages
	}
	for _, m := range msgs {
		if m.Metadata.EventType != EventResolution || m.Metadata.EventPayload["dedupe_key"] != key {
			continue
		}
		if part, ok := m.Metadata.EventPayload["part"].(float64); ok && int(part) == i {
			return true
		}
	}
	return false
}

// editReplies marks the resolved findings in the thread replies of the
// earlier report that carry them, found by their metadata (the part
// number each reply was posted with). Edits are idempotent, so a retry
// may do them again; a reply that cannot be edited any more is left as
// it is, since the summary and the thread reply say what was resolved.
func (c *Channel) editReplies(ctx context.Context, api *slack.Client, p resolutionPart) error {
	if p.updated == nil || !hasResolved(*p.updated) {
		return nil
	}
	replies := RenderReplies(*p.updated, c.cfg.ProblemsPerReply)
	for _, m := range threadReplies(ctx, api, p.channel, p.ts) {
		part, ok := m.Metadata.EventPayload["part"].(float64)
		if m.Metadata.EventType != EventReply || !ok || int(part) < 1 || int(part) > len(replies) {
			continue
		}
		post := replies[int(part)-1]
		if !strings.Contains(renderedJSON([]Post{post}), ":white_check_mark:") {
			continue
		}
		if err := im.Pace(ctx); err != nil {
			return err
		}
		_, _, _, err := api.UpdateMessageContext(ctx, p.channel, m.Timestamp,
			slack.MsgOptionText(post.Text, false), slack.MsgOptionBlocks(post.Blocks...))
		var ser slack.SlackErrorResponse
		if err != nil && !(errors.As(err, &ser) && editRefused[ser.Err]) {
			return err
		}
	}
	return nil
}

func hasResolved(rep im.Report) bool {
	for _, e := range rep.Entries {
		if e.State == "resolved" {
			return true
		}
	}
	return false
}

// threadReplies are the messages of a thread, or none when they cannot be
// read: the summary is edited already, and the replies then stay as they
// were posted.
func threadReplies(ctx context.Context, api *slack.Client, channel, ts string) []slack.Message {
	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
		ChannelID: channel, Timestamp: ts, Limit: 200, IncludeAllMetadata: true})
	if err != nil {
		return nil
	}
	return msgs
}
