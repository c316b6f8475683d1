package audit

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// SeenSignature records that the intake accepted a request with signature
// at now and reports whether it had already been accepted within the last
// window. Entries older than their window are pruned in the same
// transaction, so the table holds only the signatures that could still be
// replayed (a few minutes' worth).
func (s *Store) SeenSignature(ctx context.Context, signature string, now time.Time, window time.Duration) (replayed bool, err error) {
	key := strings.ToLower(strings.TrimSpace(signature))
	if key == "" {
		return false, fmt.Errorf("replay check: %w: empty signature", ErrInvalid)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("replay check: begin: %w", err)
	}
	defer tx.Rollback()
	at := formatTime(now)
	if _, err := tx.ExecContext(ctx, `DELETE FROM replay_signatures WHERE expires_at < ?`, at); err != nil {
		return false, fmt.Errorf("replay check: prune: %w", err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO replay_signatures (signature, expires_at) VALUES (?, ?)
		ON CONFLICT (signature) DO NOTHING`, key, formatTime(now.Add(window)))
	if err != nil {
		return false, fmt.Errorf("replay check: record: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("replay check: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("replay check: commit: %w", err)
	}
	return n == 0, nil
}

// ReplaySignatures counts the remembered signatures (for tests and health).
func (s *Store) ReplaySignatures(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM replay_signatures`).Scan(&n)
	return n, err
}
