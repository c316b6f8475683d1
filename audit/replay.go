package audit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// pruneEvery bounds how often expired signatures are deleted: once per
// batch would cost a statement per commit for nothing at high rates, and
// a second's worth of dead rows is harmless.
const pruneEvery = time.Second

// SeenSignature records that the intake accepted a request with signature
// at now and reports whether it had already been accepted within the last
// window. Expired entries are pruned in the same transaction (at most once
// a second), so the table holds only the signatures that could still be
// replayed. The write shares the intake's group commit.
func (s *Store) SeenSignature(ctx context.Context, signature string, now time.Time, window time.Duration) (replayed bool, err error) {
	key, err := signatureKey(signature)
	if err != nil {
		return false, fmt.Errorf("replay check: %w", err)
	}
	err = s.writes.submit(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		replayed, err = s.recordSignatureTx(ctx, tx, key, now, window)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("replay check: %w", err)
	}
	return replayed, nil
}

func signatureKey(signature string) (string, error) {
	key := strings.ToLower(strings.TrimSpace(signature))
	if key == "" {
		return "", fmt.Errorf("%w: empty signature", ErrInvalid)
	}
	return key, nil
}

// recordSignatureTx is SeenSignature inside tx; it runs on the group
// commit goroutine only (lastPrune is not locked).
func (s *Store) recordSignatureTx(ctx context.Context, tx *sql.Tx, key string, now time.Time, window time.Duration) (replayed bool, err error) {
	if d := now.Sub(s.lastPrune); d >= pruneEvery || d < 0 {
		if _, err := s.stmts.in(ctx, tx, s.stmts.pruneSignatures).ExecContext(ctx, formatTime(now)); err != nil { //nolint:sqlclosecheck // bound to tx by hotStmts.in: closed with the tx; the prepared statement lives with the store
			return false, fmt.Errorf("prune signatures: %w", err)
		}
		s.lastPrune = now
	}
	res, err := s.stmts.in(ctx, tx, s.stmts.recordSignature).ExecContext(ctx, key, formatTime(now.Add(window))) //nolint:sqlclosecheck // bound to tx by hotStmts.in: closed with the tx; the prepared statement lives with the store
	if err != nil {
		return false, fmt.Errorf("record signature: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("record signature: %w", err)
	}
	return n == 0, nil
}

// ReplaySignatures counts the remembered signatures (for tests and health).
func (s *Store) ReplaySignatures(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM replay_signatures`).Scan(&n)
	return n, err
}
