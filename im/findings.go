package im

// The parts of a report that come from findings living across commits
// (package findings): which problems are new, which were reported before
// and are only mentioned, what a later change resolved, and the periodic
// digest. A report without them (tracking off, an older aicr's stored
// report) renders as before.

// ReportKind says what a report is about.
type ReportKind string

const (
	// KindReview is a review's findings (the zero value).
	KindReview ReportKind = ""
	// KindResolution tells a channel that findings it was told about
	// were resolved by a later change (Report.Followups).
	KindResolution ReportKind = "resolution"
	// KindDigest is a [[digest]]'s periodic summary (Report.Digest).
	KindDigest ReportKind = "digest"
)

// Entry is what a report knows of one of its Problems as a finding; the
// report's Entries are aligned with its Problems (same index), or empty.
type Entry struct {
	FindingID int64 `json:"finding_id"`
	// State is "" for a finding this report announces, "reopened" for one
	// that came back, "resolved" or "dismissed" in a report a platform
	// edits after the fact (Slack's chat.update).
	State string `json:"state,omitempty"`
	// Note says what happened since, in the edited report: "Resolved in
	// r3 by bob".
	Note string `json:"note,omitempty"`
	// Page is the finding's signed web link; "" when [web] is off.
	Page string `json:"page,omitempty"`
	// Actions are the finding's signed action links (useful, false
	// positive, won't fix), in findings.ReportActions order; empty when
	// [web] is off. Slack also shows them as buttons.
	Actions []ActionLink `json:"actions,omitempty"`
}

// ActionLink is one action a reader can take on a finding.
type ActionLink struct {
	// Action is the findings.Action ("useful", "false_positive", ...).
	Action string `json:"action"`
	// Label is its text, from Words.
	Label string `json:"label"`
	// URL is the signed link; "" when [web] is off (Slack buttons still
	// work over Socket Mode).
	URL string `json:"url,omitempty"`
}

// Repeat is a finding an earlier report of this channel announced and
// this review saw again, shown as one compact line (repeat = "mention").
type Repeat struct {
	FindingID int64  `json:"finding_id"`
	File      string `json:"file"`
	Line      int    `json:"line"`
	Severity  string `json:"severity"`
	Message   string `json:"message"`
	// Since is the revision that first reported it, as its VCS names it
	// ("r120", "change 120").
	Since string `json:"since"`
	// Commits is how many reviews reported it, this one included.
	Commits int    `json:"commits"`
	Page    string `json:"page,omitempty"`
	// Text is the whole line as BuildReport words it, for dialects that
	// print it as it is.
	Text string `json:"text"`
}

// Followup is what a resolution report says about one earlier report:
// which of its findings a later change resolved.
type Followup struct {
	// RunID and Revision are the earlier report's run and change.
	RunID    int64  `json:"run_id"`
	Revision string `json:"revision"`
	// Title is the earlier report's title, so the follow-up names it.
	Title string `json:"title"`
	// MessageID is the platform's id of the earlier report's first part
	// (Slack: "<channel id>:<ts>"), for platforms that edit or thread; ""
	// when it was not recorded.
	MessageID string `json:"message_id,omitempty"`
	// Updated is the earlier report with these findings marked resolved
	// (Entries' State and Note), for platforms that edit the message.
	Updated  *Report    `json:"updated,omitempty"`
	Resolved []Resolved `json:"resolved"`
}

// Resolved is one finding a later change resolved.
type Resolved struct {
	FindingID int64  `json:"finding_id"`
	File      string `json:"file"`
	Line      int    `json:"line"`
	Severity  string `json:"severity"`
	Category  string `json:"category"`
	Message   string `json:"message"`
	// Revision resolved it ("r3", "change 3"); Author committed it.
	Revision string `json:"revision"`
	Author   string `json:"author,omitempty"`
	Page     string `json:"page,omitempty"`
}

// Digest is a [[digest]]'s summary of a period: what is open, what came
// and went, how precise the findings were, what the reviews cost.
type Digest struct {
	// Name is the [[digest]]'s name; Period names the period ("2026-12-01
	// 09:00 – 2026-12-02 09:00 UTC").
	Name   string   `json:"name"`
	Period string   `json:"period"`
	Repos  []string `json:"repos,omitempty"`
	// Paths are the path prefixes it counts; empty means every path.
	Paths []string `json:"paths,omitempty"`
	// Open counts every open (or reopened) finding it covers at the end
	// of the period; OpenByPath may list only the first paths of them.
	Open int `json:"open"`
	// OpenByPath counts the open findings per path, oldest first.
	OpenByPath []DigestPath `json:"open_by_path"`
	// MorePaths counts the paths with open findings OpenByPath leaves
	// out (it is bounded, so the stored report stays small).
	MorePaths int `json:"more_paths,omitempty"`
	New       int `json:"new"`
	Resolved  int `json:"resolved"`
	Dismissed int `json:"dismissed"`
	// FalsePositiveRate is dismissed-as-false-positive over reported in
	// the period, 0..1; negative when nothing was reported.
	FalsePositiveRate float64 `json:"false_positive_rate"`
	// Reported counts the findings first reported in the period and
	// FalsePositives those of them dismissed as false positives: the
	// rate's two terms.
	Reported       int `json:"reported"`
	FalsePositives int `json:"false_positives"`
	// Reviews counts the runs that finished in the period; CostUSD is
	// their agents' cost, when [agent.llm] prices are configured.
	Reviews int     `json:"reviews"`
	CostUSD float64 `json:"cost_usd"`
}

// DigestPath is one path's open findings in a digest.
type DigestPath struct {
	Path string `json:"path"`
	Open int    `json:"open"`
	// OldestDays is the age of its oldest open finding, in days.
	OldestDays int `json:"oldest_days"`
}
