package audit

import (
	"encoding/json"
	"time"

	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
)

// RunStatus is a run's place in its lifecycle:
// queued -> running -> succeeded | failed | skipped, and running -> queued
// again when a crashed daemon restarts.
type RunStatus string

const (
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunSkipped   RunStatus = "skipped"
)

// Valid reports whether s is a known run status.
func (s RunStatus) Valid() bool {
	switch s {
	case RunQueued, RunRunning, RunSucceeded, RunFailed, RunSkipped:
		return true
	}
	return false
}

// The labels `aicr audit list` shows for a queued run that waits for
// something: its next attempt after a transient failure (Retrying), or
// its paused repo (RepoPaused). They are never stored; ListOptions.Status
// takes them so that every label the list shows can be listed alone.
const (
	RunRetrying RunStatus = "retrying"
	RunHeld     RunStatus = "held"
)

// Listable reports whether s is a status or label ListRuns filters on.
func (s RunStatus) Listable() bool { return s.Valid() || s == RunRetrying || s == RunHeld }

// Label is the run's status as a person reads it: "retrying" for a queued
// run waiting for its next attempt, "held" for a queued run of a paused
// repo, else its status.
func (r RunSummary) Label() RunStatus {
	switch {
	case r.Status == RunQueued && r.RepoPaused:
		return RunHeld
	case r.Retrying():
		return RunRetrying
	}
	return r.Status
}

// Final reports whether s ends a run (a status FinishRun accepts).
func (s RunStatus) Final() bool {
	return s == RunSucceeded || s == RunFailed || s == RunSkipped
}

// Enqueued is the result of Enqueue. For a duplicate, EventID and RunID
// are the primary receipt's and its run's.
type Enqueued struct {
	EventID   int64 `json:"event_id"`
	RunID     int64 `json:"run_id"`
	Duplicate bool  `json:"duplicate,omitempty"`
	// Requeued: the revision's run had failed and this receipt put it
	// back in the queue (Duplicate is then false).
	Requeued bool `json:"requeued,omitempty"`
}

// RunSummary is one run as listed by the CLI: the runs row plus the source
// and user of the event that created it.
type RunSummary struct {
	ID           int64           `json:"id"`
	EventID      int64           `json:"event_id"`
	VCS          string          `json:"vcs"`
	Repo         string          `json:"repo"`
	Revision     string          `json:"revision"`
	Status       RunStatus       `json:"status"`
	SkipReason   string          `json:"skip_reason,omitempty"`
	Error        string          `json:"error,omitempty"`
	ProblemCount int             `json:"problem_count"`
	Attempts     int             `json:"attempts"`
	QueuedAt     time.Time       `json:"queued_at"`
	StartedAt    time.Time       `json:"started_at,omitzero"`
	FinishedAt   time.Time       `json:"finished_at,omitzero"`
	RunDir       string          `json:"run_dir,omitempty"`
	Source       triggers.Source `json:"source"`
	User         string          `json:"user,omitempty"`
	// NotBefore is when a queued run waiting for a retry is due.
	NotBefore time.Time `json:"not_before,omitzero"`
	// RetrySince is when the run first failed transiently; retries stop
	// after [daemon] retry_for from then.
	RetrySince time.Time `json:"retry_since,omitzero"`
	// DryRun runs publish nothing and are never resumed after a crash.
	DryRun bool `json:"dry_run,omitempty"`
	// Lease names the process working on a running run.
	Lease Lease `json:"lease,omitzero"`
	// RunDirPrunedAt is when the retention job removed RunDir; zero while
	// the directory is kept.
	RunDirPrunedAt time.Time `json:"run_dir_pruned_at,omitzero"`
	// RepoPaused: the run's repo is paused (aicr repo pause), so a queued
	// run is held until the repo is resumed.
	RepoPaused bool `json:"repo_paused,omitempty"`
}

// Retrying reports whether the run is queued again after a transient
// failure, waiting for its next attempt.
func (r RunSummary) Retrying() bool {
	return r.Status == RunQueued && r.Attempts > 0 && r.Error != ""
}

// Lease is a process's claim on a running run. The owner renews Until
// while it works; recovery takes the run only once Until has passed or
// the owner process is known to be gone.
type Lease struct {
	Owner string    `json:"owner,omitempty"` // random per process (per Store)
	PID   int       `json:"pid,omitempty"`
	Host  string    `json:"host,omitempty"`
	Until time.Time `json:"until,omitzero"`
}

