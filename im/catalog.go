package im

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/message/catalog"
)

// Language is a language aicr writes reports in: "en" or "zh-CN". The
// zero value is English, so a report stored by an older aicr (which
// carried no language) renders as it did.
type Language string

// The languages of the catalogue.
const (
	LangEnglish Language = "en"
	LangChinese Language = "zh-CN"
)

// Languages lists every language the catalogue holds, in the order
// config errors name them.
var Languages = []Language{LangEnglish, LangChinese}

// ParseLanguage reads a configured language. "zh", "zh-cn" and "zh_CN"
// (any case) mean zh-CN, since that is the only Chinese aicr writes and
// people type all of them; "" is English. Anything else is an error
// naming the allowed values, so a typo never silently falls back.
func ParseLanguage(s string) (Language, error) {
	switch strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "_", "-")) {
	case "", "en":
		return LangEnglish, nil
	case "zh", "zh-cn":
		return LangChinese, nil
	}
	return "", fmt.Errorf("unknown language %q: use \"en\" or \"zh-CN\"", s)
}

// Norm is l as the catalogue knows it: the zero value and anything
// unknown are English.
func (l Language) Norm() Language {
	if _, ok := catalogue[l]; ok {
		return l
	}
	return LangEnglish
}

// Key names one entry of the message catalogue. Each entry is a format
// for fmt-style verbs; every language has every key, with the same verbs
// (TestCatalogueIsComplete). Adding a word is one line in catalog_en.go
// and one in catalog_zh.go (plus its Key here).
type Key string

