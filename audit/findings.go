package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/review"
)

// Store keeps the findings and their history (package findings decides,
// the Store applies).
var _ findings.Store = (*Store)(nil)

// chunk bounds the ids, keys or paths one IN list carries: far below
// SQLite's and PostgreSQL's limits on parameters, whatever the change.
const chunk = 400

const findingColumns = `id, repo, path, category, finding_key, agent_fingerprint, anchor, state, severity, message,
	suggestion, line, end_line, agent, model, first_run_id, first_revision, first_author, first_seen_at,
	last_run_id, last_revision, last_seen_at, sightings, announced_run_id, resolved_run_id, resolved_revision,
	resolved_author, resolved_at, acted_by, acted_via, acted_at, dismissal, note, useful`

func scanFinding(sc scanner) (findings.Finding, error) {
	var (
		f                          findings.Finding
		state, sev, via, dismissal string
		firstSeen, lastSeen        string
		resolvedAt, actedAt        sql.NullString
		err                        error
	)
	if err = sc.Scan(&f.ID, &f.Repo, &f.Path, &f.Category, &f.Key, &f.AgentFingerprint, &f.Anchor, &state, &sev, &f.Message,
		&f.Suggestion, &f.Line, &f.EndLine, &f.Agent, &f.Model, &f.FirstRunID, &f.FirstRevision, &f.FirstAuthor, &firstSeen,
		&f.LastRunID, &f.LastRevision, &lastSeen, &f.Sightings, &f.AnnouncedRunID, &f.ResolvedRunID, &f.ResolvedRevision,
		&f.ResolvedAuthor, &resolvedAt, &f.ActedBy, &via, &actedAt, &dismissal, &f.Note, &f.Useful); err != nil {
		return f, err
	}
	f.State, f.Severity, f.ActedVia, f.Dismissal = findings.State(state), review.Severity(sev), findings.Via(via), findings.Action(dismissal)
	if f.FirstSeenAt, err = parseTime(firstSeen); err != nil {
		return f, err
	}
	if f.LastSeenAt, err = parseTime(lastSeen); err != nil {
		return f, err
	}
	if f.ResolvedAt, err = parseNullTime(resolvedAt); err != nil {
		return f, err
	}
	f.ActedAt, err = parseNullTime(actedAt)
	return f, err
}

func collectFindings(rows *sql.Rows, err error) ([]findings.Finding, error) {
	var out []findings.Finding
	err = eachRow(rows, err, func(rows *sql.Rows) error {
		f, err := scanFinding(rows)
		if err == nil {
			out = append(out, f)
		}
		return err
	})
	return out, err
}

