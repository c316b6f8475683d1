package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/aicr-dev/aicr/im"
)

// DispatchReport returns the report dispatch id was planned with, as the
// channel sends it (sanitized when it was built); nil for a suppressed
// dispatch, which has none. The web page shows a run's report from it.
func (s *Store) DispatchReport(ctx context.Context, id int64) (*im.Report, error) {
	var col sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT report FROM dispatches WHERE id = ?`, id).Scan(&col)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("dispatch %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read report of dispatch %d: %w", id, err)
	}
	r, err := decodeReport(col)
	if err != nil {
		return nil, fmt.Errorf("dispatch %d: %w", id, err)
	}
	return r, nil
}