// The catalogue's keys, grouped by where the words appear. Plural forms
// are keys of their own ("…1" for one, "…N" for many), since Chinese has
// one form and English two.
const (
	// Labels (Words).
	KeyProblems   Key = "label.problems"
	KeySuggestion Key = "label.suggestion"
	KeyViewChange Key = "label.view_change"
	KeyAuthor     Key = "label.author"
	KeyReviewedBy Key = "label.reviewed_by"
	KeyStillOpen  Key = "label.still_open"
	KeyFinding    Key = "label.finding"
	KeyReopened   Key = "label.reopened"
	KeyColon      Key = "label.colon"

	// Severities and actions.
	KeySevCritical     Key = "severity.critical"
	KeySevHigh         Key = "severity.high"
	KeySevMedium       Key = "severity.medium"
	KeySevLow          Key = "severity.low"
	KeySevInfo         Key = "severity.info"
	KeySevUnknown      Key = "severity.unknown"
	KeyActUseful       Key = "action.useful"
	KeyActFalsePos     Key = "action.false_positive"
	KeyActWontFix      Key = "action.wont_fix"
	KeyActAcceptedRisk Key = "action.accepted_risk"
	KeyActReopen       Key = "action.reopen"

	// The review report.
	KeyTitle           Key = "report.title"
	KeyShelvedChange   Key = "report.shelved_change"
	KeyFooterRun       Key = "report.footer_run"
	KeyChangeBy        Key = "report.change_by"
	KeyUnknownChange   Key = "report.unknown_change"
	KeyVerdictProblems Key = "report.verdict_problems"
	KeyNoProblems      Key = "report.no_problems"
	KeyNoProblemsShort Key = "report.no_problems_short"
	KeyCount           Key = "report.count"
	KeyListSep         Key = "report.list_sep"
	KeyFailed          Key = "report.failed"
	KeyFailure         Key = "report.failure"
	KeyFailurePartial  Key = "report.failure_partial"
	KeyFailureCommands Key = "report.failure_commands"
	KeyFooter          Key = "report.footer"
	KeyFooterModel     Key = "report.footer_model"
	KeyRange           Key = "report.range"
	KeyLeftOut         Key = "report.left_out"
	KeyLeftOutMore     Key = "report.left_out_more"
	KeyLeftOutItem     Key = "report.left_out_item"
	KeyOmittedRest     Key = "report.omitted_rest"
	KeyOmitted1        Key = "report.omitted_1"
	KeyOmittedN        Key = "report.omitted_n"

	// Why a change was not reviewed.
	KeySkipNoReason     Key = "skip.no_reason"
	KeySkipNoCode       Key = "skip.no_reviewable_code"
	KeySkipNoScope      Key = "skip.no_files_in_scope"
	KeySkipNoPublisher  Key = "skip.no_output_publisher"
	KeySkipOther        Key = "skip.other"
	KeyNotReviewedLabel Key = "skip.label"

	// Why a file was left out (vcs.Skip*).
	KeyFileBinary    Key = "file.binary"
	KeyFileExcluded  Key = "file.excluded"
	KeyFileTooLarge  Key = "file.too_large"
	KeyFileOverFiles Key = "file.over_max_files"
	KeyFileOverBytes Key = "file.over_max_review_bytes"

	// Findings across commits.
	KeyNoNewProblems      Key = "findings.no_new"
	KeyStillOpen1         Key = "findings.still_open_1"
	KeyStillOpenN         Key = "findings.still_open_n"
	KeyRepeatOpen         Key = "findings.repeat_open"
	KeyRepeatSince        Key = "findings.repeat_since"
	KeyRepeatSinceCommits Key = "findings.repeat_since_commits"
	KeyRepeatCommits      Key = "findings.repeat_commits"
	KeyResolvedIn         Key = "findings.resolved_in"
	KeyResolvedInBy       Key = "findings.resolved_in_by"
	KeyResolutionTitle    Key = "findings.resolution_title"
	KeyResolvedVerdict    Key = "findings.resolved_verdict"
	KeyResolvedFindings1  Key = "findings.resolved_findings_1"
	KeyResolvedFindingsN  Key = "findings.resolved_findings_n"
	KeyResolvedReports1   Key = "findings.resolved_reports_1"
	KeyResolvedReportsN   Key = "findings.resolved_reports_n"
	KeyEarlierReport      Key = "findings.earlier_report"
	KeyDigestTitle        Key = "digest.title"
	KeyDigestEveryRepo    Key = "digest.every_repo"
	KeyDigestVerdict      Key = "digest.verdict"
	KeyDigestOpen0        Key = "digest.open_0"
	KeyDigestOpen1        Key = "digest.open_1"
	KeyDigestOpenN        Key = "digest.open_n"
	KeyDigestOpenByPath   Key = "digest.open_by_path"
	KeyDigestPeriod       Key = "digest.period"
	KeyDigestNoneOpen     Key = "digest.none_open"
	KeyDigestPathLine     Key = "digest.path_line"
	KeyDigestMorePaths    Key = "digest.more_paths"
	KeyDigestMoreOpen     Key = "digest.more_open"
	KeyDigestDays0        Key = "digest.days_0"
	KeyDigestDays1        Key = "digest.days_1"
	KeyDigestDaysN        Key = "digest.days_n"
	KeyDigestNew          Key = "digest.new"
	KeyDigestResolved     Key = "digest.resolved"
	KeyDigestDismissed    Key = "digest.dismissed"
	KeyDigestFPRate       Key = "digest.fp_rate"
	KeyDigestRate         Key = "digest.rate"
	KeyDigestNoneReported Key = "digest.none_reported"
	KeyDigestReviews      Key = "digest.reviews"
	KeyDigestCost         Key = "digest.cost"
	KeyDigestCostUnknown  Key = "digest.cost_unknown"
	KeyDigestPeriodRange  Key = "digest.period_range"

	// Cost in the footer, and the notice of a review stopped at a cap.
	KeyFileOverPrompt Key = "file.over_prompt_budget"
	KeyFooterCost     Key = "report.footer_cost"
	KeyFooterCached   Key = "report.footer_cached"
	KeyStoppedNotice  Key = "report.stopped_notice"

	// A spent [[budget]]: the report's notice (name, period, amount,
	// [fallback model,] when reviews resume), its amounts, the skip line
	// and the digest's budget lines.
	KeyBudgetBuiltinOnly Key = "budget.builtin_only"
	KeyBudgetSkip        Key = "budget.skip"
	KeyBudgetFallback    Key = "budget.fallback"
	KeyBudgetAmount      Key = "budget.amount"
	KeyBudgetTokens      Key = "budget.tokens"
	KeyBudgetPeriodDay   Key = "budget.period_day"
	KeyBudgetPeriodMonth Key = "budget.period_month"
	KeySkipBudget        Key = "skip.budget_spent"
	KeyDigestBudgets     Key = "digest.budgets"
	KeyDigestBudgetLine  Key = "digest.budget_line"
	KeyDigestBudgetSpent Key = "digest.budget_spent"
	KeyDigestBudgetWarn  Key = "digest.budget_warn"
	// The builtin rules' findings and summary (agent/builtin), worded in
	// the review's output language like the model's.
	KeyBuiltinCredential    Key = "builtin.credential"
	KeyBuiltinCredentialFix Key = "builtin.credential_fix"
	KeyBuiltinConflict      Key = "builtin.conflict"
	KeyBuiltinConflictFix   Key = "builtin.conflict_fix"
	KeyBuiltinTitle         Key = "builtin.title"
	KeyBuiltinScanned       Key = "builtin.scanned"
	KeyBuiltinLines1        Key = "builtin.lines_1"
	KeyBuiltinLinesN        Key = "builtin.lines_n"
	KeyBuiltinFiles1        Key = "builtin.files_1"
	KeyBuiltinFilesN        Key = "builtin.files_n"
	KeyBuiltinRejected1     Key = "builtin.rejected_1"
	KeyBuiltinRejectedN     Key = "builtin.rejected_n"
	KeyBuiltinOverLimit1    Key = "builtin.over_limit_1"
	KeyBuiltinOverLimitN    Key = "builtin.over_limit_n"

	// The web page (package web): its labels, its states and events,
	// its error pages. Templates name them by their string ("web.code");
	// an enum's words are "web.<kind>.<value>".
	KeyWebNavFindings         Key = "web.nav_findings"
	KeyWebNavRuns             Key = "web.nav_runs"
	KeyWebSignOut             Key = "web.sign_out"
	KeyWebTitleFinding        Key = "web.title_finding"
	KeyWebTitleRun            Key = "web.title_run"
	KeyWebRunsOf              Key = "web.runs_of"
	KeyWebTitleSignIn         Key = "web.title_sign_in"
	KeyWebErrNotFound         Key = "web.err_not_found"
	KeyWebErrNoPage           Key = "web.err_no_page"
	KeyWebErrNoFinding        Key = "web.err_no_finding"
	KeyWebErrFindingAddr      Key = "web.err_finding_addr"
	KeyWebErrFindingGone      Key = "web.err_finding_gone"
	KeyWebErrWentWrong        Key = "web.err_went_wrong"
	KeyWebErrStore            Key = "web.err_store"
	KeyWebErrBadFilter        Key = "web.err_bad_filter"
	KeyWebErrBadState         Key = "web.err_bad_state"
	KeyWebErrBadSeverity      Key = "web.err_bad_severity"
	KeyWebErrBadPage          Key = "web.err_bad_page"
	KeyWebErrPageParam        Key = "web.err_page_param"
	KeyWebErrNoRun            Key = "web.err_no_run"
	KeyWebErrRunAddr          Key = "web.err_run_addr"
	KeyWebErrRunGone          Key = "web.err_run_gone"
	KeyWebErrUnknownAction    Key = "web.err_unknown_action"
	KeyWebErrUnknownActionMsg Key = "web.err_unknown_action_msg"
	KeyWebErrNothingToDo      Key = "web.err_nothing_to_do"
	KeyWebErrNotApplicable    Key = "web.err_not_applicable"
	KeyWebErrRemoved          Key = "web.err_removed"
	KeyWebNoticeNotApplicable Key = "web.notice_not_applicable"
	KeyWebErrNoAction         Key = "web.err_no_action"
	KeyWebErrLinkNumber       Key = "web.err_link_number"
	KeyWebErrLinkExpired      Key = "web.err_link_expired"
	KeyWebErrLinkExpiredMsg   Key = "web.err_link_expired_msg"
	KeyWebErrLinkInvalid      Key = "web.err_link_invalid"
	KeyWebErrLinkInvalidMsg   Key = "web.err_link_invalid_msg"
	KeyWebErrNothingToSend    Key = "web.err_nothing_to_send"
	KeyWebErrViewLinkPost     Key = "web.err_view_link_post"
	KeyWebErrSignInRequired   Key = "web.err_sign_in_required"
	KeyWebErrAuthOff          Key = "web.err_auth_off"
	KeyWebErrUntrusted        Key = "web.err_untrusted"
	KeyWebErrNoUser           Key = "web.err_no_user"
	KeyWebErrTokenOff         Key = "web.err_token_off"
	KeyWebErrWrongToken       Key = "web.err_wrong_token"
	KeyWebErrBadForm          Key = "web.err_bad_form"
	KeyWebErrBadFormMsg       Key = "web.err_bad_form_msg"
	KeyWebErrRefused          Key = "web.err_refused"
	KeyWebErrCrossSite        Key = "web.err_cross_site"
	KeyWebErrFormExpired      Key = "web.err_form_expired"
	KeyWebErrFormExpiredMsg   Key = "web.err_form_expired_msg"
	KeyWebErrRender           Key = "web.err_render"
	KeyWebErrNotConfigured    Key = "web.err_not_configured"
	KeyWebHttpStatus          Key = "web.http_status"
	KeyWebDoneUseful          Key = "web.done_useful"
	KeyWebDoneFalsePositive   Key = "web.done_false_positive"
	KeyWebDoneWontFix         Key = "web.done_wont_fix"
	KeyWebDoneAcceptedRisk    Key = "web.done_accepted_risk"
	KeyWebDoneReopen          Key = "web.done_reopen"
	KeyWebStateOpen           Key = "web.state.open"
	KeyWebStateReopened       Key = "web.state.reopened"
	KeyWebStateResolved       Key = "web.state.resolved"
	KeyWebStateDismissed      Key = "web.state.dismissed"
	KeyWebEventReported       Key = "web.event.reported"
	KeyWebEventSeen           Key = "web.event.seen"
	KeyWebEventResolved       Key = "web.event.resolved"
	KeyWebEventReopened       Key = "web.event.reopened"
	KeyWebEventDismissed      Key = "web.event.dismissed"
	KeyWebEventUseful         Key = "web.event.useful"
	KeyWebEventMoved          Key = "web.event.moved"
	KeyWebViaSlack            Key = "web.via.slack"
	KeyWebViaWeb              Key = "web.via.web"
	KeyWebViaCli              Key = "web.via.cli"
	KeyWebViaMcp              Key = "web.via.mcp"
	KeyWebViaReview           Key = "web.via.review"
	KeyWebRunQueued           Key = "web.run.queued"
	KeyWebRunRunning          Key = "web.run.running"
	KeyWebRunSucceeded        Key = "web.run.succeeded"
	KeyWebRunFailed           Key = "web.run.failed"
	KeyWebRunSkipped          Key = "web.run.skipped"
	KeyWebRunRetrying         Key = "web.run.retrying"
	KeyWebRunHeld             Key = "web.run.held"
	KeyWebSourceTrigger       Key = "web.source.trigger"
	KeyWebSourceSpool         Key = "web.source.spool"
	KeyWebSourceManual        Key = "web.source.manual"
	KeyWebSourceReconcile     Key = "web.source.reconcile"
	KeyWebPurposeReport       Key = "web.purpose.report"
	KeyWebPurposeError        Key = "web.purpose.error"
	KeyWebPurposeResolution   Key = "web.purpose.resolution"
	KeyWebPurposeDigest       Key = "web.purpose.digest"
	KeyWebSendPending         Key = "web.send.pending"
	KeyWebSendSent            Key = "web.send.sent"
	KeyWebSendFailed          Key = "web.send.failed"
	KeyWebSendSuppressed      Key = "web.send.suppressed"
	KeyWebSendDead            Key = "web.send.dead"
	KeyWebSendUnknown         Key = "web.send.unknown"
	KeyWebJustNow             Key = "web.just_now"
	KeyWebMinAgo              Key = "web.min_ago"
	KeyWebHAgo                Key = "web.h_ago"
	KeyWebDaysAgo             Key = "web.days_ago"
	KeyWebFirstSeen           Key = "web.first_seen"
	KeyWebLastSeen            Key = "web.last_seen"
	KeyWebRevAt               Key = "web.rev_at"
	KeyWebRevByAt             Key = "web.rev_by_at"
	KeyWebLastSeen1           Key = "web.last_seen_1"
	KeyWebLastSeenN           Key = "web.last_seen_n"
	KeyWebLastAction          Key = "web.last_action"
	KeyWebActedBy             Key = "web.acted_by"
	KeyWebActedAsBy           Key = "web.acted_as_by"
	KeyWebVotes1              Key = "web.votes_1"
	KeyWebVotesN              Key = "web.votes_n"
	KeyWebReportedBy          Key = "web.reported_by"
	KeyWebCode                Key = "web.code"
	KeyWebNoteRunGone         Key = "web.note_run_gone"
	KeyWebNoteWholeFile       Key = "web.note_whole_file"
	KeyWebNoteSrcDropped      Key = "web.note_src_dropped"
	KeyWebNoteFileGone        Key = "web.note_file_gone"
	KeyWebNoteUnreadable      Key = "web.note_unreadable"
	KeyWebNotePastEnd         Key = "web.note_past_end"
	KeyWebNoteExcerpt         Key = "web.note_excerpt"
	KeyWebConfirmQ            Key = "web.confirm_q"
	KeyWebYourName            Key = "web.your_name"
	KeyWebOptionalRecorded    Key = "web.optional_recorded"
	KeyWebReason              Key = "web.reason"
	KeyWebOptional            Key = "web.optional"
	KeyWebConfirm             Key = "web.confirm"
	KeyWebLinkRecorded        Key = "web.link_recorded"
	KeyWebActions             Key = "web.actions"
	KeyWebHistory             Key = "web.history"
	KeyWebWhen                Key = "web.when"
	KeyWebWhat                Key = "web.what"
	KeyWebWho                 Key = "web.who"
	KeyWebVia                 Key = "web.via"
	KeyWebWhere               Key = "web.where"
	KeyWebNote                Key = "web.note"
	KeyWebRepo                Key = "web.repo"
	KeyWebPath                Key = "web.path"
	KeyWebState               Key = "web.state"
	KeyWebAny                 Key = "web.any"
	KeyWebActive              Key = "web.active"
	KeyWebSeverity            Key = "web.severity"
	KeyWebSevOrWorse          Key = "web.sev_or_worse"
	KeyWebCategory            Key = "web.category"
	KeyWebFilter              Key = "web.filter"
	KeyWebMessage             Key = "web.message"
	KeyWebSeen                Key = "web.seen"
	KeyWebNoMatch             Key = "web.no_match"
	KeyWebNewer               Key = "web.newer"
	KeyWebOlder               Key = "web.older"
	KeyWebNewest              Key = "web.newest"
	KeyWebTheChange           Key = "web.the_change"
	KeyWebQueued              Key = "web.queued"
	KeyWebFinished            Key = "web.finished"
	KeyWebOutcome             Key = "web.outcome"
	KeyWebError               Key = "web.error"
	KeyWebCost                Key = "web.cost"
	KeyWebCost1               Key = "web.cost_1"
	KeyWebCostN               Key = "web.cost_n"
	KeyWebNoAgent             Key = "web.no_agent"
	KeyWebReport              Key = "web.report"
	KeyWebStoredFor           Key = "web.stored_for"
	KeyWebNoReport            Key = "web.no_report"
	KeyWebFindingN            Key = "web.finding_n"
	KeyWebRunNoFindings       Key = "web.run_no_findings"
	KeyWebDeliveries          Key = "web.deliveries"
	KeyWebChannel             Key = "web.channel"
	KeyWebPurpose             Key = "web.purpose"
	KeyWebStatus              Key = "web.status"
	KeyWebAttempts            Key = "web.attempts"
	KeyWebSent                Key = "web.sent"
	KeyWebVerdict             Key = "web.verdict"
	KeyWebLastError           Key = "web.last_error"
	KeyWebNoSends             Key = "web.no_sends"
	KeyWebRun                 Key = "web.run"
	KeyWebRevision            Key = "web.revision"
	KeyWebNoRuns              Key = "web.no_runs"
	KeyWebNoRunsBefore        Key = "web.no_runs_before"
	KeyWebSignInTitle         Key = "web.sign_in_title"
	KeyWebAccessToken         Key = "web.access_token"
	KeyWebTokenHint           Key = "web.token_hint"
	KeyWebSignIn              Key = "web.sign_in"

	KeyDateTime Key = "time.date_time"
	KeyDate     Key = "time.date"
)

