package audit

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/review"
)

// ListFindings returns the findings f selects, newest first.
func (s *Store) ListFindings(ctx context.Context, f findings.Filter) ([]findings.Finding, error) {
	where, args, err := findingWhere(f)
	if err != nil {
		return nil, fmt.Errorf("list findings: %w", err)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	if f.Offset < 0 {
		return nil, fmt.Errorf("list findings: %w: offset %d", ErrInvalid, f.Offset)
	}
	out, err := collectFindings(s.db.QueryContext(ctx, `SELECT `+findingColumns+` FROM findings WHERE `+where+
		` ORDER BY id DESC LIMIT ? OFFSET ?`, append(args, limit, f.Offset)...))
	if err != nil {
		return nil, fmt.Errorf("list findings: %w", err)
	}
	return out, nil
}

// findingWhere is the WHERE clause of f.
func findingWhere(f findings.Filter) (string, []any, error) {
	conds := []string{"1 = 1"}
	var args []any
	if f.Repo != "" {
		conds, args = append(conds, "repo = ?"), append(args, f.Repo)
	}
	if f.Path != "" {
		c, a := pathClause(f.Path)
		conds, args = append(conds, c), append(args, a...)
	}
	if len(f.States) > 0 {
		var ss []string
		for _, st := range f.States {
			if !st.Valid() {
				return "", nil, fmt.Errorf("%w: state %q (open, reopened, resolved or dismissed)", ErrInvalid, st)
			}
			ss = append(ss, string(st))
		}
		in, a := stringList(ss)
		conds, args = append(conds, "state IN ("+in+")"), append(args, a...)
	}
	if f.Severity != "" {
		if !f.Severity.Valid() {
			return "", nil, fmt.Errorf("%w: severity %q (info, low, medium, high or critical)", ErrInvalid, f.Severity)
		}
		var ss []string
		for _, sev := range []review.Severity{review.SeverityInfo, review.SeverityLow, review.SeverityMedium, review.SeverityHigh, review.SeverityCritical} {
			if sev.Rank() >= f.Severity.Rank() {
				ss = append(ss, string(sev))
			}
		}
		in, a := stringList(ss)
		conds, args = append(conds, "severity IN ("+in+")"), append(args, a...)
	}
	if f.Author != "" {
		conds, args = append(conds, "first_author = ?"), append(args, f.Author)
	}
	if f.Category != "" {
		conds, args = append(conds, "LOWER(category) = LOWER(?)"), append(args, f.Category)
	}
	if f.RunID != 0 {
		conds = append(conds, `(first_run_id = ? OR announced_run_id = ? OR resolved_run_id = ?
			OR id IN (SELECT finding_id FROM finding_events WHERE run_id = ?))`)
		args = append(args, f.RunID, f.RunID, f.RunID, f.RunID)
	}
	if !f.FirstSeenSince.IsZero() {
		conds, args = append(conds, "first_seen_at >= ?"), append(args, formatTime(f.FirstSeenSince))
	}
	if !f.ResolvedSince.IsZero() {
		conds, args = append(conds, "state = 'resolved' AND resolved_at >= ?"), append(args, formatTime(f.ResolvedSince))
	}
	return strings.Join(conds, " AND "), args, nil
}

// FindingStats counts, per category, agent and model, how the findings
// f selects fared: reported (all of them), useful (found useful by at
// least one person), dismissed (false_positive among them), resolved by
// a later change, and still open (open or reopened). Groups come in
// that order, each by reported count, largest first.
func (s *Store) FindingStats(ctx context.Context, f findings.StatsFilter) ([]findings.Stat, error) {
	where, args := "1 = 1", []any{}
	if f.Repo != "" {
		where, args = where+" AND repo = ?", append(args, f.Repo)
	}
	if !f.Since.IsZero() {
		where, args = where+" AND first_seen_at >= ?", append(args, formatTime(f.Since))
	}
	var out []findings.Stat
	// Categories group case-folded, as keys compare them: "Style" and
	// "style" are one rule.
	for _, g := range []struct{ name, expr string }{{"category", "LOWER(category)"}, {"agent", "agent"}, {"model", "model"}} {
		rows, err := s.db.QueryContext(ctx, `SELECT `+g.expr+`, COUNT(*),
			COALESCE(SUM(CASE WHEN useful > 0 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state = 'dismissed' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state = 'dismissed' AND dismissal = 'false_positive' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state = 'resolved' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state IN ('open', 'reopened') THEN 1 ELSE 0 END), 0)
			FROM findings WHERE `+where+` GROUP BY `+g.expr, args...)
		var group []findings.Stat
		err = eachRow(rows, err, func(rows *sql.Rows) error {
			st := findings.Stat{Group: g.name}
			err := rows.Scan(&st.Value, &st.Reported, &st.Useful, &st.Dismissed, &st.FalsePositive, &st.Resolved, &st.Open)
			group = append(group, st)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("finding stats by %s: %w", g.name, err)
		}
		sort.SliceStable(group, func(i, j int) bool {
			if group[i].Reported != group[j].Reported {
				return group[i].Reported > group[j].Reported
			}
			return group[i].Value < group[j].Value
		})
		out = append(out, group...)
	}
	return out, nil
}

// DefaultDismissedLimit is how many dismissals DismissedIn returns when
// asked for no particular number.
const DefaultDismissedLimit = 50

// DismissedIn lists the repo's dismissed findings at paths (each a file,
// or a directory when it ends in "/"), most recently dismissed first, at
// most limit: what the prompt tells a model not to raise again. No paths
// means the whole repo.
func (s *Store) DismissedIn(ctx context.Context, repo string, paths []string, limit int) ([]findings.Finding, error) {
	if limit <= 0 {
		limit = DefaultDismissedLimit
	}
	base := `SELECT ` + findingColumns + ` FROM findings WHERE repo = ? AND state = 'dismissed'`
	order := ` ORDER BY acted_at DESC, id DESC LIMIT ?`
	if len(paths) == 0 {
		out, err := collectFindings(s.db.QueryContext(ctx, base+order, repo, limit))
		if err != nil {
			return nil, fmt.Errorf("dismissed findings of %s: %w", repo, err)
		}
		return out, nil
	}
	seen := map[int64]bool{}
	var out []findings.Finding
	for _, c := range chunks(paths) {
		var conds []string
		args := []any{repo}
		for _, p := range c {
			if strings.HasSuffix(p, "/") {
				cl, a := pathClause(p)
				conds, args = append(conds, cl), append(args, a...)
			} else {
				conds, args = append(conds, "path = ?"), append(args, p)
			}
		}
		got, err := collectFindings(s.db.QueryContext(ctx, base+` AND (`+strings.Join(conds, " OR ")+`)`+order, append(args, limit)...))
		if err != nil {
			return nil, fmt.Errorf("dismissed findings of %s: %w", repo, err)
		}
		for _, f := range got {
			if !seen[f.ID] {
				seen[f.ID] = true
				out = append(out, f)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].ActedAt.Equal(out[j].ActedAt) {
			return out[i].ActedAt.After(out[j].ActedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out[:min(len(out), limit)], nil
}
