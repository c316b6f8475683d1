package audit

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"time"
)

// newLeaseIdentity names this process for the runs it claims. The random
// owner id tells two Stores of one process apart, and a new process that
// got a dead one's pid apart from it.
func newLeaseIdentity() Lease {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	host, _ := os.Hostname()
	return Lease{Owner: hex.EncodeToString(b), PID: os.Getpid(), Host: host}
}

// RenewLease extends this Store's claim on a running run. It fails with
// ErrNotRunning when the run is no longer running under this Store's
// lease (finished, or taken back by recovery after the lease ran out).
func (s *Store) RenewLease(ctx context.Context, runID int64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET lease_until = ?
		WHERE id = ? AND status = ? AND lease_owner = ?`,
		formatTime(s.now().Add(s.leaseTTL)), runID, string(RunRunning), s.self.Owner)
	if err != nil {
		return fmt.Errorf("renew lease of run %d: %w", runID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("renew lease of run %d: %w", runID, ErrNotRunning)
	}
	return nil
}

// ReleaseLeases gives up this Store's claims on runs it leaves running
// (a daemon stopping mid-review), so the next start, even in the same
// process, resumes them at once instead of waiting for the leases to run
// out.
func (s *Store) ReleaseLeases(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET lease_until = NULL
		WHERE status = ? AND lease_owner = ?`, string(RunRunning), s.self.Owner); err != nil {
		return fmt.Errorf("release run leases: %w", err)
	}
	return nil
}

// RequeueInterrupted recovers runs left running by processes that are
// gone: it re-queues each (keeping its id and place, so the audit shows
// one run with several attempts), fails a run on its maxAttempts-th
// interruption, and fails an interrupted dry run, which must never be resumed as
// a normal run. A run whose owner still holds its lease (a foreground
// `aicr review`, another daemon) is left alone. Runs claimed through this
// Store are taken too: call it at daemon start, before any worker claims.
func (s *Store) RequeueInterrupted(ctx context.Context, maxAttempts int) (requeued, abandoned int, err error) {
	return s.recover(ctx, maxAttempts, true)
}

// RequeueExpired is RequeueInterrupted for a running daemon's periodic
// sweep: it also leaves this Store's own live claims alone, and takes
// them once their lease ran out (a worker whose bookkeeping failed, e.g.
// on a full disk, stops renewing).
func (s *Store) RequeueExpired(ctx context.Context, maxAttempts int) (requeued, abandoned int, err error) {
	return s.recover(ctx, maxAttempts, false)
}

type leasedRun struct {
	id            int64
	interruptions int
	dryRun        bool
	lease         Lease
	until         sql.NullString
}

func (s *Store) recover(ctx context.Context, maxAttempts int, takeOwn bool) (requeued, abandoned int, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("recover runs: begin: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT id, interruptions, dry_run, lease_owner, lease_pid, lease_host, lease_until
		FROM runs WHERE status = ? ORDER BY id`, string(RunRunning))
	var runs []leasedRun
	if err := eachRow(rows, err, func(rows *sql.Rows) error {
		var r leasedRun
		if err := rows.Scan(&r.id, &r.interruptions, &r.dryRun, &r.lease.Owner, &r.lease.PID, &r.lease.Host, &r.until); err != nil {
			return fmt.Errorf("scan: %w", err)
		}
		runs = append(runs, r)
		return nil
	}); err != nil {
		return 0, 0, fmt.Errorf("recover runs: %w", err)
	}
	now := s.now()
	at := formatTime(now)
	for _, r := range runs {
		if !s.leaseLost(r, now, takeOwn) {
			continue
		}
		switch {
		case r.dryRun:
			_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?, finished_at = ?, lease_owner = '', lease_pid = 0, lease_host = '', lease_until = NULL,
				error = 'interrupted dry run: dry runs are never resumed (nothing was published); run aicr review --dry-run again'
				WHERE id = ?`, string(RunFailed), at, r.id)
			abandoned++
		case r.interruptions+1 >= maxAttempts:
			// A run interrupted on every attempt probably crashes the
			// daemon itself; retrying it forever would take the daemon
			// down at every start.
			_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?, finished_at = ?, lease_owner = '', lease_pid = 0, lease_host = '', lease_until = NULL,
				interruptions = interruptions + 1,
				error = 'interrupted ' || (interruptions + 1) || ' times: the daemon stopped during every attempt (see its logs); retry with aicr run retry ' || id
				WHERE id = ?`, string(RunFailed), at, r.id)
			abandoned++
		default:
			_, err = tx.ExecContext(ctx, `UPDATE runs SET status = ?, started_at = NULL, lease_owner = '', lease_pid = 0, lease_host = '', lease_until = NULL,
				interruptions = interruptions + 1 WHERE id = ?`,
				string(RunQueued), r.id)
			requeued++
		}
		if err != nil {
			return 0, 0, fmt.Errorf("recover run %d: %w", r.id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("recover runs: commit: %w", err)
	}
	return requeued, abandoned, nil
}

// leaseLost decides whether recovery may take r: no lease at all (a run
// from before leases), a lease that ran out, or an owner process on this
// host that no longer exists.
func (s *Store) leaseLost(r leasedRun, now time.Time, takeOwn bool) bool {
	if r.lease.Owner == s.self.Owner {
		if takeOwn {
			return true
		}
	} else if r.lease.Host == s.self.Host && r.lease.PID > 0 && !processAlive(r.lease.PID) {
		return true
	}
	if !r.until.Valid {
		return r.lease.Owner != s.self.Owner || takeOwn
	}
	until, err := parseTime(r.until.String)
	if err != nil {
		return true
	}
	return now.After(until)
}
