package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/review"
)

// The findings tools: findings_list, findings_show and findings_stats
// read; findings_dismiss and findings_reopen are two-phase like every
// mutation, and record the person (Deps.Actor) and where the action came
// from (Deps.Via) in the finding's history, so the web page, chat and
// these tools share one audit trail.

// FindingsListInput filters findings_list (aicr findings list).
type FindingsListInput struct {
	Repo     string `json:"repo,omitempty" jsonschema:"only findings of this repo"`
	Path     string `json:"path,omitempty" jsonschema:"only findings in this file, or under this directory prefix (src/net/)"`
	State    string `json:"state,omitempty" jsonschema:"only findings in this state: open, reopened, resolved or dismissed; active means open or reopened"`
	Severity string `json:"severity,omitempty" jsonschema:"only findings at least this severe: info, low, medium, high or critical"`
	Author   string `json:"author,omitempty" jsonschema:"only findings first reported in a change by this author"`
	Category string `json:"category,omitempty" jsonschema:"only findings of this category"`
	RunID    int64  `json:"run_id,omitempty" jsonschema:"only findings this run reported or resolved"`
	Limit    int    `json:"limit,omitempty" jsonschema:"at most this many findings, newest first (default 50)"`
}

// FindingsListOutput is findings_list's result; Findings is exactly what
// `aicr findings list --format json` prints.
type FindingsListOutput struct {
	Findings []findings.Finding `json:"findings"`
}

// DefaultFindingsLimit is findings_list's and aicr findings list's default.
const DefaultFindingsLimit = 50

// StateActive selects open and reopened findings in a list.
const StateActive = "active"

// FindingsList lists findings, newest first.
func (a *Admin) FindingsList(ctx context.Context, in FindingsListInput) (FindingsListOutput, error) {
	f, err := findingsFilter(in)
	if err != nil {
		return FindingsListOutput{}, err
	}
	store, _, err := a.readStore(ctx)
	if err != nil {
		return FindingsListOutput{}, err
	}
	defer store.Close()
	list, err := store.ListFindings(ctx, f)
	if err != nil {
		return FindingsListOutput{}, storeErr(err)
	}
	if list == nil {
		list = []findings.Finding{}
	}
	return FindingsListOutput{Findings: list}, nil
}

func findingsFilter(in FindingsListInput) (findings.Filter, error) {
	f := findings.Filter{Repo: in.Repo, Path: in.Path, Author: in.Author, Category: in.Category, RunID: in.RunID, Limit: in.Limit}
	switch st := findings.State(in.State); {
	case in.State == "":
	case in.State == StateActive:
		f.States = []findings.State{findings.StateOpen, findings.StateReopened}
	case st.Valid():
		f.States = []findings.State{st}
	default:
		return f, invalid("use open, reopened, resolved, dismissed or active", "state %q is not a finding state", in.State)
	}
	if in.Severity != "" {
		f.Severity = review.Severity(in.Severity)
		if !f.Severity.Valid() {
			return f, invalid("use info, low, medium, high or critical", "severity %q is not a severity", in.Severity)
		}
	}
	switch {
	case in.Limit < 0:
		return f, invalid("give a positive limit, or leave it out for 50", "limit %d is negative", in.Limit)
	case in.Limit == 0:
		f.Limit = DefaultFindingsLimit
	}
	if in.RunID < 0 {
		return f, checkRunID(in.RunID)
	}
	return f, nil
}

// FindingInput names one finding.
type FindingInput struct {
	FindingID int64 `json:"finding_id" jsonschema:"the finding's id (see findings_list)"`
}

// FindingDetail is findings_show's result and `aicr findings show
// --format json`'s output: the finding and its history, oldest first.
type FindingDetail struct {
	Finding findings.Finding `json:"finding"`
	History []findings.Event `json:"history"`
}

// FindingsShow is one finding with its history.
func (a *Admin) FindingsShow(ctx context.Context, in FindingInput) (FindingDetail, error) {
	if err := checkFindingID(in.FindingID); err != nil {
		return FindingDetail{}, err
	}
	store, _, err := a.readStore(ctx)
	if err != nil {
		return FindingDetail{}, err
	}
	defer store.Close()
	f, err := getFinding(ctx, store, in.FindingID)
	if err != nil {
		return FindingDetail{}, err
	}
	history, err := store.FindingHistory(ctx, f.ID)
	if err != nil {
		return FindingDetail{}, findingErr(err)
	}
	if history == nil {
		history = []findings.Event{}
	}
	return FindingDetail{Finding: f, History: history}, nil
}

