package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"github.com/aicr-dev/aicr/audit"
)

// pruneSessions removes the directories of review sessions (the round
// directories hold copies of the reviewed files, like a run's src/) once
// the session ended longer than [retention] run_dirs ago. A session still
// active keeps its files: the developer may reply again. A directory whose
// session row is gone (audit_rows deleted it, or the database was
// replaced) goes once its own files are that old. The path is always
// <data_dir>/sessions/<id> from the listing, never a stored one.
func (r *retention) pruneSessions(ctx context.Context) int {
	if r.cfg.RunDirs <= 0 {
		return 0
	}
	root := filepath.Join(r.dataDir, "sessions")
	entries, err := os.ReadDir(root)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			r.log.Warn("list review session directories", "dir", root, "err", err)
		}
		return 0
	}
	cutoff := r.now().Add(-r.cfg.RunDirs)
	removed := 0
	for _, e := range entries {
		if ctx.Err() != nil {
			break
		}
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		sess, err := r.store.Session(ctx, id)
		switch {
		case errors.Is(err, audit.ErrNotFound):
			info, statErr := e.Info()
			if statErr != nil || info.ModTime().After(cutoff) {
				continue
			}
		case err != nil:
			r.log.Warn("read review session", "session_id", id, "err", err)
			continue
		case sess.Status != audit.SessionEnded || sess.EndedAt.IsZero() || sess.EndedAt.After(cutoff):
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			r.log.Error("remove review session directory", "session_id", id, "dir", dir, "err", err)
			continue
		}
		removed++
	}
	return removed
}
