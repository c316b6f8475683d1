package im

import (
	"strconv"
	"time"
)

// ReasonBudgetSpent is the skip reason of a run a spent [[budget]] with
// action "skip" left unreviewed.
const ReasonBudgetSpent = "budget_spent"

// BudgetNotice is what a spent [[budget]] did to one review, as the run
// records it and its report says it.
type BudgetNotice struct {
	Name string `json:"name"`
	// Action is "builtin-only", "skip" or "fallback".
	Action string `json:"action"`
	// Period is "day" or "month".
	Period string `json:"period"`
	// FallbackModel is the model that reviewed instead (action fallback).
	FallbackModel string `json:"fallback_model,omitempty"`
	// Tokens is true when the token limit ran out, false for the cost.
	Tokens      bool    `json:"tokens,omitempty"`
	SpentUSD    float64 `json:"spent_usd,omitempty"`
	LimitUSD    float64 `json:"limit_usd,omitempty"`
	SpentTokens int64   `json:"spent_tokens,omitempty"`
	LimitTokens int64   `json:"limit_tokens,omitempty"`
	// ResumesAt is when the period ends, in the daemon's time zone; Zone
	// names that zone as the daemon did (JSON keeps only the offset).
	ResumesAt time.Time `json:"resumes_at"`
	Zone      string    `json:"zone,omitempty"`
}

// BudgetSentence is the report's notice of b in l.
func (l Language) BudgetSentence(b BudgetNotice) string {
	amount := l.budgetAmount(b.SpentUSD, b.LimitUSD)
	if b.Tokens {
		amount = l.T(KeyBudgetTokens, groupThousands(b.SpentTokens), groupThousands(b.LimitTokens))
	}
	at := resumeText(b.ResumesAt, b.Zone)
	name, period := oneLine(b.Name), l.budgetPeriod(b.Period)
	switch b.Action {
	case "skip":
		return l.T(KeyBudgetSkip, name, period, amount, at)
	case "fallback":
		return l.T(KeyBudgetFallback, name, period, amount, oneLine(b.FallbackModel), at)
	}
	return l.T(KeyBudgetBuiltinOnly, name, period, amount, at)
}

// budgetAmount is "$4.02 of $5.00" in l.
func (l Language) budgetAmount(spent, limit float64) string {
	return l.T(KeyBudgetAmount, spent, limit)
}

// budgetPeriod names a [[budget]] period in l; one the catalogue does
// not know shows as configured.
func (l Language) budgetPeriod(period string) string {
	switch period {
	case "day":
		return l.T(KeyBudgetPeriodDay)
	case "month":
		return l.T(KeyBudgetPeriodMonth)
	}
	return oneLine(period)
}

// resumeText is when a period ends, in the daemon's zone, named as the
// daemon named it.
func resumeText(t time.Time, zone string) string {
	at := t.Format("2006-01-02 15:04")
	if zone = oneLine(zone); zone != "" {
		return at + " " + zone
	}
	return at + " " + t.Format("-07:00")
}

// DigestBudget is one budget in a digest: what its current period has
// spent of its limits when the digest was built.
type DigestBudget struct {
	Name   string `json:"name"`
	Period string `json:"period"`
	// State is ok, warning or spent.
	State           string    `json:"state"`
	Action          string    `json:"action"`
	FallbackModel   string    `json:"fallback_model,omitempty"`
	SpentUSD        float64   `json:"spent_usd"`
	LimitUSD        float64   `json:"limit_usd,omitempty"`
	RemainingUSD    float64   `json:"remaining_usd,omitempty"`
	SpentTokens     int64     `json:"spent_tokens"`
	LimitTokens     int64     `json:"limit_tokens,omitempty"`
	RemainingTokens int64     `json:"remaining_tokens,omitempty"`
	PeriodEnd       time.Time `json:"period_end"`
	Zone            string    `json:"zone,omitempty"`
}

// groupThousands writes n as 1,234,567.
func groupThousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
