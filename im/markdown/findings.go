package markdown

import (
	"strings"

	"github.com/aicr-dev/aicr/im"
)

// The parts of a report that come from findings living across commits,
// in the Markdown dialects: each finding's links, the repeats' lines and
// the resolution follow-up. These platforms' bots cannot edit a message
// they posted, so a resolution is a message of its own that names the
// earlier report.

// entryText is what a problem adds for its finding: the note of an
// edited report or the reopened mark, then its page and its action links
// on one line.
func entryText(e im.Entry, w im.Words, d Dialect) string {
	var lines []string
	switch {
	case e.Note != "":
		lines = append(lines, "**"+Literal(e.Note, d)+"**")
	case e.State == im.ClassReopened:
		lines = append(lines, "*"+Literal(w.Reopened, d)+"*")
	}
	var links []string
	if SafeURL(e.Page) != "" {
		links = append(links, Link(w.Finding, e.Page, d))
	}
	if e.State != "resolved" && e.State != "dismissed" {
		for _, a := range e.Actions {
			if SafeURL(a.URL) != "" {
				links = append(links, Link(a.Label, a.URL, d))
			}
		}
	}
	if len(links) > 0 {
		lines = append(lines, strings.Join(links, " · "))
	}
	return strings.Join(lines, "\n\n")
}

// repeatsBlock is the findings seen again, one list item each.
func repeatsBlock(rep im.Report, d Dialect) string {
	if len(rep.Repeats) == 0 {
		return ""
	}
	items := []string{"**" + Literal(rep.Words.StillOpen, d) + ":**"}
	for _, rp := range rep.Repeats {
		item := "- " + Escape(rp.Text, d)
		if SafeURL(rp.Page) != "" {
			item += " " + Link(rep.Words.Finding, rp.Page, d)
		}
		items = append(items, item)
	}
	return strings.Join(items, "\n\n")
}

// resolutionBlocks renders a resolution report: the change that resolved
// findings, then one block per earlier report, named, with its findings
// that were resolved.
func resolutionBlocks(rep im.Report, d Dialect) []im.Block {
	var head []string
	if rep.Description != "" {
		head = append(head, "> "+Literal(rep.Description, d))
	}
	head = append(head, "**"+Literal(rep.Verdict, d)+"**")
	if SafeURL(rep.ChangeURL) != "" {
		head = append(head, Link(rep.Words.ViewChange, rep.ChangeURL, d))
	}
	blocks := []im.Block{{Text: strings.Join(head, "\n\n")}}
	for _, f := range rep.Followups {
		items := []string{"**" + Literal(rep.FollowupHeading(f), d) + "**"}
		for _, r := range f.Resolved {
			item := "- " + Escape(rep.ResolvedText(r), d)
			if SafeURL(r.Page) != "" {
				item += " " + Link(rep.Words.Finding, r.Page, d)
			}
			items = append(items, item)
		}
		blocks = append(blocks, im.Block{Text: strings.Join(items, "\n\n")})
	}
	if rep.Footer != "" {
		blocks = append(blocks, im.Block{Text: Literal(rep.Footer, d)})
	}
	return blocks
}
