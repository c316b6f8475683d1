package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// DaemonInfo is one daemon's heartbeat row.
type DaemonInfo struct {
	Owner     string    `json:"owner"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	Version   string    `json:"version"`
	Listen    string    `json:"listen"`
	StartedAt time.Time `json:"started_at"`
	LastSeen  time.Time `json:"last_seen"`
}

// Heartbeat records that this Store's daemon is alive (version and listen
// address as given), creating its row on the first beat.
func (s *Store) Heartbeat(ctx context.Context, version, listen string) error {
	now := formatTime(s.now())
	_, err := s.db.ExecContext(ctx, `INSERT INTO daemons (owner, host, pid, version, listen, started_at, last_seen)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (owner) DO UPDATE SET last_seen = excluded.last_seen, version = excluded.version, listen = excluded.listen`,
		s.self.Owner, s.self.Host, s.self.PID, version, listen, now, now)
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// Farewell removes this daemon's heartbeat row (a clean stop).
func (s *Store) Farewell(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM daemons WHERE owner = ?`, s.self.Owner); err != nil {
		return fmt.Errorf("remove heartbeat: %w", err)
	}
	return nil
}

// Daemons lists the daemons whose last heartbeat is at or after since
// (every row when since is zero), newest first. Rows older than a day are
// dropped on the way: a daemon gone that long is not coming back under
// that identity (each start has a new one).
func (s *Store) Daemons(ctx context.Context, since time.Time) ([]DaemonInfo, error) {
	if s.stmts != nil {
		_, _ = s.db.ExecContext(ctx, `DELETE FROM daemons WHERE last_seen < ?`, formatTime(s.now().Add(-24*time.Hour)))
	}
	rows, err := s.db.QueryContext(ctx, `SELECT owner, host, pid, version, listen, started_at, last_seen
		FROM daemons WHERE last_seen >= ? ORDER BY last_seen DESC, owner`, formatTime(since))
	if err != nil {
		return nil, fmt.Errorf("list daemons: %w", err)
	}
	defer rows.Close()
	var out []DaemonInfo
	for rows.Next() {
		var d DaemonInfo
		var started, seen string
		if err := rows.Scan(&d.Owner, &d.Host, &d.PID, &d.Version, &d.Listen, &started, &seen); err != nil {
			return nil, fmt.Errorf("list daemons: %w", err)
		}
		if d.StartedAt, err = parseTime(started); err != nil {
			return nil, err
		}
		if d.LastSeen, err = parseTime(seen); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// TakeRateToken takes one send from channel's shared token bucket, which
// refills one token per interval up to burst. It returns 0 when the send
// may go now, or how long to wait before asking again. The bucket is a
// row (GCRA: tat is when the bucket will be full again), changed under the
// writer lock, so every daemon on the database draws from the same one.
func (s *Store) TakeRateToken(ctx context.Context, channel string, interval time.Duration, burst int) (time.Duration, error) {
	if interval <= 0 {
		return 0, nil
	}
	burst = max(burst, 1)
	var wait time.Duration
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		tat := now
		var stored string
		err := tx.QueryRowContext(ctx, `SELECT tat FROM rate_buckets WHERE channel = ?`, channel).Scan(&stored)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			if t, err := parseTime(stored); err == nil && t.After(now) {
				tat = t
			}
		}
		next := tat.Add(interval)
		if ahead := next.Sub(now) - time.Duration(burst)*interval; ahead > 0 {
			wait = ahead
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO rate_buckets (channel, tat, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (channel) DO UPDATE SET tat = excluded.tat, updated_at = excluded.updated_at`,
			channel, formatTime(next), formatTime(now))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rate limit of %s: %w", channel, err)
	}
	return wait, nil
}

// SharedRateLimits says whether rate limits must be kept in the database
// (several daemons may send to the same destination) rather than in
// each process.
func (s *Store) SharedRateLimits() bool { return s.backend == BackendPostgres }
