package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aicr-dev/aicr/im"
)

// Status is the state of one run's delivery to one channel.
//
//	pending ──claim──► (sending: leased, attempt open) ──► sent
//	                                                   ├─► pending (retry at next_attempt_at)
//	                                                   ├─► failed  (permanent error)
//	                                                   ├─► dead    (retryable, but give_up_after ran out)
//	                                                   └─► unknown (timed out twice: may have arrived)
//	suppressed: the channel's policy chose not to publish; never sent.
type Status string

const (
	StatusPending    Status = "pending"
	StatusSent       Status = "sent"
	StatusFailed     Status = "failed"
	StatusSuppressed Status = "suppressed"
	StatusDead       Status = "dead"
	// StatusUnknown: attempts timed out, so the platform may or may not
	// have the message; sending again risks a duplicate, so it is left to
	// an operator (`aicr dispatch retry`).
	StatusUnknown Status = "unknown"
)

// Statuses lists every status, for flag help and validation.
var Statuses = []Status{StatusPending, StatusSent, StatusSuppressed, StatusFailed, StatusDead, StatusUnknown}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// Undelivered reports whether s is final without the message delivered:
// what an operator has to look at.
func (s Status) Undelivered() bool {
	return s == StatusFailed || s == StatusDead || s == StatusUnknown
}

// Purpose says what a dispatch delivers.
type Purpose string

const (
	PurposeReport Purpose = "report" // the review's findings
	PurposeError  Purpose = "error"  // a failed run's builtin findings (a partial review) or its notice (on_error = "notify")
	// PurposeResolution tells a channel which findings it was told about
	// a later change resolved (im.KindResolution).
	PurposeResolution Purpose = "resolution"
	// PurposeDigest is a [[digest]]'s periodic summary (im.KindDigest);
	// it belongs to no run.
	PurposeDigest Purpose = "digest"
)

// Outcomes of one attempt, as recorded in the attempt log.
const (
	OutcomeSent    = "sent"
	OutcomeRetry   = "retry"
	OutcomeFailed  = "failed"
	OutcomeDead    = "dead"
	OutcomeUnknown = "unknown" // timed out: the platform may have it
)

// ErrNotClaimable: the dispatch is not pending, is leased by another
// sender, is not due yet, or waits behind an earlier retry on its channel.
var ErrNotClaimable = errors.New("dispatch is not claimable")

// ErrUnresolvable: a dispatch can never be sent: its channel left the
// config, or it has no planned report (planned by an older aicr, and its
// run could not be read when the daemon started).
var ErrUnresolvable = errors.New("dispatch cannot be resolved")

