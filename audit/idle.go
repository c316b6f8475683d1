package audit

import (
	"context"
	"fmt"
	"os"
)

// ChangeMark fingerprints a SQLite store's files. Every commit, by any
// process, grows or rewrites the write-ahead log, and every checkpoint
// writes the database file, so two equal marks mean nobody committed in
// between. The daemon's idle loops compare marks before they query: an
// idle daemon then runs no SQL at all, which keeps the SQLite engine's
// code out of its memory and its disk quiet.
type ChangeMark struct {
	dbSize, dbModNanos   int64
	walSize, walModNanos int64
	// walGeneration is the WAL header's checkpoint sequence number and
	// salts: SQLite changes them whenever it starts the log over from
	// its first frame, which can leave the size as it was and, on a file
	// system with coarse timestamps, the modification time too.
	walGeneration [12]byte
}

// ChangeMark returns the store's mark; ok is false on PostgreSQL, where
// other daemons' commits leave nothing on this host to look at, and when
// the files cannot be read (callers then query as if it had changed).
func (s *Store) ChangeMark() (mark ChangeMark, ok bool) {
	if s.backend != BackendSQLite || s.path == "" {
		return ChangeMark{}, false
	}
	db, err := os.Stat(s.path)
	if err != nil {
		return ChangeMark{}, false
	}
	mark.dbSize, mark.dbModNanos = db.Size(), db.ModTime().UnixNano()
	// No -wal file is a state of its own (every connection closed).
	wal, err := os.Open(s.path + "-wal")
	if os.IsNotExist(err) {
		return mark, true
	}
	if err != nil {
		return ChangeMark{}, false
	}
	defer wal.Close()
	fi, err := wal.Stat()
	if err != nil {
		return ChangeMark{}, false
	}
	mark.walSize, mark.walModNanos = fi.Size(), fi.ModTime().UnixNano()
	// An empty or short log (just created or truncated) has no header yet.
	if fi.Size() >= 24 {
		if _, err := wal.ReadAt(mark.walGeneration[:], 12); err != nil {
			return ChangeMark{}, false
		}
	}
	return mark, true
}

// QueueEmpty reports whether no run is queued at all: none due, none
// waiting for a retry time, none held by a paused repo. Only a commit can
// change that, which is what lets an idle worker wait for the next one.
func (s *Store) QueueEmpty(ctx context.Context) (bool, error) {
	return s.noneWith(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE status = ?)`, string(RunQueued))
}

// NoneRunning reports whether no run is running. A running run's lease
// can run out without a commit (its owner died), so the lease sweep can
// stop looking only while none is running.
func (s *Store) NoneRunning(ctx context.Context) (bool, error) {
	return s.noneWith(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE status = ?)`, string(RunRunning))
}

// NoDispatchPending reports whether no dispatch is pending: none due,
// none waiting for its retry time, none leased to a sender that may die.
func (s *Store) NoDispatchPending(ctx context.Context) (bool, error) {
	return s.noneWith(ctx, `SELECT EXISTS (SELECT 1 FROM dispatches WHERE status = 'pending')`)
}

func (s *Store) noneWith(ctx context.Context, query string, args ...any) (bool, error) {
	var exists bool
	if err := s.db.QueryRowContext(ctx, query, args...).Scan(&exists); err != nil {
		return false, fmt.Errorf("check for idle: %w", err)
	}
	return !exists, nil
}