// catalogue holds every language's formats (catalog_en.go,
// catalog_zh.go).
var catalogue = map[Language]map[Key]string{LangEnglish: english, LangChinese: chinese}

// printers format numbers as each language groups them ("1,234"); they
// read no catalogue of x/text's own: the formats come from ours.
var printers = map[Language]*message.Printer{
	LangEnglish: message.NewPrinter(language.English, message.Catalog(catalog.NewBuilder())),
	LangChinese: message.NewPrinter(language.SimplifiedChinese, message.Catalog(catalog.NewBuilder())),
}

// T is the catalogue's entry key in l, formatted with args. Numbers are
// grouped as l groups them, so an identifier (a run id, a revision) must
// be passed as a string: "aicr audit show 1,234" would not run. A key
// missing from l falls back to English, and one missing everywhere shows
// as itself, so a slip shows up in the report instead of a blank.
func (l Language) T(key Key, args ...any) string {
	format := l.format(key)
	if len(args) == 0 {
		return format
	}
	return printers[l.Norm()].Sprintf(format, args...)
}

// format is key's entry in l, falling back as T does. Dates use it with
// fmt, since a year is a number no language groups ("2,026").
func (l Language) format(key Key) string {
	if f, ok := catalogue[l.Norm()][key]; ok {
		return f
	}
	if f, ok := english[key]; ok {
		return f
	}
	return string(key)
}

