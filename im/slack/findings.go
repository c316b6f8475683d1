package slack

import (
	"strings"

	"github.com/slack-go/slack"

	"github.com/aicr-dev/aicr/im"
)

// The parts of a Slack report that come from findings living across
// commits: each finding's buttons and links, the repeats' compact lines,
// the resolved marks of an edited report, and the resolution follow-up.

// blocksPerProblem is what one problem takes in a thread reply when its
// report carries findings: its section and its buttons.
const blocksPerProblem = 2

// entryActions is the actions block of a finding's buttons: one per
// action, with action_id and value as ParseAction reads them (clicks
// arrive over Socket Mode) and the signed link, so a button still works
// (in the browser) where Socket Mode is off. nil when there is nothing to
// act on.
func entryActions(e im.Entry) slack.Block {
	if e.FindingID == 0 || len(e.Actions) == 0 || e.State == "resolved" || e.State == "dismissed" {
		return nil
	}
	var elems []slack.BlockElement
	for _, a := range e.Actions {
		btn := slack.NewButtonBlockElement(ActionID(a.Action), ActionValue(e.FindingID),
			slack.NewTextBlockObject(slack.PlainTextType, truncateChars(im.Sanitize(a.Label), 75), false, false))
		if u := im.SafeLink(a.URL); u != "" {
			btn.URL = u
		}
		elems = append(elems, btn)
	}
	return slack.NewActionBlock("", elems...)
}

// entryText is what a problem's section adds for its finding: the mark
// of an edited report ("Resolved in r3 by bob"), the reopened note, and
// the link to its page; links replaces the buttons where there are none
// (an incoming webhook has no app to receive clicks).
func entryText(e im.Entry, w im.Words, links bool) (prefix, suffix string) {
	switch {
	case e.State == "resolved":
		prefix = ":white_check_mark: *" + Escape(e.Note) + "*\n"
	case e.Note != "":
		prefix = "_" + Escape(e.Note) + "_\n"
	case e.State == im.ClassReopened:
		prefix = ":repeat: _" + Escape(w.Reopened) + "_\n"
	}
	var parts []string
	if l := linkTo(e.Page, w.Finding); l != "" {
		parts = append(parts, l)
	}
	if links && e.State != "resolved" {
		for _, a := range e.Actions {
			if l := linkTo(a.URL, a.Label); l != "" {
				parts = append(parts, l)
			}
		}
	}
	if len(parts) > 0 {
		suffix = "\n" + strings.Join(parts, " · ")
	}
	return prefix, suffix
}

// problemBlocks is problem i of rep as blocks: its section and, where
// the report carries its finding, its buttons.
func problemBlocks(rep im.Report, i int, buttons bool) []slack.Block {
	e := rep.EntryFor(i)
	prefix, suffix := entryText(e, rep.Words, !buttons)
	text := ProblemText(rep.Problems[i], rep.Words)
	if prefix != "" || suffix != "" {
		text = truncateChars(prefix+text, MaxSectionText-len([]rune(suffix))) + suffix
	}
	blocks := []slack.Block{section(text)}
	if buttons {
		if a := entryActions(e); a != nil {
			blocks = append(blocks, a)
		}
	}
	return blocks
}

// repeatsText is the repeats as one mrkdwn list: "Still open:" and a
// line per finding seen again.
func repeatsText(rep im.Report) string {
	if len(rep.Repeats) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("*" + Escape(rep.Words.StillOpen) + ":*")
	for _, rp := range rep.Repeats {
		b.WriteString("\n• " + Escape(rp.Text))
		if l := linkTo(rp.Page, rep.Words.Finding); l != "" {
			b.WriteString(" " + l)
		}
	}
	return b.String()
}

// resolvedText lists the entries an edited report marks resolved, for
// its summary message (the problems themselves are in the thread).
func resolvedText(rep im.Report) string {
	var lines []string
	for i, e := range rep.Entries {
		if e.State != "resolved" || i >= len(rep.Problems) {
			continue
		}
		loc := strings.ReplaceAll(im.ProblemLocation(rep.Problems[i]), "`", "'")
		lines = append(lines, ":white_check_mark: `"+Escape(loc)+"` "+Escape(e.Note))
	}
	return strings.Join(lines, "\n")
}

// resolvedLines is a follow-up's resolved findings as mrkdwn lines.
func resolvedLines(rep im.Report, f im.Followup) string {
	var b strings.Builder
	for i, r := range f.Resolved {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(":white_check_mark: " + Escape(rep.ResolvedText(r)))
		if l := linkTo(r.Page, rep.Words.Finding); l != "" {
			b.WriteString(" " + l)
		}
	}
	return b.String()
}

// RenderResolutionReply is the reply a resolution posts in the thread of
// the earlier report it is about: the change that resolved its findings
// and which.
func RenderResolutionReply(rep im.Report, f im.Followup) Post {
	head := "*" + Literal(rep.Title) + "*"
	if l := linkTo(rep.ChangeURL, rep.Words.ViewChange); l != "" {
		head += " " + l
	}
	blocks := []slack.Block{section(head)}
	for _, chunk := range SplitMrkdwn(resolvedLines(rep, f), MaxSectionText) {
		if len(blocks) == MaxBlocks {
			break
		}
		blocks = append(blocks, section(chunk))
	}
	return Post{Text: Escape(truncateChars(rep.Title+" — "+rep.Verdict, MaxTextChars)), Blocks: blocks}
}

// RenderResolution is a resolution as one message of its own, for
// follow-ups that cannot reply in a thread (an incoming webhook, an
// earlier report whose message id is unknown): the change, then each
// earlier report named with what was resolved of it.
func RenderResolution(rep im.Report, followups []im.Followup) Post {
	meta := []string{Escape(rep.Verdict)}
	if rep.Description != "" {
		meta = append([]string{"_" + Literal(rep.Description) + "_"}, meta...)
	}
	if l := linkTo(rep.ChangeURL, rep.Words.ViewChange); l != "" {
		meta = append(meta, l)
	}
	blocks := []slack.Block{
		slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, truncateChars(im.Sanitize(rep.Title), MaxHeaderChars), true, false)),
		section(strings.Join(meta, "\n")),
	}
	for _, f := range followups {
		text := "*" + Literal(rep.FollowupHeading(f)) + "*\n" + resolvedLines(rep, f)
		for _, chunk := range SplitMrkdwn(text, MaxSectionText) {
			if len(blocks) == MaxBlocks-1 {
				blocks = append(blocks, section("_"+Escape(rep.OmittedNote(0))+"_"))
				break
			}
			blocks = append(blocks, section(chunk))
		}
	}
	if rep.Footer != "" && len(blocks) < MaxBlocks {
		blocks = append(blocks, section(Literal(rep.Footer)))
	}
	return Post{Text: Escape(truncateChars(rep.Title+" — "+rep.Verdict, MaxTextChars)), Blocks: blocks}
}
