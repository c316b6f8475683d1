package im

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/review"
)

// The words of a [[digest]]'s report, in one place like BuildReport's.
const (
	TextDigest            = "aicr digest"
	TextDigestOpen        = "Open findings by path"
	TextDigestPeriod      = "This period"
	TextDigestNew         = "New"
	TextDigestResolved    = "Resolved"
	TextDigestDismissed   = "Dismissed"
	TextDigestFPRate      = "False-positive rate"
	TextDigestReviews     = "Reviews"
	TextDigestNoneOpen    = "No open findings."
	TextDigestNoneReport  = "no findings reported"
	TextDigestOldest      = "oldest"
	TextDigestMorePaths   = "more paths"
	TextDigestEveryRepo   = "every repo"
	TextDigestCostUnknown = "cost not priced"
	// TextDigestBudgets titles the budgets' lines: "- daily (this day):
	// $0.12 of $0.10 spent, $0.00 left; spent: builtin-only until ...".
	TextDigestBudgets     = "Model budgets"
	TextDigestBudgetLine  = "%s (this %s): %s spent, %s left"
	TextDigestBudgetSpent = "spent: %s until %s"
	TextDigestBudgetWarn  = "nearly spent"
)

// digestListed bounds the paths the digest's text lists; the structured
// Digest may hold more, for the webhook and the file channel.
const digestListed = 15

// BuildDigest is the report of a [[digest]]: Kind KindDigest, the
// figures in Digest for machine formats, and the same figures as a title,
// a verdict and two Markdown summaries, so every dialect renders it with
// the renderer it has for reviews. Paths come from commits and are
// hostile: each is sanitized and shown as inert code (pathSpan).
func BuildDigest(d Digest) Report {
	d.Name = oneLine(d.Name)
	d.Period = oneLine(d.Period)
	for i := range d.OpenByPath {
		d.OpenByPath[i].Path = oneLine(d.OpenByPath[i].Path)
	}
	r := Report{Kind: KindDigest, Words: English, Digest: &d}
	scope := TextDigestEveryRepo
	if len(d.Repos) > 0 {
		scope = oneLine(strings.Join(d.Repos, ", "))
	}
	r.Title = fmt.Sprintf("%s: %s (%s), %s", TextDigest, d.Name, scope, d.Period)
	r.Verdict = fmt.Sprintf("%s; %s %d, %s %d, %s %d.", openSentence(d.Open),
		strings.ToLower(TextDigestNew), d.New, strings.ToLower(TextDigestResolved), d.Resolved, strings.ToLower(TextDigestDismissed), d.Dismissed)
	r.Summaries = append(r.Summaries,
		summary(TextDigestOpen, openByPath(d)),
		summary(TextDigestPeriod, periodLines(d)))
	if len(d.Budgets) > 0 {
		r.Summaries = append(r.Summaries, summary(TextDigestBudgets, budgetLines(d.Budgets)))
	}
	return r
}

func summary(title, markdown string) review.Summary {
	return review.Summary{Title: title, Markdown: markdown}
}

func openSentence(n int) string {
	switch n {
	case 0:
		return "no open findings"
	case 1:
		return "1 open finding"
	}
	return strconv.Itoa(n) + " open findings"
}

func openByPath(d Digest) string {
	if len(d.OpenByPath) == 0 {
		return TextDigestNoneOpen
	}
	var b strings.Builder
	more, moreOpen := d.MorePaths, 0
	for i, p := range d.OpenByPath {
		if i == digestListed {
			more += len(d.OpenByPath) - i
			for _, q := range d.OpenByPath[i:] {
				moreOpen += q.Open
			}
			break
		}
		fmt.Fprintf(&b, "- %s: %d open, %s %s\n", pathSpan(p.Path), p.Open, TextDigestOldest, days(p.OldestDays))
	}
	if more > 0 {
		fmt.Fprintf(&b, "- and %d %s", more, TextDigestMorePaths)
		if d.MorePaths == 0 {
			fmt.Fprintf(&b, " (%d open)", moreOpen)
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func days(n int) string {
	switch n {
	case 0:
		return "less than a day"
	case 1:
		return "1 day"
	}
	return strconv.Itoa(n) + " days"
}

func periodLines(d Digest) string {
	rate := TextDigestNoneReport
	if d.FalsePositiveRate >= 0 && d.Reported > 0 {
		rate = fmt.Sprintf("%.0f%% (%d of %d reported)", d.FalsePositiveRate*100, d.FalsePositives, d.Reported)
	}
	cost := TextDigestCostUnknown
	if d.CostUSD > 0 {
		cost = fmt.Sprintf("$%.2f", d.CostUSD)
	}
	lines := []string{
		fmt.Sprintf("- %s: %d", TextDigestNew, d.New),
		fmt.Sprintf("- %s: %d", TextDigestResolved, d.Resolved),
		fmt.Sprintf("- %s: %d", TextDigestDismissed, d.Dismissed),
		fmt.Sprintf("- %s: %s", TextDigestFPRate, rate),
		fmt.Sprintf("- %s: %d, %s", TextDigestReviews, d.Reviews, cost),
	}
	return strings.Join(lines, "\n")
}

// pathSpan shows a committer's path as inline code, which no dialect
// reads as a link, an image, a tag or emphasis: a backtick inside would
// end the span, so it becomes a look-alike (as the dialects' own code
// spans do), and the mention and bare-URL triggers get the zero-width
// space the dialects put in any text, since some platforms look for
// them inside code too.
func pathSpan(s string) string {
	s = pathDefuser.Replace(oneLine(s))
	if s == "" {
		s = "?"
	}
	return "`" + s + "`"
}

var pathDefuser = strings.NewReplacer("`", "\u02cb", "@", "@\u200b", "://", ":\u200b//", "www.", "www\u200b.", "WWW.", "WWW\u200b.", "<", "<\u200b")

// budgetLines are the digest's lines of the budgets covering its repos.
func budgetLines(bs []DigestBudget) string {
	lines := make([]string, 0, len(bs))
	for _, b := range bs {
		var spent, left []string
		if b.LimitUSD > 0 {
			spent = append(spent, fmt.Sprintf(TextBudgetAmount, b.SpentUSD, b.LimitUSD))
			left = append(left, fmt.Sprintf("$%.2f", b.RemainingUSD))
		}
		if b.LimitTokens > 0 {
			spent = append(spent, fmt.Sprintf(TextBudgetTokens, groupThousands(b.SpentTokens), groupThousands(b.LimitTokens)))
			left = append(left, groupThousands(b.RemainingTokens))
		}
		line := "- " + fmt.Sprintf(TextDigestBudgetLine, oneLine(b.Name), oneLine(b.Period), strings.Join(spent, ", "), strings.Join(left, ", "))
		switch b.State {
		case "spent":
			action := oneLine(b.Action)
			if b.FallbackModel != "" {
				action += " (" + oneLine(b.FallbackModel) + ")"
			}
			line += "; " + fmt.Sprintf(TextDigestBudgetSpent, action, resumeText(b.PeriodEnd, b.Zone))
		case "warning":
			line += "; " + TextDigestBudgetWarn
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
