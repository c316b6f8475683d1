//go:build !unix

package triggers

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Without openat, the spool is worked on by path, with every entry
// lstat'ed first: a link is still never followed, though a swap between
// the lstat and the open is not caught.

func openDir(path string) (*os.File, error) { return os.Open(path) }

func openSubdir(parent *os.File, name string, create bool) (*os.File, bool, error) {
	path := filepath.Join(parent.Name(), name)
	st, err := os.Lstat(path)
	created := false
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := os.Mkdir(path, 0o770); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, false, err
		}
		created = true
		st, err = os.Lstat(path)
	}
	if err != nil {
		return nil, false, err
	}
	if !st.IsDir() {
		return nil, false, &NotDirError{Path: path, Kind: fileKind(st.Mode())}
	}
	f, err := os.Open(path)
	return f, created, err
}

func shareSubdir(parent, dir *os.File) error { return nil }

func readEntryAt(dir *os.File, name string, limit int64) ([]byte, int64, error) {
	path := filepath.Join(dir.Name(), name)
	st, err := os.Lstat(path)
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, &NotRegularError{Kind: fileKind(st.Mode())}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return readRegular(f, limit)
}

func renameAt(from *os.File, name string, to *os.File, newName string) error {
	return os.Rename(filepath.Join(from.Name(), name), filepath.Join(to.Name(), newName))
}

func writeFileAt(dir *os.File, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir.Name(), spoolTmpPrefix+"*"+reasonExt)
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir.Name(), name))
}

func removeAt(dir *os.File, name string) error {
	if err := os.Remove(filepath.Join(dir.Name(), name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func pruneAt(dir *os.File, cutoff time.Time) (int, error) {
	entries, err := os.ReadDir(dir.Name())
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || info.IsDir() || !info.ModTime().Before(cutoff) {
			continue
		}
		if err := removeAt(dir, e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
