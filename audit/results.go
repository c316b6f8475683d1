package audit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aicr-dev/aicr/review"
)

// SaveResult stores a running run's validated result (problems, summaries
// and the agent's skip reason) before its dispatches are sent, so every
// sender renders from the database. FinishRun later writes the same data
// again with the final status.
func (s *Store) SaveResult(ctx context.Context, runID int64, res review.Result) error {
	summaries := res.Summaries
	if summaries == nil {
		summaries = []review.Summary{}
	}
	sumJSON, err := json.Marshal(summaries)
	if err != nil {
		return fmt.Errorf("save result of run %d: encode summaries: %w", runID, err)
	}
	skip := ""
	if res.Skip != nil {
		skip = res.Skip.Reason
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save result of run %d: begin: %w", runID, err)
	}
	defer tx.Rollback()
	r, err := tx.ExecContext(ctx, `UPDATE runs SET skip_reason = ?, problem_count = ?, summaries = ?
		WHERE id = ? AND status = ?`, skip, len(res.Problems), string(sumJSON), runID, string(RunRunning))
	if err != nil {
		return fmt.Errorf("save result of run %d: %w", runID, err)
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return fmt.Errorf("save result of run %d: %w", runID, ErrNotRunning)
	}
	if err := replaceProblems(ctx, tx, runID, res.Problems); err != nil {
		return fmt.Errorf("save result of run %d: %w", runID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save result of run %d: commit: %w", runID, err)
	}
	return nil
}
