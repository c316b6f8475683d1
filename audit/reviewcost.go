package audit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// ReviewCost is what the reviews of a period cost: a [[digest]]'s
// "reviews and their cost".
type ReviewCost struct {
	// Reviews counts the runs that finished in the period (dry runs and
	// skipped runs left out: they reviewed nothing).
	Reviews int `json:"reviews"`
	// CostUSD sums their agents' cost; Priced is false when none had a
	// price ([agent.llm] prices unset), so 0 means unknown, not free.
	CostUSD float64 `json:"cost_usd"`
	Priced  bool    `json:"priced"`
}

// ReviewCostIn sums the runs of repos (every repo when empty) that
// finished in [since, until).
func (s *Store) ReviewCostIn(ctx context.Context, repos []string, since, until time.Time) (ReviewCost, error) {
	where := []string{"finished_at >= ?", "finished_at < ?", "status IN ('succeeded', 'failed')", "dry_run = 0"}
	args := []any{formatTime(since), formatTime(until)}
	if len(repos) > 0 {
		in, repoArgs := stringList(repos)
		where = append(where, "repo IN ("+in+")")
		args = append(args, repoArgs...)
	}
	var c ReviewCost
	var cost sql.NullFloat64
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), SUM(cost_usd) FROM runs WHERE `+strings.Join(where, " AND "), args...).Scan(&c.Reviews, &cost)
	if err != nil {
		return c, fmt.Errorf("review cost: %w", err)
	}
	c.CostUSD, c.Priced = cost.Float64, cost.Valid
	return c, nil
}
