package audit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// AgentStats is what the review agent of one run cost, summed over the
// run's attempts (a retried run spends tokens on every attempt).
type AgentStats struct {
	Agent string `json:"agent"`
	// Model is the model that answered; empty for agents without one.
	Model string `json:"model,omitempty"`
	// Passes counts the ladder's agent passes; Turns the model round trips.
	Passes int `json:"passes"`
	Turns  int `json:"turns"`
	// InputTokens is the uncached prompt; CacheReadTokens and
	// CacheWriteTokens the prompt read from and written to the provider's
	// cache, each billed at its own rate.
	InputTokens      int `json:"input_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	OutputTokens     int `json:"output_tokens"`
	// CostUSD is set only when [agent.llm] prices are configured.
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// Stopped says why the latest attempt's review stopped before the
	// ladder was done ("stopped at the review's cost limit of $0.5
	// (agent.max_cost_per_review)"); what it found was published as a
	// partial review. Empty: it was not stopped.
	Stopped string `json:"stopped,omitempty"`
	// Clipped lists the files whose diff did not fit the model's prompt
	// budget in the latest attempt (the model could read them with
	// fetch_more_context); the report names them as left out.
	Clipped []string `json:"clipped,omitempty"`
	// PerTurn is every model round trip of every attempt, in order; an
	// agent that reports only totals has one row per pass with Turn 0.
	PerTurn []TurnUsage `json:"per_turn,omitempty"`
}

// PromptTokens is the whole prompt, cached or not.
func (s AgentStats) PromptTokens() int { return s.InputTokens + s.CacheReadTokens + s.CacheWriteTokens }

// TurnUsage is one model round trip of a run: its attempt, the ladder's
// pass and the turn within it (from 1; 0 for a pass's total).
type TurnUsage struct {
	Attempt          int `json:"attempt"`
	Pass             int `json:"pass"`
	Turn             int `json:"turn"`
	InputTokens      int `json:"input_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
	OutputTokens     int `json:"output_tokens"`
}

// AddAgentStats adds one attempt's agent cost to run runID, and records
// its turns. The agent and model are those of the latest attempt; the
// counts and the cost add up.
func (s *Store) AddAgentStats(ctx context.Context, runID int64, st AgentStats) error {
	var cost sql.NullFloat64
	if st.CostUSD != nil {
		cost = sql.NullFloat64{Float64: *st.CostUSD, Valid: true}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record agent stats of run %d: begin: %w", runID, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE runs SET agent = ?, agent_model = ?,
			agent_passes = agent_passes + ?, agent_turns = agent_turns + ?,
			input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
			cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?, agent_stopped = ?, agent_clipped = ?,
			cost_usd = CASE WHEN CAST(? AS DOUBLE PRECISION) IS NULL THEN cost_usd ELSE COALESCE(cost_usd, 0) + ? END
		WHERE id = ?`,
		st.Agent, st.Model, st.Passes, st.Turns, st.InputTokens, st.OutputTokens, st.CacheReadTokens, st.CacheWriteTokens,
		st.Stopped, strings.Join(st.Clipped, "\n"), cost, cost, runID)
	if err != nil {
		return fmt.Errorf("record agent stats of run %d: %w", runID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("record agent stats of run %d: %w", runID, ErrNotFound)
	}
	for _, t := range st.PerTurn {
		// A turn recorded twice (an attempt's stats re-sent) is the same
		// round trip, not another one.
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_turns (run_id, attempt, pass, turn,
				input_tokens, cache_read_tokens, cache_write_tokens, output_tokens)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (run_id, attempt, pass, turn) DO UPDATE SET input_tokens = excluded.input_tokens,
				cache_read_tokens = excluded.cache_read_tokens, cache_write_tokens = excluded.cache_write_tokens,
				output_tokens = excluded.output_tokens`,
			runID, t.Attempt, t.Pass, t.Turn, t.InputTokens, t.CacheReadTokens, t.CacheWriteTokens, t.OutputTokens); err != nil {
			return fmt.Errorf("record agent stats of run %d: turn %d.%d.%d: %w", runID, t.Attempt, t.Pass, t.Turn, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record agent stats of run %d: commit: %w", runID, err)
	}
	return nil
}

// agentStats reads what AddAgentStats recorded; nil when no agent ran.
func agentStats(ctx context.Context, q querier, runID int64) (*AgentStats, error) {
	var st AgentStats
	var cost sql.NullFloat64
	var clipped string
	err := q.QueryRowContext(ctx, `SELECT agent, agent_model, agent_passes, agent_turns, input_tokens,
			cache_read_tokens, cache_write_tokens, output_tokens, cost_usd, agent_stopped, agent_clipped
		FROM runs WHERE id = ?`, runID).Scan(&st.Agent, &st.Model, &st.Passes, &st.Turns, &st.InputTokens,
		&st.CacheReadTokens, &st.CacheWriteTokens, &st.OutputTokens, &cost, &st.Stopped, &clipped)
	if err != nil {
		return nil, fmt.Errorf("read agent stats: %w", err)
	}
	if st.Agent == "" {
		return nil, nil
	}
	if cost.Valid {
		st.CostUSD = &cost.Float64
	}
	if clipped != "" {
		st.Clipped = strings.Split(clipped, "\n")
	}
	rows, err := q.QueryContext(ctx, `SELECT attempt, pass, turn, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens
		FROM run_turns WHERE run_id = ? ORDER BY attempt, pass, turn`, runID)
	if err := eachRow(rows, err, func(rows *sql.Rows) error {
		var t TurnUsage
		if err := rows.Scan(&t.Attempt, &t.Pass, &t.Turn, &t.InputTokens, &t.CacheReadTokens, &t.CacheWriteTokens, &t.OutputTokens); err != nil {
			return err
		}
		st.PerTurn = append(st.PerTurn, t)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read agent turns: %w", err)
	}
	return &st, nil
}
