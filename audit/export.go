package audit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// ExportRun is one run as `aicr audit export` writes it: the run, what
// its agent cost, and a short form of its problems and dispatches.
type ExportRun struct {
	RunSummary
	Agent      *AgentStats      `json:"agent,omitempty"`
	Problems   []ExportProblem  `json:"problems"`
	Dispatches []ExportDispatch `json:"dispatches"`
}

// ExportProblem is a problem without its suggestion and fingerprint.
type ExportProblem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Severity string `json:"severity"`
	Category string `json:"category,omitempty"`
	Message  string `json:"message"`
}

// ExportDispatch is a delivery's outcome.
type ExportDispatch struct {
	Channel   string    `json:"channel"`
	Status    string    `json:"status"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	SentAt    time.Time `json:"sent_at,omitzero"`
}

// ExportOptions selects runs by when they were queued: Since inclusive,
// Until exclusive; a zero bound is open.
type ExportOptions struct {
	Since, Until time.Time
}

// exportPage is how many runs one query reads: the export streams in
// pages, so memory stays flat however long the range.
const exportPage = 500

// ExportRuns calls fn for every run queued in the range, oldest id first,
// all read from one snapshot so the export is consistent while the daemon
// writes. An error from fn stops the export and is returned.
func (s *Store) ExportRuns(ctx context.Context, opts ExportOptions, fn func(ExportRun) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("export runs: begin: %w", err)
	}
	defer tx.Rollback()
	var after int64
	for {
		page, err := exportPageFrom(ctx, tx, opts, after)
		if err != nil {
			return fmt.Errorf("export runs: %w", err)
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(page) < exportPage {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

func exportPageFrom(ctx context.Context, tx *sql.Tx, opts ExportOptions, after int64) ([]ExportRun, error) {
	where := []string{"r.id > ?"}
	args := []any{after}
	if !opts.Since.IsZero() {
		where, args = append(where, "r.queued_at >= ?"), append(args, formatTime(opts.Since))
	}
	if !opts.Until.IsZero() {
		where, args = append(where, "r.queued_at < ?"), append(args, formatTime(opts.Until))
	}
	var (
		page  []ExportRun
		index = map[int64]int{}
	)
	rows, err := tx.QueryContext(ctx, `SELECT `+runColumns+`, r.agent, r.agent_model, r.agent_passes, r.agent_turns,
		r.input_tokens, r.cache_read_tokens, r.cache_write_tokens, r.output_tokens, r.cost_usd`+runFrom+` WHERE `+strings.Join(where, " AND ")+`
		ORDER BY r.id LIMIT ?`, append(args, exportPage)...)
	if err := eachRow(rows, err, func(rows *sql.Rows) error {
		var (
			st   AgentStats
			cost sql.NullFloat64
		)
		sum, err := scanRunSummary(rows, &st.Agent, &st.Model, &st.Passes, &st.Turns, &st.InputTokens, &st.CacheReadTokens, &st.CacheWriteTokens, &st.OutputTokens, &cost)
		if err != nil {
			return err
		}
		r := ExportRun{RunSummary: sum, Problems: []ExportProblem{}, Dispatches: []ExportDispatch{}}
		if st.Agent != "" {
			if cost.Valid {
				st.CostUSD = &cost.Float64
			}
			r.Agent = &st
		}
		index[r.ID] = len(page)
		page = append(page, r)
		return nil
	}); err != nil {
		return nil, err
	}
	if len(page) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(page))
	for i, r := range page {
		ids[i] = r.ID
	}
	in, inArgs := inList(ids)
	prows, err := tx.QueryContext(ctx, `SELECT run_id, file, line, severity, category, message
		FROM problems WHERE run_id IN (`+in+`) ORDER BY run_id, seq`, inArgs...)
	if err := eachRow(prows, err, func(prows *sql.Rows) error {
		var (
			id int64
			p  ExportProblem
		)
		if err := prows.Scan(&id, &p.File, &p.Line, &p.Severity, &p.Category, &p.Message); err != nil {
			return err
		}
		r := &page[index[id]]
		r.Problems = append(r.Problems, p)
		return nil
	}); err != nil {
		return nil, err
	}
	drows, err := tx.QueryContext(ctx, `SELECT run_id, channel, status, attempts, last_error, sent_at
		FROM dispatches WHERE run_id IN (`+in+`) ORDER BY run_id, channel`, inArgs...)
	if err != nil {
		return nil, err
	}
	defer drows.Close()
	for drows.Next() {
		var (
			id   int64
			d    ExportDispatch
			sent sql.NullString
		)
		if err := drows.Scan(&id, &d.Channel, &d.Status, &d.Attempts, &d.LastError, &sent); err != nil {
			return nil, err
		}
		if d.SentAt, err = parseNullTime(sent); err != nil {
			return nil, err
		}
		r := &page[index[id]]
		r.Dispatches = append(r.Dispatches, d)
	}
	return page, drows.Err()
}

// RejectedFilter selects refused requests for ListRejected.
type RejectedFilter struct {
	Since time.Time // zero: no lower bound
	Limit int       // <= 0 means DefaultListLimit
}

// ListRejected returns refused requests newest first.
func (s *Store) ListRejected(ctx context.Context, f RejectedFilter) ([]RejectedEvent, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, received_at, reason, remote, payload, truncated
		FROM rejected_events WHERE received_at >= ? ORDER BY id DESC LIMIT ?`, formatTime(f.Since), limit)
	if err != nil {
		return nil, fmt.Errorf("list rejected events: %w", err)
	}
	defer rows.Close()
	out := []RejectedEvent{}
	for rows.Next() {
		var (
			r        RejectedEvent
			received string
		)
		if err := rows.Scan(&r.ID, &received, &r.Reason, &r.Remote, &r.Payload, &r.Truncated); err != nil {
			return nil, fmt.Errorf("list rejected events: scan: %w", err)
		}
		if r.ReceivedAt, err = parseTime(received); err != nil {
			return nil, fmt.Errorf("list rejected events: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list rejected events: %w", err)
	}
	return out, nil
}
