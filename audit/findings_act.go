package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aicr-dev/aicr/findings"
)

// MaxFindingNote bounds the reason a person gives with an action: a
// sentence or two, not a document pasted into the audit trail.
const MaxFindingNote = 2000

// validVias are where a person's action may come from (ViaReview is
// aicr's own, never a person's).
var validVias = []findings.Via{findings.ViaSlack, findings.ViaWeb, findings.ViaCLI, findings.ViaMCP}

func validateAct(act findings.Act) error {
	switch {
	case !act.Action.Valid():
		return fmt.Errorf("%w: action %q (one of useful, false_positive, wont_fix, accepted_risk, reopen)", ErrInvalid, act.Action)
	case strings.TrimSpace(act.Actor) == "":
		return fmt.Errorf("%w: the actor is empty: every action on a finding is audited with who took it", ErrInvalid)
	case utf8.RuneCountInString(act.Note) > MaxFindingNote:
		return fmt.Errorf("%w: the note has %d characters, at most %d", ErrInvalid, utf8.RuneCountInString(act.Note), MaxFindingNote)
	}
	for _, v := range validVias {
		if act.Via == v {
			return nil
		}
	}
	return fmt.Errorf("%w: via %q (one of slack, web, cli, mcp)", ErrInvalid, act.Via)
}

// ActOnFinding records a person's action on finding id, with an event
// naming who, when, from where and why:
//   - a dismissal (false_positive, wont_fix, accepted_risk) applies to an
//     open or reopened finding;
//   - reopen applies to a dismissed or resolved one (it takes the
//     dismissal or resolution back; the history keeps both);
//   - useful counts once per actor and finding: the same person voting
//     again (a double click, a second link) changes nothing and is not
//     an error.
//
// An action the state does not admit is findings.ErrConflict; no such
// finding is findings.ErrNotFound.
func (s *Store) ActOnFinding(ctx context.Context, id int64, act findings.Act) (findings.Finding, error) {
	if err := validateAct(act); err != nil {
		return findings.Finding{}, fmt.Errorf("finding %d: %w", id, err)
	}
	if act.At.IsZero() {
		act.At = s.now()
	}
	what := fmt.Sprintf("finding %d: %s by %s", id, act.Action, act.Actor)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return findings.Finding{}, fmt.Errorf("%s: begin: %w", what, err)
	}
	defer tx.Rollback()
	f, err := scanFinding(tx.QueryRowContext(ctx, `SELECT `+findingColumns+` FROM findings WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("finding %d: %w", id, findings.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("%s: %w", what, err)
	}
	after, changed, err := s.applyAct(ctx, tx, f, act)
	if err != nil || !changed {
		return f, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE findings SET state = ?, dismissal = ?, acted_by = ?, acted_via = ?, acted_at = ?,
		note = ?, useful = ?, resolved_run_id = ?, resolved_revision = ?, resolved_author = ?, resolved_at = ?
		WHERE id = ? AND state = ? AND useful = ?`,
		string(after.State), string(after.Dismissal), after.ActedBy, string(after.ActedVia), nullTime(after.ActedAt),
		after.Note, after.Useful, after.ResolvedRunID, after.ResolvedRevision, after.ResolvedAuthor, nullTime(after.ResolvedAt),
		id, string(f.State), f.Useful)
	if err != nil {
		return f, fmt.Errorf("%s: %w", what, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return f, fmt.Errorf("%s: %w", what, errors.Join(err, findings.ErrConflict))
	}
	kind := map[bool]findings.EventKind{true: findings.EventDismissed, false: findings.EventReopened}[act.Action.Dismisses()]
	if act.Action == findings.ActionUseful {
		kind = findings.EventUseful
	}
	if err := insertFindingEvent(ctx, tx, findings.Event{FindingID: id, Kind: kind, At: act.At, Actor: act.Actor,
		Via: act.Via, Action: act.Action, Note: act.Note}); err != nil {
		return f, fmt.Errorf("%s: history: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return f, fmt.Errorf("%s: commit: %w", what, err)
	}
	return after, nil
}

// applyAct is f after act; changed is false for a vote the actor had
// already cast.
func (s *Store) applyAct(ctx context.Context, tx *sql.Tx, f findings.Finding, act findings.Act) (after findings.Finding, changed bool, err error) {
	after = f
	switch {
	case act.Action == findings.ActionUseful:
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM finding_events WHERE finding_id = ? AND kind = 'useful' AND actor = ?`,
			f.ID, act.Actor).Scan(&n); err != nil {
			return f, false, fmt.Errorf("finding %d: useful votes: %w", f.ID, err)
		}
		if n > 0 {
			return f, false, nil
		}
		after.Useful++
		return after, true, nil
	case act.Action.Dismisses():
		if !f.State.Active() {
			return f, false, fmt.Errorf("finding %d is %s, not open: %w (reopen it first to dismiss it anew)", f.ID, f.State, findings.ErrConflict)
		}
		after.State, after.Dismissal = findings.StateDismissed, act.Action
	default: // reopen
		if f.State != findings.StateDismissed && f.State != findings.StateResolved {
			return f, false, fmt.Errorf("finding %d is %s: %w (only a dismissed or resolved finding reopens)", f.ID, f.State, findings.ErrConflict)
		}
		after.State, after.Dismissal = findings.StateReopened, ""
		after.ResolvedRunID, after.ResolvedRevision, after.ResolvedAuthor, after.ResolvedAt = 0, "", "", time.Time{}
	}
	after.ActedBy, after.ActedVia, after.ActedAt, after.Note = act.Actor, act.Via, act.At, act.Note
	return after, true, nil
}
