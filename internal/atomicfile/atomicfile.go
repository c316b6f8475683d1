// Package atomicfile writes a file so that a reader sees the old content
// or the new, never a torn one, and the new content survives a crash once
// the call returns: a temp file in the same directory, written, fsynced,
// renamed over the target, and the directory fsynced.
//
// It is a leaf (the standard library only), so the hook client can use it.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tempInfix sits between a target's name and the random part of its temp
// file's name.
const tempInfix = ".tmp-"

// WriteFile replaces path with data, mode perm. On failure path is
// untouched and no temp file is left behind.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := WriteTemp(dir, filepath.Base(path)+tempInfix+"*", data, perm, nil)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", path, err)
	}
	// The rename is durable only once the directory entry is on disk.
	return SyncDir(dir)
}

// WriteTemp writes data to a new temp file in dir, named after pattern
// as os.CreateTemp names it, with mode perm, fsynced and closed, and
// returns its path; the caller gives it its final name. prepare, when
// set, runs on the empty file before the write (to chown it, say). On
// failure no temp file is left behind.
func WriteTemp(dir, pattern string, data []byte, perm fs.FileMode, prepare func(name string) error) (name string, err error) {
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", fmt.Errorf("create temp file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes the file 0600; readers may run as another user.
	if err = tmp.Chmod(perm); err != nil {
		return "", fmt.Errorf("chmod temp file: %w", err)
	}
	if prepare != nil {
		if err = prepare(tmp.Name()); err != nil {
			return "", err
		}
	}
	if _, err = tmp.Write(data); err != nil {
		return "", fmt.Errorf("write temp file: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return "", fmt.Errorf("sync temp file: %w", err)
	}
	if err = tmp.Close(); err != nil {
		// The deferred cleanup closes again: harmless, and it removes the file.
		return "", fmt.Errorf("close temp file: %w", err)
	}
	return tmp.Name(), nil
}

// TempGlob matches the temp files WriteFile leaves for path when the
// process dies mid-write, for a caller that sweeps them. Glob
// metacharacters in path are escaped, so a directory with brackets in its
// name matches only its own temp files.
func TempGlob(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(globEscape(dir), globEscape(base)+tempInfix+"*")
}

func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`).Replace(s)
}

// SyncDir fsyncs the directory dir, so that entries created, renamed or
// removed in it survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
