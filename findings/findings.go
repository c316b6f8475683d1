// Package findings gives a review's problems an identity across commits.
// Perforce and SVN have no pull request to hang review state on: changes
// land on trunk one after another, so aicr keeps each finding itself, in
// its own table with its history. A problem reported again by a later
// review of the same code is the same finding (its Key does not contain
// the line number, which moves); a later change that rewrites the
// anchored lines, or deletes the file, and whose review no longer reports
// it resolves it; a person dismisses it (false positive, won't fix,
// accepted risk) from chat, the web page or the CLI, and a dismissed
// finding is never reported again in its repo.
//
// The package holds the types, the key (fingerprint) and the decision
// of what one review does to the repo's findings; package audit stores
// them (it implements Store), as it does delivery's rows.
package findings

import (
	"context"
	"errors"
	"time"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// State is where a finding stands.
type State string

const (
	// StateOpen: reported and not fixed.
	StateOpen State = "open"
	// StateResolved: a later change rewrote the anchored lines (or deleted
	// the file) and its review no longer reported it.
	StateResolved State = "resolved"
	// StateDismissed: a person said it is not to be fixed.
	StateDismissed State = "dismissed"
	// StateReopened: it came back after it was resolved, or a person
	// took back a dismissal. Reported like open.
	StateReopened State = "reopened"
)

// States lists every state, in the order lists show them.
var States = []State{StateOpen, StateReopened, StateResolved, StateDismissed}

// Active reports whether a finding in s still needs a fix: open or
// reopened.
func (s State) Active() bool { return s == StateOpen || s == StateReopened }

// Valid reports whether s is one of States.
func (s State) Valid() bool {
	for _, v := range States {
		if v == s {
			return true
		}
	}
	return false
}

// Action is what a person does to a finding, from a chat button, the web
// page, the CLI or the admin MCP tools.
type Action string

const (
	// ActionUseful counts a vote that the finding was worth reporting; the
	// state does not change.
	ActionUseful Action = "useful"
	// ActionFalsePositive, ActionWontFix and ActionAcceptedRisk dismiss.
	ActionFalsePositive Action = "false_positive"
	ActionWontFix       Action = "wont_fix"
	ActionAcceptedRisk  Action = "accepted_risk"
	// ActionReopen takes a dismissal (or a resolution) back.
	ActionReopen Action = "reopen"
)

// ReportActions are the actions every finding in a report offers.
var ReportActions = []Action{ActionUseful, ActionFalsePositive, ActionWontFix}

// Actions lists every action a person may take.
var Actions = []Action{ActionUseful, ActionFalsePositive, ActionWontFix, ActionAcceptedRisk, ActionReopen}

// Dismisses reports whether a dismisses the finding.
func (a Action) Dismisses() bool {
	return a == ActionFalsePositive || a == ActionWontFix || a == ActionAcceptedRisk
}

// Valid reports whether a is one of Actions.
func (a Action) Valid() bool {
	for _, v := range Actions {
		if v == a {
			return true
		}
	}
	return false
}

// Via says where a person's action came from, for the audit trail.
type Via string

const (
	ViaSlack  Via = "slack"
	ViaWeb    Via = "web"
	ViaCLI    Via = "cli"
	ViaMCP    Via = "mcp"
	ViaReview Via = "review" // aicr itself: reported, seen, resolved, reopened by a review
)

// Finding is one problem as it lives across commits.
type Finding struct {
	ID   int64  `json:"id"`
	Repo string `json:"repo"`
	// Path is where the finding is now: a rename the VCS reported moves it.
	Path     string `json:"path"`
	Category string `json:"category"`
	// Key is aicr's fingerprint (Key): repo, path, category and the
	// normalised anchored lines; the identity a later review matches.
	Key string `json:"key"`
	// AgentFingerprint is the fingerprint the agent gave, a hint that
	// matches when the anchored text moved but the agent kept its name.
	AgentFingerprint string `json:"agent_fingerprint,omitempty"`
	// Anchor stands for the normalised content of the anchored lines
	// (without the context Key adds) as AnchorDigest keeps it: one digest
	// per line, never the code itself (it may be the line that leaked a
	// credential). A later change whose file no longer contains it
	// (Locate) has rewritten them. "" when the text was unavailable.
	Anchor string `json:"-"`

	State      State           `json:"state"`
	Severity   review.Severity `json:"severity"`
	Message    string          `json:"message"`
	Suggestion string          `json:"suggestion,omitempty"`
	// Line and EndLine are where the last review that reported it saw it.
	Line    int `json:"line"`
	EndLine int `json:"end_line,omitempty"`
	// Agent and Model reported it first (for precision per agent/model).
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`

	FirstRunID    int64     `json:"first_run_id"`
	FirstRevision string    `json:"first_revision"`
	FirstAuthor   string    `json:"first_author,omitempty"`
	FirstSeenAt   time.Time `json:"first_seen_at"`
	LastRunID     int64     `json:"last_run_id"`
	LastRevision  string    `json:"last_revision"`
	LastSeenAt    time.Time `json:"last_seen_at"`
	// Sightings counts the reviews that reported it, the first included.
	Sightings int `json:"sightings"`
	// AnnouncedRunID is the run whose report announced it in full: the
	// first, or the one that reported it again after it was resolved. Its
	// dispatches are the messages a resolution refers to.
	AnnouncedRunID int64 `json:"announced_run_id"`

	ResolvedRunID    int64     `json:"resolved_run_id,omitempty"`
	ResolvedRevision string    `json:"resolved_revision,omitempty"`
	ResolvedAuthor   string    `json:"resolved_author,omitempty"`
	ResolvedAt       time.Time `json:"resolved_at,omitzero"`

	// The last person's action that changed the state (dismiss, reopen).
	ActedBy   string    `json:"acted_by,omitempty"`
	ActedVia  Via       `json:"acted_via,omitempty"`
	ActedAt   time.Time `json:"acted_at,omitzero"`
	Dismissal Action    `json:"dismissal,omitempty"` // which dismissal, when dismissed
	Note      string    `json:"note,omitempty"`
	// Useful counts ActionUseful votes.
	Useful int `json:"useful"`
}

// EventKind is one line of a finding's history.
type EventKind string

const (
	EventReported  EventKind = "reported"  // first seen
	EventSeen      EventKind = "seen"      // a later review reported it again
	EventResolved  EventKind = "resolved"  // a later change fixed it
	EventReopened  EventKind = "reopened"  // it came back, or a person reopened it
	EventDismissed EventKind = "dismissed" // a person dismissed it
	EventUseful    EventKind = "useful"    // a person found it useful
	EventMoved     EventKind = "moved"     // its file was renamed
)

// Event is one line of a finding's history: who (a person, or aicr's
// review), when, from where, and which run and revision for a review's.
type Event struct {
	ID        int64     `json:"id"`
	FindingID int64     `json:"finding_id"`
	Kind      EventKind `json:"kind"`
	At        time.Time `json:"at"`
	Actor     string    `json:"actor,omitempty"`
	Via       Via       `json:"via"`
	RunID     int64     `json:"run_id,omitempty"`
	Revision  string    `json:"revision,omitempty"`
	Action    Action    `json:"action,omitempty"`
	Note      string    `json:"note,omitempty"`
	// Path is the new path of a move.
	Path string `json:"path,omitempty"`
}

// Review is what one review run tells the repo's findings.
type Review struct {
	Repo     string
	VCS      vcs.Kind
	RunID    int64
	Revision string
	Author   string
	Agent    string
	Model    string
	At       time.Time
	// Change is the reviewed change: which files it touched, how (renames
	// through CopyFromPath), and which it could not review (Skipped).
	Change *vcs.Change
	// Problems are the validated problems of the review, in report order.
	Problems []review.Problem
	// Source returns the new content of a reviewed file, as lines (the
	// run's src/); an error leaves the file's findings as they are.
	Source func(path string) ([]string, error)
	// Complete is false for a review that did not run whole (failed,
	// partial, skipped): it resolves nothing.
	Complete bool
}

// Class is what a problem of a review is to its repo's findings.
type Class string

const (
	ClassNew       Class = "new"       // never seen before in this repo
	ClassRepeat    Class = "repeat"    // open since an earlier review
	ClassReopened  Class = "reopened"  // resolved before, back now
	ClassDismissed Class = "dismissed" // a person dismissed it: never reported again
)

// Seen is one problem of a review as the repo's findings know it.
type Seen struct {
	// Index is the problem's index in Review.Problems.
	Index   int     `json:"index"`
	Class   Class   `json:"class"`
	Finding Finding `json:"finding"`
	// Duplicate: an earlier problem of the same review has this one's key
	// (the same code, category and file): they are one problem, and a
	// report shows only the first. Class and Finding are the first's.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Outcome is what Track did with one review: one Seen per problem, in
// the problems' order, and the findings the review resolved.
type Outcome struct {
	Seen     []Seen    `json:"seen"`
	Resolved []Finding `json:"resolved"`
}

// Act is a person's action on a finding.
type Act struct {
	Action Action
	Actor  string
	Via    Via
	Note   string
	At     time.Time
}

// Filter selects findings for lists, the web page and the CLI. Zero
// fields select everything.
type Filter struct {
	Repo     string
	Path     string // a path or a directory prefix ("src/net/")
	States   []State
	Severity review.Severity // at least this severe
	Author   string          // FirstAuthor
	Category string
	RunID    int64 // findings a run reported or resolved
	// FirstSeenSince and ResolvedSince select findings first seen, or
	// resolved, at or after them (a digest's "new" and "resolved this
	// period"); zero: any time.
	FirstSeenSince time.Time
	ResolvedSince  time.Time
	Limit          int
	Offset         int
}

// Stat is the precision of one group (category, rule, agent or model):
// how its findings fared.
type Stat struct {
	Group    string `json:"group"` // "category", "agent", "model"
	Value    string `json:"value"`
	Reported int    `json:"reported"`
	Useful   int    `json:"useful"`
	// Dismissed counts every dismissal; FalsePositive those dismissed as
	// false positives.
	Dismissed     int `json:"dismissed"`
	FalsePositive int `json:"false_positive"`
	Resolved      int `json:"resolved"`
	Open          int `json:"open"`
}

// StatsFilter selects the findings Stats counts.
type StatsFilter struct {
	Repo  string
	Since time.Time // first seen at or after
}

// ErrNotFound: no finding has that id.
var ErrNotFound = errors.New("finding not found")

// ErrConflict: the action does not apply to the finding's state
// (dismissing a dismissed finding, reopening an open one).
var ErrConflict = errors.New("action does not apply to the finding's state")

// Store keeps findings and their history. Package audit implements it on
// SQLite and PostgreSQL.
type Store interface {
	// TrackFindings applies one review to its repo's findings in one
	// transaction: new ones inserted, repeats and reopenings recorded,
	// resolutions made. Running it again for the same run gives the same
	// outcome and changes nothing more, so a resumed run is harmless, and
	// two daemons never resolve one finding twice.
	TrackFindings(ctx context.Context, in Review) (Outcome, error)
	GetFinding(ctx context.Context, id int64) (Finding, error)
	ListFindings(ctx context.Context, f Filter) ([]Finding, error)
	FindingHistory(ctx context.Context, id int64) ([]Event, error)
	// ActOnFinding records a person's action, audited and reversible; an
	// action that does not apply to the state is ErrConflict.
	ActOnFinding(ctx context.Context, id int64, act Act) (Finding, error)
	FindingStats(ctx context.Context, f StatsFilter) ([]Stat, error)
	// DismissedIn lists the repo's dismissed findings in paths, newest
	// first, at most limit: what the prompt tells a model not to raise.
	DismissedIn(ctx context.Context, repo string, paths []string, limit int) ([]Finding, error)
}