// Run is a run with the event that created it, as a worker needs it.
type Run struct {
	RunSummary
	// Event is the primary event as it was enqueued (its Source field is
	// whatever the sender put there; RunSummary.Source is authoritative).
	Event triggers.Event `json:"event"`
}

// Outcome is how a run ended, given to FinishRun.
type Outcome struct {
	Status     RunStatus // succeeded, failed or skipped
	SkipReason string    // why skipped (no_reviewable_code, ...); lgtm and no_problems_suppressed on a clean succeeded review
	Error      string    // for failed
	Problems   []review.Problem
	Summaries  []review.Summary
}

// EventRecord is one stored receipt of an event.
type EventRecord struct {
	ID          int64           `json:"id"`
	VCS         string          `json:"vcs"`
	Repo        string          `json:"repo"`
	Revision    string          `json:"revision"`
	User        string          `json:"user,omitempty"`
	Client      string          `json:"client,omitempty"`
	Source      triggers.Source `json:"source"`
	ReceivedAt  time.Time       `json:"received_at"`
	DuplicateOf int64           `json:"duplicate_of,omitempty"` // 0 for the primary receipt
	Payload     json.RawMessage `json:"payload"`
}

// RunDetail is everything recorded about one run.
type RunDetail struct {
	Run
	Summaries []review.Summary `json:"summaries"`
	// Events are the primary receipt first, then its duplicates in
	// arrival order.
	Events []EventRecord `json:"events"`
	// Problems are sorted by severity (most severe first), file, line.
	Problems   []review.Problem    `json:"problems"`
	Dispatches []delivery.Dispatch `json:"dispatches"`
	// Agent is what the review agent cost; nil before an agent ran.
	Agent *AgentStats `json:"agent,omitempty"`
	// Budget is the [[budget]] that was spent when the run was reviewed
	// and what it made the review do; nil when no budget applied.
	Budget *im.BudgetNotice `json:"budget,omitempty"`
	// Egress lists the sandbox egress proxy's allowed and refused
	// connections, oldest first.
	Egress []EgressEvent `json:"egress"`
	// SourcesDroppedAt is when the retention job removed the run's src/
	// copies after delivery; zero while they are kept.
	SourcesDroppedAt time.Time `json:"sources_dropped_at,omitzero"`
}

// Result rebuilds the publishable result of a finished run, so a dispatch
// can be replayed from the database alone.
func (d *RunDetail) Result() review.Result {
	r := review.Result{Problems: d.Problems, Summaries: d.Summaries}
	if r.Problems == nil {
		r.Problems = []review.Problem{}
	}
	if r.Summaries == nil {
		r.Summaries = []review.Summary{}
	}
	// A clean review keeps the agent's "lgtm" for machine formats.
	if d.SkipReason != "" && (d.Status == RunSkipped || d.SkipReason == review.SkipReasonLGTM) {
		r.Skip = &review.Skip{Reason: d.SkipReason}
	}
	return r
}

// ListOptions filters ListRuns. Empty strings match everything.
type ListOptions struct {
	Limit int // <= 0 means DefaultListLimit
	Repo  string
	// Status is a stored status or a label (RunRetrying, RunHeld); a
	// queued filter leaves out the runs those labels show.
	Status RunStatus
	// Revision is a canonical revision or changelist number.
	Revision string
	// BeforeID lists only runs older than this one (the next page of a
	// newest-first list); 0 starts at the newest.
	BeforeID int64
}

// DefaultListLimit is ListRuns' limit when none is given.
const DefaultListLimit = 50

// RejectedEvent is a request the daemon refused, for RecordRejectedEvent.
type RejectedEvent struct {
	ID         int64     `json:"id"`
	ReceivedAt time.Time `json:"received_at"`
	Reason     string    `json:"reason"`
	Remote     string    `json:"remote,omitempty"` // client address, if known
	Payload    []byte    `json:"payload"`          // raw body, at most MaxRejectedPayload bytes
	Truncated  bool      `json:"truncated,omitempty"`
}

// MaxRejectedPayload caps the stored body of a rejected request so a
// flood of junk cannot grow the database without bound.
const MaxRejectedPayload = 64 << 10
