package im

import (
	"fmt"
	"strings"

	"github.com/aicr-dev/aicr/review"
)

// The English words of a [[digest]]'s report, for code and tests that
// name them; the catalogue holds them in every language.
var (
	TextDigest            = "aicr digest"
	TextDigestOpen        = LangEnglish.T(KeyDigestOpenByPath)
	TextDigestPeriod      = LangEnglish.T(KeyDigestPeriod)
	TextDigestNoneOpen    = LangEnglish.T(KeyDigestNoneOpen)
	TextDigestNoneReport  = LangEnglish.T(KeyDigestNoneReported)
	TextDigestEveryRepo   = LangEnglish.T(KeyDigestEveryRepo)
	TextDigestCostUnknown = LangEnglish.T(KeyDigestCostUnknown)
)

// digestListed bounds the paths the digest's text lists; the structured
// Digest may hold more, for the webhook and the file channel.
const digestListed = 15

// BuildDigest is the report of a [[digest]]: Kind KindDigest, the
// figures in Digest for machine formats, and the same figures as a title,
// a verdict and two Markdown summaries, so every dialect renders it with
// the renderer it has for reviews. Paths come from commits and are
// hostile: each is sanitized and shown as inert code (pathSpan).
func BuildDigest(d Digest, lang Language) Report {
	lang = lang.Norm()
	d.Name = oneLine(d.Name)
	d.Period = oneLine(d.Period)
	for i := range d.OpenByPath {
		d.OpenByPath[i].Path = oneLine(d.OpenByPath[i].Path)
	}
	r := Report{Kind: KindDigest, Language: lang, Words: lang.Words(), Digest: &d}
	scope := lang.T(KeyDigestEveryRepo)
	if len(d.Repos) > 0 {
		scope = oneLine(strings.Join(d.Repos, lang.T(KeyListSep)))
	}
	r.Title = lang.T(KeyDigestTitle, d.Name, scope, d.Period)
	r.Verdict = lang.T(KeyDigestVerdict, openSentence(lang, d.Open), d.New, d.Resolved, d.Dismissed)
	r.Summaries = append(r.Summaries,
		summary(lang.T(KeyDigestOpenByPath), openByPath(lang, d)),
		summary(lang.T(KeyDigestPeriod), periodLines(lang, d)))
	if len(d.Budgets) > 0 {
		r.Summaries = append(r.Summaries, summary(lang.T(KeyDigestBudgets), budgetLines(lang, d.Budgets)))
	}
	return r
}

func summary(title, markdown string) review.Summary {
	return review.Summary{Title: title, Markdown: markdown}
}

func openSentence(lang Language, n int) string {
	switch n {
	case 0:
		return lang.T(KeyDigestOpen0)
	case 1:
		return lang.T(KeyDigestOpen1)
	}
	return lang.T(KeyDigestOpenN, n)
}

func openByPath(lang Language, d Digest) string {
	if len(d.OpenByPath) == 0 {
		return lang.T(KeyDigestNoneOpen)
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
		b.WriteString(lang.T(KeyDigestPathLine, pathSpan(p.Path), p.Open, days(lang, p.OldestDays)) + "\n")
	}
	if more > 0 {
		b.WriteString(lang.T(KeyDigestMorePaths, more))
		if d.MorePaths == 0 {
			b.WriteString(lang.T(KeyDigestMoreOpen, moreOpen))
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func days(lang Language, n int) string {
	switch n {
	case 0:
		return lang.T(KeyDigestDays0)
	case 1:
		return lang.T(KeyDigestDays1)
	}
	return lang.T(KeyDigestDaysN, n)
}

func periodLines(lang Language, d Digest) string {
	rate := lang.T(KeyDigestNoneReported)
	if d.FalsePositiveRate >= 0 && d.Reported > 0 {
		rate = lang.T(KeyDigestRate, d.FalsePositiveRate*100, d.FalsePositives, d.Reported)
	}
	cost := lang.T(KeyDigestCostUnknown)
	if d.CostUSD > 0 {
		cost = lang.T(KeyDigestCost, d.CostUSD)
	}
	lines := []string{
		lang.T(KeyDigestNew, d.New),
		lang.T(KeyDigestResolved, d.Resolved),
		lang.T(KeyDigestDismissed, d.Dismissed),
		lang.T(KeyDigestFPRate, rate),
		lang.T(KeyDigestReviews, d.Reviews, cost),
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
func budgetLines(lang Language, bs []DigestBudget) string {
	lines := make([]string, 0, len(bs))
	for _, b := range bs {
		var spent, left []string
		if b.LimitUSD > 0 {
			spent = append(spent, lang.budgetAmount(b.SpentUSD, b.LimitUSD))
			left = append(left, fmt.Sprintf("$%.2f", b.RemainingUSD))
		}
		if b.LimitTokens > 0 {
			spent = append(spent, lang.T(KeyBudgetTokens, groupThousands(b.SpentTokens), groupThousands(b.LimitTokens)))
			left = append(left, groupThousands(b.RemainingTokens))
		}
		line := lang.T(KeyDigestBudgetLine, oneLine(b.Name), lang.budgetPeriod(b.Period), strings.Join(spent, lang.T(KeyListSep)), strings.Join(left, lang.T(KeyListSep)))
		switch b.State {
		case "spent":
			action := oneLine(b.Action)
			if b.FallbackModel != "" {
				action += " (" + oneLine(b.FallbackModel) + ")"
			}
			line += lang.T(KeyDigestBudgetSpent, action, resumeText(b.PeriodEnd, b.Zone))
		case "warning":
			line += lang.T(KeyDigestBudgetWarn)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
