package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/im"
)

// Spend is what the model reviews of a period used: a [[budget]]'s
// spent figure.
type Spend struct {
	// Runs counts the runs with an agent's usage recorded.
	Runs int `json:"runs"`
	// CostUSD sums their cost; Priced is false when none had a price.
	CostUSD float64 `json:"cost_usd"`
	Priced  bool    `json:"priced"`
	// PromptTokens sums every prompt token sent: uncached input, cache
	// reads and cache writes. A token limit is on what is sent, not on
	// what it cost.
	PromptTokens int64 `json:"prompt_tokens"`
	// OutputTokens sums what the models wrote.
	OutputTokens int64 `json:"output_tokens"`
}

// SpendIn sums the usage of the runs of repos (every repo when empty)
// that started in [since, until), whatever became of them: a failed run,
// a dry run and one still running when its usage was recorded were
// billed all the same. A run retried later counts in the period of its
// last start, with all its attempts.
func (s *Store) SpendIn(ctx context.Context, repos []string, since, until time.Time) (Spend, error) {
	where := []string{"started_at >= ?", "started_at < ?", "(" + promptTokensExpr + " > 0 OR output_tokens > 0 OR cost_usd > 0)"}
	args := []any{formatTime(since), formatTime(until)}
	if len(repos) > 0 {
		in, repoArgs := stringList(repos)
		where = append(where, "repo IN ("+in+")")
		args = append(args, repoArgs...)
	}
	var sp Spend
	var cost sql.NullFloat64
	var prompt, output sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), SUM(cost_usd), SUM(`+promptTokensExpr+`), SUM(output_tokens)
		FROM runs WHERE `+strings.Join(where, " AND "), args...).Scan(&sp.Runs, &cost, &prompt, &output)
	if err != nil {
		return sp, fmt.Errorf("budget spend: %w", err)
	}
	sp.CostUSD, sp.Priced = cost.Float64, cost.Valid
	sp.PromptTokens, sp.OutputTokens = prompt.Int64, output.Int64
	return sp, nil
}

// promptTokensExpr is a run's prompt tokens: the uncached part and the
// cache reads and writes migration 18 split from it.
const promptTokensExpr = `(input_tokens + cache_read_tokens + cache_write_tokens)`

// SetRunBudget records the budget action that applied to a run (nil
// clears it: a retry the budget no longer touches).
func (s *Store) SetRunBudget(ctx context.Context, runID int64, b *im.BudgetNotice) error {
	text := ""
	if b != nil {
		raw, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("record budget of run %d: %w", runID, err)
		}
		text = string(raw)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET budget = ? WHERE id = ?`, text, runID)
	if err != nil {
		return fmt.Errorf("record budget of run %d: %w", runID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("record budget of run %d: %w", runID, ErrNotFound)
	}
	return nil
}

// runBudget reads what SetRunBudget recorded; nil when no budget applied.
func runBudget(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, runID int64) (*im.BudgetNotice, error) {
	var text string
	if err := q.QueryRowContext(ctx, `SELECT budget FROM runs WHERE id = ?`, runID).Scan(&text); err != nil {
		return nil, fmt.Errorf("read budget: %w", err)
	}
	if text == "" {
		return nil, nil
	}
	var b im.BudgetNotice
	if err := json.Unmarshal([]byte(text), &b); err != nil {
		return nil, fmt.Errorf("decode budget: %w", err)
	}
	return &b, nil
}
