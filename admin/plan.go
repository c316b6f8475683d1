package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/mcperr"
)

// TwoPhase is the two-phase part of every mutating tool's input. (Not
// named Confirm: embedded, a type of that name hides its own Confirm
// field from the schema generator, and the tools' input schemas lacked
// confirm.)
type TwoPhase struct {
	Confirm bool   `json:"confirm,omitempty" jsonschema:"apply the plan; without it the tool only returns the plan and writes nothing"`
	PlanID  string `json:"plan_id,omitempty" jsonschema:"with confirm: the plan_id of the plan you reviewed; if the current state gives another plan nothing is written (CONFIRMATION_REQUIRED)"`
}

// Change is one step of a plan: what object goes from which state to
// which.
type Change struct {
	Action string `json:"action" jsonschema:"retry_run, cancel_run, retry_dispatch, pause_repo, resume_repo or remove_run_dir"`
	Kind   string `json:"kind" jsonschema:"run, dispatch or repo"`
	ID     int64  `json:"id,omitempty"`
	Repo   string `json:"repo,omitempty"`
	From   string `json:"from"`
	To     string `json:"to"`
	Detail string `json:"detail,omitempty"`
}

// Outcome is the common part of every mutating tool's result.
type Outcome struct {
	// Confirmed: the plan was applied (Applied lists what changed).
	Confirmed bool `json:"confirmed"`
	// PlanID identifies the plan; pass it back with confirm to apply
	// exactly what was reviewed.
	PlanID  string   `json:"plan_id"`
	Plan    []Change `json:"plan"`
	Applied []Change `json:"applied"`
	Message string   `json:"message"`
}

// mutation is one tool's plan, apply and re-validation.
type mutation struct {
	tool string
	// plan builds the changes from the store's current state.
	plan func(ctx context.Context, store *audit.Store, cfg *config.Config) ([]Change, string, error)
	// apply makes one change.
	apply func(ctx context.Context, store *audit.Store, cfg *config.Config, c Change) error
	// verify reads the object back after apply and says why the change
	// does not hold, if it does not.
	verify func(ctx context.Context, store *audit.Store, cfg *config.Config, c Change) error
}

func planID(tool string, changes []Change) string {
	b, _ := json.Marshal(struct {
		Tool    string   `json:"tool"`
		Changes []Change `json:"changes"`
	}{tool, changes})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// run is the two-phase protocol: without confirm, the plan from a
// read-only store; with it, the plan rebuilt from the current state,
// applied, and every change read back.
func (a *Admin) run(ctx context.Context, m mutation, c TwoPhase) (Outcome, error) {
	if !c.Confirm {
		store, cfg, err := a.readStore(ctx)
		if err != nil {
			return Outcome{}, err
		}
		defer store.Close()
		changes, note, err := m.plan(ctx, store, cfg)
		if err != nil {
			return Outcome{}, err
		}
		out := Outcome{PlanID: planID(m.tool, changes), Plan: nonNil(changes), Applied: []Change{}}
		out.Message = joinNote(fmt.Sprintf("dry run: %s; nothing was written. To apply: call %s with confirm: true and plan_id %q (CLI: the same command without --dry-run).",
			countChanges(changes), m.tool, out.PlanID), note)
		if len(changes) == 0 {
			out.Message = joinNote("nothing to do; nothing was written.", note)
		}
		return out, nil
	}
	cfg, err := a.config()
	if err != nil {
		return Outcome{}, err
	}
	store, err := a.writeStore(ctx, cfg)
	if err != nil {
		return Outcome{}, err
	}
	defer store.Close()
	changes, note, err := m.plan(ctx, store, cfg)
	if err != nil {
		return Outcome{}, err
	}
	id := planID(m.tool, changes)
	if c.PlanID != "" && c.PlanID != id {
		return Outcome{}, mcperr.New(mcperr.ConfirmationRequired,
			fmt.Sprintf("call %s without confirm to see the current plan, then confirm it with its plan_id", m.tool),
			"the state changed since plan %s was made (the current plan is %s: %s); nothing was written", c.PlanID, id, countChanges(changes))
	}
	out := Outcome{Confirmed: true, PlanID: id, Plan: nonNil(changes), Applied: []Change{}}
	for _, ch := range changes {
		if err := m.apply(ctx, store, cfg, ch); err != nil {
			return Outcome{}, partial(out.Applied, ch, err)
		}
		if err := m.verify(ctx, store, cfg, ch); err != nil {
			return Outcome{}, partial(out.Applied, ch, mcperr.New(mcperr.Internal,
				"look at the object with runs_list / run_inspect / dispatch_list / queue_status before retrying", "applied, but re-validation failed: %v", err).
				OnCLI("look at the object with aicr audit list / audit show / dispatch list / queue status before retrying"))
		}
		out.Applied = append(out.Applied, ch)
	}
	out.Message = joinNote(fmt.Sprintf("applied: %s.", countChanges(out.Applied)), note)
	if len(changes) == 0 {
		out.Message = joinNote("nothing to do; nothing was written.", note)
	}
	return out, nil
}

// partial keeps err's code and says which changes were applied before it.
func partial(applied []Change, at Change, err error) error {
	env := *mcperr.From(err)
	env.Message = fmt.Sprintf("%s %d: %s", at.Kind, at.ID, env.Message)
	if at.ID == 0 {
		env.Message = fmt.Sprintf("%s %s: %s", at.Kind, at.Repo, env.Message)
	}
	if len(applied) > 0 {
		env.Message += fmt.Sprintf(" (applied before it: %s)", countChanges(applied))
	}
	return &env
}

func countChanges(changes []Change) string {
	if len(changes) == 0 {
		return "no change"
	}
	parts := make([]string, 0, len(changes))
	for i, c := range changes {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(changes)-10))
			break
		}
		target := c.Repo
		if c.ID != 0 {
			target = fmt.Sprint(c.ID)
		}
		parts = append(parts, fmt.Sprintf("%s %s %s → %s", c.Kind, target, c.From, c.To))
	}
	return fmt.Sprintf("%d change(s): %s", len(changes), strings.Join(parts, "; "))
}

func joinNote(msg, note string) string {
	if note == "" {
		return msg
	}
	return msg + " " + note
}

func nonNil(c []Change) []Change {
	if c == nil {
		return []Change{}
	}
	return c
}
