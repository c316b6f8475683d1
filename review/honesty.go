package review

import (
	"regexp"
	"strings"
)

// Flag marks a summary that claims problems the state does not hold.
type Flag struct {
	// Summary is the index of the summary in State.Summaries.
	Summary int `json:"summary"`
	// Claim is the text that reads as a claim of problems.
	Claim string `json:"claim"`
	// Reason is a sentence for the run record and the repair prompt.
	Reason string `json:"reason"`
}

// Claims of problems in English and Chinese. The heuristic, kept narrow so
// that "no issues found" and "未发现问题" never trip it:
//
//   - a count followed by a problem noun, optionally with a severity in
//     between: "found 3 issues", "two critical bugs", "1 high-severity
//     vulnerability", "发现 2 个问题", "3 处缺陷";
//   - a count followed by a severity word: "2 critical", "1 high";
//   - a severity label as Markdown lists write them: "**Critical**:",
//     "[HIGH]", "severity: high";
//   - a severity adjective with a problem noun: "critical bug", "a serious
//     vulnerability", "严重问题", "高危漏洞";
//   - a finding verb with an article or quantifier: "found a bug", "there
//     are several issues", "存在安全漏洞", "有一些问题".
//
// A match is dropped when its count is zero, when it runs into a hyphen
// ("1 high-level"), or when a negation or a fixing verb precedes it in the
// same clause (no, not, zero, without, none, never, fixes, resolves,
// addresses, closes; 未, 没有, 没, 无, 不, 修复, 解决): "no critical bugs",
// "this change fixes 3 bugs", "没有发现问题" are not claims.
var (
	claimNouns = `(?:issues?|problems?|bugs?|defects?|vulnerabilit(?:y|ies)|findings?|flaws?|leaks?)`
	claimSev   = `(?:critical|high|medium|low|major|minor|severe|serious|security)`
	claimCount = `(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|several|multiple|many|some|a few|a couple of)`
	hanCount   = `(?:\d+|[一二两三四五六七八九十几多数]+)`
	hanNoun    = `(?:问题|缺陷|漏洞|隐患|bug|错误)`

	claimPatterns = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b` + claimCount + `\s+(?:(?:new|distinct|potential|possible|real|actual|serious|significant|remaining|important)\s+)?(?:` + claimSev + `[\s-]+(?:severity\s+|risk\s+|priority\s+)?)?` + claimNouns + `\b`),
		regexp.MustCompile(`(?i)\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+(?:critical|high|medium|low)(?:[\s-]+severity)?\b`),
		regexp.MustCompile(`(?i)(?:\*\*|__|\[)\s*(?:critical|high|medium|low)\s*(?:\*\*|__|\])\s*:?|\bseverity\s*[:=]\s*\**\s*(?:critical|high|medium|low)\b`),
		regexp.MustCompile(`(?i)\b(?:critical|severe|serious|major|high[\s-]severity|security)\s+` + claimNouns + `\b`),
		regexp.MustCompile(`(?i)\b(?:found|identified|detected|spotted|noticed|there (?:is|are)|contains?|introduces?)\s+(?:a|an|one|some|several|multiple|many|a few)\s+(?:\w+\s+){0,2}?` + claimNouns + `\b`),
		regexp.MustCompile(`(?:发现|存在|有|共)\s*` + hanCount + `\s*(?:个|处|项|条|类)\s*(?:严重|高危|中危|低危|潜在|安全)?的?\s*` + hanNoun),
		regexp.MustCompile(hanCount + `\s*(?:个|处|项|条)\s*(?:严重|高危|中危|低危|潜在|安全)?的?\s*(?:问题|缺陷|漏洞|隐患)`),
		regexp.MustCompile(`(?:存在|发现|有)(?:一些|若干|多处|多个)?(?:严重|高危|安全|潜在|明显)?的?(?:问题|缺陷|漏洞|隐患)`),
		regexp.MustCompile(`(?:严重|高危|中危)的?(?:问题|缺陷|漏洞|隐患)`),
	}
	negationBefore = regexp.MustCompile(`(?i)(?:\b(?:no|not|zero|without|none|never|nor|free of|0|fix|fixes|fixed|fixing|resolves?|resolved|address(?:es|ed)?|closes?|closed)\b[^.;:!?\n]{0,24}$)|(?:(?:未|没有|没|无|不|并无|零|修复|解决)[^。；，！？\n]{0,6}$)`)
	zeroCount      = regexp.MustCompile(`(?i)^(?:0|zero|零)\b`)
)

// CheckSummaryHonesty flags summaries that claim problems while no problem
// was recorded, so the orchestrator can run a repair pass asking the agent
// to report them with aicr.report_problem (or to correct the summary). It
// returns nil when st holds any problem: then the claim is backed, or at
// least not contradicted by the state. See claimPatterns for the
// heuristic.
func CheckSummaryHonesty(st *State) []Flag {
	if st == nil || len(st.Problems) > 0 {
		return nil
	}
	var flags []Flag
	for i, s := range st.Summaries {
		if claim := findClaim(s.Title + "\n" + s.Markdown); claim != "" {
			flags = append(flags, Flag{
				Summary: i,
				Claim:   claim,
				Reason:  "summary claims problems (" + claim + ") but no aicr.report_problem call was recorded",
			})
		}
	}
	return flags
}

func findClaim(text string) string {
	for _, re := range claimPatterns {
		for _, m := range re.FindAllStringIndex(text, -1) {
			claim := text[m[0]:m[1]]
			// The negation must be in the same clause, so a short window
			// before the match is all that needs looking at.
			before := text[max(0, m[0]-64):m[0]]
			if zeroCount.MatchString(claim) || strings.HasPrefix(text[m[1]:], "-") || negationBefore.MatchString(before) {
				continue
			}
			return strings.TrimSpace(claim)
		}
	}
	return ""
}
