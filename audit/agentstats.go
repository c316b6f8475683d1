package audit

import (
	"context"
	"database/sql"
	"fmt"
)

// AgentStats is what the review agent of one run cost, summed over the
// run's attempts (a retried run spends tokens on every attempt).
type AgentStats struct {
	Agent string `json:"agent"`
	// Model is the model that answered; empty for agents without one.
	Model string `json:"model,omitempty"`
	// Passes counts the ladder's agent passes; Turns the model round trips.
	Passes       int `json:"passes"`
	Turns        int `json:"turns"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CostUSD is set only when [agent.llm] prices are configured.
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

// AddAgentStats adds one attempt's agent cost to run runID. The agent and
// model are those of the latest attempt; the counts and the cost add up.
func (s *Store) AddAgentStats(ctx context.Context, runID int64, st AgentStats) error {
	var cost sql.NullFloat64
	if st.CostUSD != nil {
		cost = sql.NullFloat64{Float64: *st.CostUSD, Valid: true}
	}
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET agent = ?, agent_model = ?,
			agent_passes = agent_passes + ?, agent_turns = agent_turns + ?,
			input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,
			cost_usd = CASE WHEN CAST(? AS DOUBLE PRECISION) IS NULL THEN cost_usd ELSE COALESCE(cost_usd, 0) + ? END
		WHERE id = ?`,
		st.Agent, st.Model, st.Passes, st.Turns, st.InputTokens, st.OutputTokens, cost, cost, runID)
	if err != nil {
		return fmt.Errorf("record agent stats of run %d: %w", runID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("record agent stats of run %d: %w", runID, ErrNotFound)
	}
	return nil
}

// agentStats reads what AddAgentStats recorded; nil when no agent ran.
func agentStats(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, runID int64) (*AgentStats, error) {
	var st AgentStats
	var cost sql.NullFloat64
	err := q.QueryRowContext(ctx, `SELECT agent, agent_model, agent_passes, agent_turns, input_tokens, output_tokens, cost_usd
		FROM runs WHERE id = ?`, runID).Scan(&st.Agent, &st.Model, &st.Passes, &st.Turns, &st.InputTokens, &st.OutputTokens, &cost)
	if err != nil {
		return nil, fmt.Errorf("read agent stats: %w", err)
	}
	if st.Agent == "" {
		return nil, nil
	}
	if cost.Valid {
		st.CostUSD = &cost.Float64
	}
	return &st, nil
}