// FindingsStatsInput narrows findings_stats (aicr findings stats).
type FindingsStatsInput struct {
	Repo  string `json:"repo,omitempty" jsonschema:"only findings of this repo"`
	Since string `json:"since,omitempty" jsonschema:"only findings first reported within this duration (720h) or since this RFC 3339 time"`
}

// StatView is one group's precision: the counts and the share of its
// reported findings not dismissed as false positives.
type StatView struct {
	findings.Stat
	// Precision is (reported - false_positive) / reported, nil when the
	// group reported nothing.
	Precision *float64 `json:"precision"`
}

// FindingsStatsOutput is findings_stats' result; Stats is exactly what
// `aicr findings stats --format json` prints.
type FindingsStatsOutput struct {
	Stats []StatView `json:"stats"`
}

// FindingsStats is the precision per category, rule, agent and model.
func (a *Admin) FindingsStats(ctx context.Context, in FindingsStatsInput) (FindingsStatsOutput, error) {
	var f findings.StatsFilter
	f.Repo = in.Repo
	if in.Since != "" {
		since, err := ParseSince(in.Since, a.d.Now())
		if err != nil {
			return FindingsStatsOutput{}, err
		}
		f.Since = since
	}
	store, _, err := a.readStore(ctx)
	if err != nil {
		return FindingsStatsOutput{}, err
	}
	defer store.Close()
	stats, err := store.FindingStats(ctx, f)
	if err != nil {
		return FindingsStatsOutput{}, storeErr(err)
	}
	out := FindingsStatsOutput{Stats: make([]StatView, 0, len(stats))}
	for _, s := range stats {
		out.Stats = append(out.Stats, ViewStat(s))
	}
	return out, nil
}

// ViewStat adds s's precision.
func ViewStat(s findings.Stat) StatView {
	v := StatView{Stat: s}
	if s.Reported > 0 {
		p := float64(s.Reported-s.FalsePositive) / float64(s.Reported)
		v.Precision = &p
	}
	return v
}

// FindingsDismissInput is findings_dismiss' input (aicr findings dismiss).
type FindingsDismissInput struct {
	FindingID int64  `json:"finding_id" jsonschema:"the open or reopened finding to dismiss (see findings_list)"`
	Reason    string `json:"reason" jsonschema:"false_positive, wont_fix or accepted_risk"`
	Note      string `json:"note,omitempty" jsonschema:"why, kept in the finding's history"`
	TwoPhase
}

// FindingsReopenInput is findings_reopen's input (aicr findings reopen).
type FindingsReopenInput struct {
	FindingID int64  `json:"finding_id" jsonschema:"the dismissed or resolved finding to reopen"`
	Note      string `json:"note,omitempty" jsonschema:"why, kept in the finding's history"`
	TwoPhase
}

// FindingActOutput is the result of findings_dismiss and
// findings_reopen: the outcome and, once applied, the finding as it is
// now.
type FindingActOutput struct {
	Outcome
	Finding *findings.Finding `json:"finding,omitempty"`
}

// Dismissals a person may choose, in the order help texts list them.
var dismissals = []findings.Action{findings.ActionFalsePositive, findings.ActionWontFix, findings.ActionAcceptedRisk}

// FindingsDismiss dismisses a finding: it is never reported again in its
// repo, and the model's prompt lists it. Reversible with FindingsReopen.
func (a *Admin) FindingsDismiss(ctx context.Context, in FindingsDismissInput) (FindingActOutput, error) {
	if err := checkFindingID(in.FindingID); err != nil {
		return FindingActOutput{}, err
	}
	reason := findings.Action(in.Reason)
	if !reason.Dismisses() {
		return FindingActOutput{}, invalidOnCLI("give reason: false_positive, wont_fix or accepted_risk", "give --reason false_positive, wont_fix or accepted_risk",
			"reason %q is not a dismissal", in.Reason)
	}
	return a.actOnFinding(ctx, "findings_dismiss", in.FindingID, findings.Act{Action: reason, Note: in.Note}, in.TwoPhase)
}

// FindingsReopen takes a dismissal or a resolution back: the finding is
// reported again.
func (a *Admin) FindingsReopen(ctx context.Context, in FindingsReopenInput) (FindingActOutput, error) {
	if err := checkFindingID(in.FindingID); err != nil {
		return FindingActOutput{}, err
	}
	return a.actOnFinding(ctx, "findings_reopen", in.FindingID, findings.Act{Action: findings.ActionReopen, Note: in.Note}, in.TwoPhase)
}