// TrackFindings applies one review to its repo's findings in one
// read-write transaction (on PostgreSQL under the writer lock, so two
// daemons tracking the same run, or two runs of one repo, never insert
// or resolve a finding twice): it reads the candidates (by the problems'
// keys, by the change's paths and the paths they were renamed from),
// lets package findings decide, and writes the rows and their events. A
// run tracked again decides the same Outcome from what its first pass
// wrote and writes nothing.
func (s *Store) TrackFindings(ctx context.Context, in findings.Review) (findings.Outcome, error) {
	if in.At.IsZero() {
		in.At = s.now()
	}
	plan, err := findings.Prepare(in)
	if err != nil {
		return findings.Outcome{}, err
	}
	what := fmt.Sprintf("track findings of run %d (%s@%s)", in.RunID, in.Repo, in.Revision)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return findings.Outcome{}, fmt.Errorf("%s: begin: %w", what, err)
	}
	defer tx.Rollback()
	cands, err := findingCandidates(ctx, tx, in.Repo, plan, in.RunID)
	if err != nil {
		return findings.Outcome{}, fmt.Errorf("%s: read candidates: %w", what, err)
	}
	tracked, err := findingsTrackedBy(ctx, tx, in.RunID)
	if err != nil {
		return findings.Outcome{}, fmt.Errorf("%s: read history: %w", what, err)
	}
	d := plan.Decide(cands, tracked)
	for i := range d.Writes {
		if d.Writes[i].Finding.ID == 0 {
			id, err := insertFinding(ctx, tx, d.Writes[i].Finding)
			if err != nil {
				return findings.Outcome{}, fmt.Errorf("%s: insert finding: %w", what, err)
			}
			d.SetID(i, id)
		} else if err := updateFinding(ctx, tx, d.Writes[i].Finding); err != nil {
			return findings.Outcome{}, fmt.Errorf("%s: update finding %d: %w", what, d.Writes[i].Finding.ID, err)
		}
		for _, e := range d.Writes[i].Events {
			e.FindingID = d.Writes[i].Finding.ID
			if err := insertFindingEvent(ctx, tx, e); err != nil {
				return findings.Outcome{}, fmt.Errorf("%s: finding %d history: %w", what, e.FindingID, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return findings.Outcome{}, fmt.Errorf("%s: commit: %w", what, err)
	}
	return d.Outcome, nil
}

// findingCandidates reads the repo's findings that have one of the
// plan's keys, are at one of its paths or under a directory it deleted,
// or were resolved by run.
func findingCandidates(ctx context.Context, q querier, repo string, plan *findings.Plan, run int64) ([]findings.Finding, error) {
	byID := map[int64]findings.Finding{}
	add := func(where string, args []any) error {
		got, err := collectFindings(q.QueryContext(ctx, `SELECT `+findingColumns+` FROM findings WHERE repo = ? AND `+where,
			append([]any{repo}, args...)...))
		for _, f := range got {
			byID[f.ID] = f
		}
		return err
	}
	for _, c := range chunks(plan.Keys()) {
		in, args := stringList(c)
		if err := add(`finding_key IN (`+in+`)`, args); err != nil {
			return nil, err
		}
	}
	for _, c := range chunks(plan.Paths()) {
		in, args := stringList(c)
		if err := add(`path IN (`+in+`)`, args); err != nil {
			return nil, err
		}
	}
	for _, dir := range plan.Dirs() {
		where, args := pathClause(dir)
		if err := add(where, args); err != nil {
			return nil, err
		}
	}
	if err := add(`resolved_run_id = ?`, []any{run}); err != nil {
		return nil, err
	}
	out := make([]findings.Finding, 0, len(byID))
	for _, f := range byID {
		out = append(out, f)
	}
	return out, nil
}

// findingsTrackedBy is the set of findings whose history has an event
// of run: the ones an earlier TrackFindings of the run wrote.
func findingsTrackedBy(ctx context.Context, q querier, run int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT finding_id FROM finding_events WHERE run_id = ?`, run)
	err = eachRow(rows, err, func(rows *sql.Rows) error {
		var id int64
		err := rows.Scan(&id)
		out[id] = true
		return err
	})
	return out, err
}

func chunks(s []string) [][]string {
	var out [][]string
	for len(s) > chunk {
		out = append(out, s[:chunk])
		s = s[chunk:]
	}
	if len(s) > 0 {
		out = append(out, s)
	}
	return out
}

func stringList(s []string) (string, []any) {
	args := make([]any, len(s))
	for i, v := range s {
		args[i] = v
	}
	return strings.TrimSuffix(strings.Repeat("?, ", len(s)), ", "), args
}

// findingValues are f's columns after id, in findingColumns order.
func findingValues(f findings.Finding) []any {
	return []any{f.Repo, f.Path, f.Category, f.Key, f.AgentFingerprint, f.Anchor, string(f.State), string(f.Severity), f.Message,
		f.Suggestion, f.Line, f.EndLine, f.Agent, f.Model, f.FirstRunID, f.FirstRevision, f.FirstAuthor, formatTime(f.FirstSeenAt),
		f.LastRunID, f.LastRevision, formatTime(f.LastSeenAt), f.Sightings, f.AnnouncedRunID, f.ResolvedRunID, f.ResolvedRevision,
		f.ResolvedAuthor, nullTime(f.ResolvedAt), f.ActedBy, string(f.ActedVia), nullTime(f.ActedAt), string(f.Dismissal), f.Note, f.Useful}
}

var findingColumnsAfterID = strings.TrimPrefix(strings.Join(strings.Fields(findingColumns), " "), "id, ")

func insertFinding(ctx context.Context, tx *sql.Tx, f findings.Finding) (int64, error) {
	vals := findingValues(f)
	res, err := tx.ExecContext(ctx, `INSERT INTO findings (`+findingColumnsAfterID+`) VALUES (`+
		strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", ")+`)`, vals...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

func updateFinding(ctx context.Context, tx *sql.Tx, f findings.Finding) error {
	cols := strings.Split(findingColumnsAfterID, ", ")
	set := make([]string, len(cols))
	for i, c := range cols {
		set[i] = c + " = ?"
	}
	res, err := tx.ExecContext(ctx, `UPDATE findings SET `+strings.Join(set, ", ")+` WHERE id = ?`, append(findingValues(f), f.ID)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(err, findings.ErrNotFound)
	}
	return nil
}

func insertFindingEvent(ctx context.Context, tx *sql.Tx, e findings.Event) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO finding_events (finding_id, kind, at, actor, via, run_id, revision, action, note, path)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.FindingID, string(e.Kind), formatTime(e.At), e.Actor, string(e.Via), e.RunID, e.Revision, string(e.Action), e.Note, e.Path)
	return err
}

// GetFinding returns one finding, or findings.ErrNotFound.
func (s *Store) GetFinding(ctx context.Context, id int64) (findings.Finding, error) {
	f, err := scanFinding(s.db.QueryRowContext(ctx, `SELECT `+findingColumns+` FROM findings WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("finding %d: %w", id, findings.ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("finding %d: %w", id, err)
	}
	return f, nil
}

// FindingHistory returns a finding's events, oldest first, or
// findings.ErrNotFound when there is no such finding.
func (s *Store) FindingHistory(ctx context.Context, id int64) ([]findings.Event, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("finding %d history: %w", id, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM findings WHERE id = ?`, id).Scan(&n); err != nil {
		return nil, fmt.Errorf("finding %d history: %w", id, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("finding %d: %w", id, findings.ErrNotFound)
	}
	var out []findings.Event
	rows, err := tx.QueryContext(ctx, `SELECT id, finding_id, kind, at, actor, via, run_id, revision, action, note, path
		FROM finding_events WHERE finding_id = ? ORDER BY id`, id)
	err = eachRow(rows, err, func(rows *sql.Rows) error {
		var (
			e                  findings.Event
			kind, at, via, act string
		)
		if err := rows.Scan(&e.ID, &e.FindingID, &kind, &at, &e.Actor, &via, &e.RunID, &e.Revision, &act, &e.Note, &e.Path); err != nil {
			return err
		}
		e.Kind, e.Via, e.Action = findings.EventKind(kind), findings.Via(via), findings.Action(act)
		var err error
		e.At, err = parseTime(at)
		out = append(out, e)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("finding %d history: %w", id, err)
	}
	return out, nil
}

// pathClause matches path p exactly or, as a directory, everything
// under it ("src/net" and "src/net/" both match "src/net/conn.go").
func pathClause(p string) (string, []any) {
	dir := strings.TrimSuffix(p, "/") + "/"
	n := utf8.RuneCountInString(dir)
	if strings.HasSuffix(p, "/") {
		return `substr(path, 1, ?) = ?`, []any{n, dir}
	}
	return `(path = ? OR substr(path, 1, ?) = ?)`, []any{p, n, dir}
}