// Dispatch is one delivery to one channel: a run's report (or failure
// notice), a run's resolution follow-up, or a digest (RunID 0).
type Dispatch struct {
	ID        int64     `json:"id"`
	RunID     int64     `json:"run_id"`
	Channel   string    `json:"channel"`
	Status    Status    `json:"status"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	SentAt    time.Time `json:"sent_at,omitzero"`
	// Purpose is "report" for a review, "error" for a failed run's notice,
	// "resolution" and "digest" for notices (PlanNotice).
	Purpose Purpose `json:"purpose"`
	// Slot tells a run's notices apart from its report ("" for the report
	// or error row): "resolution", or "digest:<name>:<period start>" for a
	// digest, whose RunID is 0.
	Slot string `json:"slot,omitempty"`
	// NextAttemptAt is when a pending retry is due; zero means now.
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	// Rendered is the body of the last attempt as the channel sent it.
	Rendered string `json:"rendered,omitempty"`
	// MessageID is the platform's id of the posted message (Slack ts),
	// kept so a retry continues a thread instead of posting again.
	MessageID string `json:"message_id,omitempty"`
	// PartsDelivered counts the parts of a split report that reached the
	// platform, so a retry resumes after them.
	PartsDelivered int `json:"parts_delivered,omitempty"`
	// FirstAttemptAt starts the give_up_after window; a manual retry
	// resets it.
	FirstAttemptAt time.Time `json:"first_attempt_at,omitzero"`
	// UnknownOutcomes counts attempts that timed out since the last
	// manual retry.
	UnknownOutcomes int `json:"unknown_outcomes,omitempty"`
}

// Detail is a one-line account of where d stands, for reports.
func (d Dispatch) Detail() string {
	if d.Status != StatusPending {
		return d.LastError
	}
	if d.NextAttemptAt.IsZero() {
		return "queued"
	}
	return fmt.Sprintf("retry at %s: %s", d.NextAttemptAt.Format(time.RFC3339), d.LastError)
}

// Claim is a dispatch taken by one sender for one attempt.
type Claim struct {
	Dispatch Dispatch
	// Attempt numbers attempts across the dispatch's whole life (manual
	// retries included), starting at 1.
	Attempt int
	// AttemptID is the store's handle on the open attempt record.
	AttemptID int64
	// Interrupted is true when an earlier attempt started and never
	// finished (the process died mid-send): the platform may already have
	// the message, so the sender should check before posting again.
	Interrupted bool
	// Report is what the dispatch sends, built under the channel's policy
	// when it was planned; nil for a row an older aicr planned that the
	// daemon's start did not fill.
	Report *im.Report
}

// AttemptResult is the outcome of one attempt, for Store.FinishAttempt.
type AttemptResult struct {
	// Status is the dispatch's new status: sent, pending (a retry is
	// scheduled at NextAttemptAt), failed, dead or unknown.
	Status Status
	// Outcome is what the attempt log records (Outcome*).
	Outcome       string
	NextAttemptAt time.Time
	Reason        string // im.Reason of a failure
	StatusCode    int
	PlatformCode  string
	Response      string // excerpt of the platform's answer
	Error         string
	// Rendered and MessageID replace the dispatch's when non-empty, and
	// PartsDelivered when larger.
	Rendered       string
	MessageID      string
	PartsDelivered int
}

// Attempt is one recorded delivery attempt.
type Attempt struct {
	DispatchID   int64     `json:"dispatch_id"`
	Attempt      int       `json:"attempt"`
	StartedAt    time.Time `json:"started_at"`
	FinishedAt   time.Time `json:"finished_at,omitzero"`
	Outcome      string    `json:"outcome"` // Outcome*; "" when interrupted
	Reason       string    `json:"reason,omitempty"`
	StatusCode   int       `json:"status_code,omitempty"`
	PlatformCode string    `json:"platform_code,omitempty"`
	Response     string    `json:"response,omitempty"`
	Error        string    `json:"error,omitempty"`
}

// Store is what the dispatcher needs from the database; package audit
// implements it. Claims are conditional updates with a lease, so several
// senders and processes never attempt one dispatch at once.
type Store interface {
	// ClaimDispatch takes dispatch id for an attempt or fails with
	// ErrNotClaimable.
	ClaimDispatch(ctx context.Context, id int64, lease time.Duration) (*Claim, error)
	// ClaimDue takes the oldest due dispatch of a finished run to
	// channel; nil when there is none.
	ClaimDue(ctx context.Context, channel string, lease time.Duration) (*Claim, error)
	// DueChannels lists the channels with a due dispatch of a finished run.
	DueChannels(ctx context.Context) ([]string, error)
	// NextDispatchDue is when the earliest pending dispatch of a finished
	// run falls due; ok is false when none is pending.
	NextDispatchDue(ctx context.Context) (at time.Time, ok bool, err error)
	// FinishAttempt records how a claimed attempt ended and releases it.
	FinishAttempt(ctx context.Context, c *Claim, r AttemptResult) (Dispatch, error)
	// ReleaseClaim gives a claim back without counting an attempt: the
	// dispatch stays pending, due at notBefore (zero: now). How says what
	// becomes of the attempt's record.
	ReleaseClaim(ctx context.Context, c *Claim, notBefore time.Time, how Release) (Dispatch, error)
	// RecordParts records, while the attempt runs, that the platform has
	// accepted the first parts parts (and the first one's id, when not
	// empty), so a process killed before the attempt ends resumes after them.
	RecordParts(ctx context.Context, c *Claim, parts int, messageID string) error
	GetDispatch(ctx context.Context, id int64) (Dispatch, error)
	// RunDispatches lists a run's dispatches, oldest first.
	RunDispatches(ctx context.Context, runID int64) ([]Dispatch, error)
	// LastSends is when each channel last had an attempt, so rate limits
	// survive a restart.
	LastSends(ctx context.Context) (map[string]time.Time, error)
}

// Release says what ReleaseClaim does with the attempt's record.
type Release int

const (
	// ReleaseUnsent: nothing went out; the record is removed.
	ReleaseUnsent Release = iota
	// ReleasePartial: parts went out (recorded with RecordParts) and the
	// rest waits for a rate-limit token; the record is kept, finished as
	// a retry, though the dispatch's attempts do not count it.
	ReleasePartial
	// ReleaseMaybeSent: a request was on the wire when our own stop cut it
	// short; the record stays open, so the next claim is Interrupted and
	// the channel checks before posting again.
	ReleaseMaybeSent
)