// Words are the labels of l.
func (l Language) Words() Words {
	return Words{Problems: l.T(KeyProblems), Suggestion: l.T(KeySuggestion), ViewChange: l.T(KeyViewChange),
		Author: l.T(KeyAuthor), ReviewedBy: l.T(KeyReviewedBy), StillOpen: l.T(KeyStillOpen), Finding: l.T(KeyFinding),
		Reopened: l.T(KeyReopened), Colon: l.T(KeyColon), Severities: l.severities()}
}

func (l Language) severities() map[string]string {
	return map[string]string{"critical": l.T(KeySevCritical), "high": l.T(KeySevHigh), "medium": l.T(KeySevMedium),
		"low": l.T(KeySevLow), "info": l.T(KeySevInfo)}
}

// DateTime is t as l writes a date and time, in t's location:
// "2026-12-02 09:00" or "2026年12月2日 09:00".
func (l Language) DateTime(t time.Time) string {
	return fmt.Sprintf(l.format(KeyDateTime), t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute())
}

// Date is t's date as l writes it: "2026-12-02" or "2026年12月2日".
func (l Language) Date(t time.Time) string {
	return fmt.Sprintf(l.format(KeyDate), t.Year(), int(t.Month()), t.Day())
}

// verbPattern finds the fmt verbs of a format: an optional explicit
// argument index, flags, width, precision and the verb ("%%" is not one).
var verbPattern = regexp.MustCompile(`%(\[(\d+)\])?[-+# 0]*\d*(\.\d+)?([a-zA-Z%])`)

// FormatVerbs maps each argument of format (1-based) to its verb, so two
// translations can be checked to take the same arguments even when one
// reorders them ("%[2]s … %[1]d").
func FormatVerbs(format string) map[int]string {
	out := map[int]string{}
	next := 1
	for _, m := range verbPattern.FindAllStringSubmatch(format, -1) {
		if m[4] == "%" {
			continue
		}
		if m[2] != "" {
			fmt.Sscan(m[2], &next)
		}
		out[next] = m[4]
		next++
	}
	return out
}

// CatalogueKeys lists every key of l, for tests and tools.
func CatalogueKeys(l Language) []Key {
	out := make([]Key, 0, len(catalogue[l]))
	for k := range catalogue[l] {
		out = append(out, k)
	}
	return out
}

// CatalogueFormat is l's format for key, and whether l has it.
func CatalogueFormat(l Language, key Key) (string, bool) {
	f, ok := catalogue[l][key]
	return f, ok
}