// actOnFinding is the two-phase protocol for one person's action: the
// plan names the state change (or nothing, when the finding is already
// there), the apply records it with who and from where, and the verify
// reads the state back.
func (a *Admin) actOnFinding(ctx context.Context, tool string, id int64, act findings.Act, c TwoPhase) (FindingActOutput, error) {
	act.Actor, act.Via = a.d.Actor, a.via()
	out, err := a.run(ctx, mutation{
		tool: tool,
		plan: func(ctx context.Context, store *audit.Store, _ *config.Config) ([]Change, string, error) {
			f, err := getFinding(ctx, store, id)
			if err != nil {
				return nil, "", err
			}
			return planAct(f, act)
		},
		apply: func(ctx context.Context, store *audit.Store, _ *config.Config, ch Change) error {
			act.At = a.d.Now()
			_, err := store.ActOnFinding(ctx, ch.ID, act)
			return findingErr(err)
		},
		verify: func(ctx context.Context, store *audit.Store, _ *config.Config, ch Change) error {
			f, err := getFinding(ctx, store, ch.ID)
			if err != nil {
				return err
			}
			if string(f.State) != ch.To {
				return fmt.Errorf("finding %d is %s", ch.ID, f.State)
			}
			return nil
		},
	}, c)
	if err != nil {
		return FindingActOutput{}, err
	}
	res := FindingActOutput{Outcome: out}
	if out.Confirmed {
		store, _, err := a.readStore(ctx)
		if err != nil {
			return FindingActOutput{}, err
		}
		defer store.Close()
		f, err := getFinding(ctx, store, id)
		if err != nil {
			return FindingActOutput{}, err
		}
		res.Finding = &f
	}
	return res, nil
}

// planAct is the change act makes to f: none, with a note, when f is
// already where act would put it.
func planAct(f findings.Finding, act findings.Act) ([]Change, string, error) {
	ch := Change{Kind: "finding", ID: f.ID, Repo: f.Repo, From: string(f.State),
		Detail: firstLine(fmt.Sprintf("%s:%d [%s] %s: %s", f.Path, f.Line, f.Severity, f.Category, f.Message), 200)}
	if act.Action == findings.ActionReopen {
		if f.State.Active() {
			return nil, fmt.Sprintf("finding %d is already %s.", f.ID, f.State), nil
		}
		ch.Action, ch.To = "reopen_finding", string(findings.StateReopened)
		return []Change{ch}, "", nil
	}
	if f.State == findings.StateDismissed {
		return nil, fmt.Sprintf("finding %d is already dismissed (%s%s%s); reopen it first to dismiss it otherwise.",
			f.ID, f.Dismissal, prefixed(" by ", f.ActedBy), prefixed(" at ", formatAt(f.ActedAt))), nil
	}
	if !f.State.Active() {
		return nil, "", mcperr.New(mcperr.PolicyBlocked, "only an open or reopened finding is dismissed; reopen it first (findings_reopen) if it came back",
			"finding %d is %s", f.ID, f.State).OnCLI("only an open or reopened finding is dismissed; reopen it first (aicr findings reopen) if it came back")
	}
	ch.Action, ch.To = "dismiss_finding", string(findings.StateDismissed)
	ch.Detail = string(act.Action) + ": " + ch.Detail
	return []Change{ch}, "", nil
}

func formatAt(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// via is where an action through these tools came from: the CLI unless
// the process said otherwise (aicr mcp admin says mcp).
func (a *Admin) via() findings.Via {
	if a.d.Via != "" {
		return a.d.Via
	}
	return findings.ViaCLI
}

func checkFindingID(id int64) error {
	if id < 1 {
		return invalidOnCLI("give finding_id, a positive id from findings_list", "give ID, a positive finding id from aicr findings list", "finding_id %d is not a finding id", id)
	}
	return nil
}

func getFinding(ctx context.Context, fs findings.Store, id int64) (findings.Finding, error) {
	f, err := fs.GetFinding(ctx, id)
	if err != nil {
		return findings.Finding{}, findingErr(err)
	}
	return f, nil
}

// findingErr maps findings' sentinels to envelopes, then the store's.
func findingErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, findings.ErrNotFound):
		return mcperr.Wrap(mcperr.NotFound, "list findings with findings_list", err).OnCLI("list findings with aicr findings list")
	case errors.Is(err, findings.ErrConflict):
		// Changed under the plan: a chat button, the web page or a review.
		return mcperr.Wrap(mcperr.PolicyBlocked, "call again without confirm to see the current state", err)
	}
	return storeErr(err)
}

// DismissalNames lists the reasons findings_dismiss takes, for help texts.
func DismissalNames() string {
	names := make([]string, len(dismissals))
	for i, d := range dismissals {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}
