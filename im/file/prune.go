package file

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// openLocked opens path for appending under the file's lock, reopening
// when the file was replaced while waiting (Prune renamed a rewritten
// copy over it, or logrotate moved it away), so the line lands in the
// file that stays.
func openLocked(path string) (*os.File, error) {
	for range 100 {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, err
		}
		if err := lock(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if sameFile(f, path) {
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("open %s: replaced 100 times while waiting for its lock", path)
}

// Prune removes the lines sent before cutoff from the file at path and
// returns how many went. Lines whose time cannot be read are kept. The
// kept lines are written to a new file (same mode) renamed over the old
// one under the file's lock, so a concurrent Send waits and then appends
// to the new file. A missing file is nothing to prune.
func Prune(path string, cutoff time.Time) (int, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close() // releases the lock
	if err := lock(f); err != nil {
		return 0, fmt.Errorf("lock %s: %w", path, err)
	}
	if !sameFile(f, path) {
		return 0, nil // replaced meanwhile: the next run prunes the new one
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".prune-*")
	if err != nil {
		return 0, fmt.Errorf("prune %s: %w", path, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		return 0, fmt.Errorf("prune %s: %w", path, err)
	}
	keepOwner(tmp, st)
	removed, err := copyRecent(bufio.NewWriter(tmp), bufio.NewReader(f), cutoff)
	if err != nil {
		return 0, fmt.Errorf("prune %s: %w", path, err)
	}
	if removed == 0 {
		return 0, nil
	}
	if err := tmp.Sync(); err != nil {
		return 0, fmt.Errorf("prune %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("prune %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, fmt.Errorf("prune %s: %w", path, err)
	}
	done = true
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return removed, nil
}

// copyRecent copies the lines of r sent at or after cutoff to w.
func copyRecent(w *bufio.Writer, r *bufio.Reader, cutoff time.Time) (removed int, err error) {
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var rec struct {
				SentAt time.Time `json:"sent_at"`
			}
			if json.Unmarshal(line, &rec) == nil && !rec.SentAt.IsZero() && rec.SentAt.Before(cutoff) {
				removed++
			} else if _, werr := w.Write(line); werr != nil {
				return 0, werr
			}
		}
		if errors.Is(err, io.EOF) {
			return removed, w.Flush()
		}
		if err != nil {
			return 0, err
		}
	}
}
