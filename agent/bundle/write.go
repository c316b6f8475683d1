package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/aicr-dev/aicr/internal/atomicfile"
	"github.com/aicr-dev/aicr/rundir"
)

// preserved are the agent dir entries that are not part of the bundle:
// the review state file (the ladder owns clearing it before a run; a
// re-materialisation between passes must not lose the findings so far)
// and home/ (caches of the agent CLI within this run). They move from the
// previous agent dir into the new one; everything else is replaced.
var preserved = []string{rundir.StateFileName, HomeDirName}

// failAfterWrite, when set by a test, fails the build after the named
// bundle file is written, to show the previous bundle survives;
// beforeSwap is the name failAfterWrite sees once the preserved entries
// have moved into the new bundle, just before the swap.
var failAfterWrite func(rel string) error

const beforeSwap = "(before swap)"

// writeAtomic builds the bundle in a temp dir next to agentDir, fsyncs
// it, moves the preserved entries over, and swaps it in with one
// rename(2) RENAME_EXCHANGE; the previous bundle is then removed. Any
// failure before the swap leaves agentDir untouched.
func writeAtomic(agentDir string, p planned) (err error) {
	parent := filepath.Dir(agentDir)
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return fmt.Errorf("bundle: create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, ".agent.new-*")
	if err != nil {
		return fmt.Errorf("bundle: create temp dir: %w", err)
	}
	var moved []string // preserved entries already moved from agentDir into tmp
	swapped := false
	defer func() {
		if err == nil {
			return
		}
		if !swapped {
			for _, name := range moved {
				_ = os.Rename(filepath.Join(tmp, name), filepath.Join(agentDir, name))
			}
		}
		_ = os.RemoveAll(tmp)
	}()
	oldExists, err := takeMode(tmp, agentDir)
	if err != nil {
		return err
	}
	dirs, err := writeFiles(tmp, p)
	if err != nil {
		return err
	}
	if oldExists {
		if moved, err = keepPreserved(agentDir, tmp); err != nil {
			return err
		}
	}
	if err := ensureHome(tmp); err != nil {
		return err
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	if failAfterWrite != nil {
		if err := failAfterWrite(beforeSwap); err != nil {
			return err
		}
	}
	if !oldExists {
		if err := os.Rename(tmp, agentDir); err != nil {
			return fmt.Errorf("bundle: move the bundle into place: %w", err)
		}
		swapped = true
		return syncDir(parent)
	}
	previous, err := swapIn(tmp, agentDir)
	if err != nil {
		return err
	}
	swapped, tmp = true, previous
	if err := syncDir(parent); err != nil {
		return err
	}
	if err := os.RemoveAll(previous); err != nil {
		return fmt.Errorf("bundle: remove the previous bundle %s: %w", previous, err)
	}
	return nil
}

// takeMode gives the temp dir the mode of the agent dir it will replace
// (0750 for a first bundle) and says whether there is one.
func takeMode(tmp, agentDir string) (oldExists bool, err error) {
	mode := os.FileMode(0o750)
	if fi, err := os.Lstat(agentDir); err == nil {
		if !fi.IsDir() {
			return false, fmt.Errorf("bundle: %s exists and is not a directory", agentDir)
		}
		mode, oldExists = fi.Mode().Perm(), true
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return false, fmt.Errorf("bundle: chmod temp dir: %w", err)
	}
	return oldExists, nil
}

// writeFiles writes the bundle's files into tmp, each fsynced, in name
// order, and returns the directories it wrote to, for the caller to fsync.
func writeFiles(tmp string, p planned) (map[string]bool, error) {
	paths := make([]string, 0, len(p.files))
	for rel := range p.files {
		paths = append(paths, rel)
	}
	sort.Strings(paths)
	dirs := map[string]bool{tmp: true}
	for _, rel := range paths {
		full := filepath.Join(tmp, filepath.FromSlash(rel))
		dir := filepath.Dir(full)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("bundle: create %s: %w", dir, err)
		}
		for d := dir; d != tmp && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
		if err := writeSynced(full, p.files[rel]); err != nil {
			return nil, err
		}
		if failAfterWrite != nil {
			if err := failAfterWrite(rel); err != nil {
				return nil, err
			}
		}
	}
	return dirs, nil
}

// keepPreserved moves the preserved entries of agentDir into tmp and
// returns those it moved, so that a failure can move them back.
func keepPreserved(agentDir, tmp string) (moved []string, err error) {
	for _, name := range preserved {
		src := filepath.Join(agentDir, name)
		if _, err := os.Lstat(src); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.Rename(src, filepath.Join(tmp, name)); err != nil {
			return moved, fmt.Errorf("bundle: keep %s: %w", src, err)
		}
		moved = append(moved, name)
	}
	return moved, nil
}

// swapIn exchanges tmp and agentDir and returns where the previous
// bundle now is (tmp, or tmp.old on a filesystem that cannot exchange).
func swapIn(tmp, agentDir string) (previous string, err error) {
	err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, agentDir, unix.RENAME_EXCHANGE)
	if err == nil {
		return tmp, nil
	}
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return "", fmt.Errorf("bundle: swap the bundle into place: %w", err)
	}
	// The filesystem cannot exchange: two renames, undone if the second
	// fails, so agentDir is only briefly absent.
	old := tmp + ".old"
	if err := os.Rename(agentDir, old); err != nil {
		return "", fmt.Errorf("bundle: move the previous bundle aside: %w", err)
	}
	if err := os.Rename(tmp, agentDir); err != nil {
		_ = os.Rename(old, agentDir)
		return "", fmt.Errorf("bundle: move the bundle into place: %w", err)
	}
	return old, nil
}

func ensureHome(dir string) error {
	for _, sub := range homeSubdirs {
		d := filepath.Join(dir, HomeDirName, filepath.FromSlash(sub))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("bundle: create %s: %w", d, err)
		}
	}
	return nil
}

func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("bundle: create %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("bundle: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("bundle: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bundle: close %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	return nil
}

// readFile reads one of the run's own files (change.json, diff.patch);
// a missing diff.patch is read as empty, a missing change.json is not.
func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && filepath.Base(path) == rundir.DiffFileName {
		return []byte{}, nil
	}
	return b, err
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// recoverLeftovers cleans up after a build that crashed (the process
// died, so no deferred cleanup ran). A crash after the preserved entries
// moved into the temp dir but before the swap leaves them there: they
// move back first, so no findings or caches are lost; then every
// leftover goes.
func recoverLeftovers(parent, agentDir string) error {
	left, err := filepath.Glob(filepath.Join(parent, ".agent.new-*"))
	if err != nil {
		return fmt.Errorf("bundle: look for leftovers in %s: %w", parent, err)
	}
	for _, dir := range left {
		for _, name := range preserved {
			src, dst := filepath.Join(dir, name), filepath.Join(agentDir, name)
			if _, err := os.Lstat(src); err != nil {
				continue
			}
			if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(agentDir, 0o750); err != nil {
					return fmt.Errorf("bundle: recover %s: %w", src, err)
				}
				if err := os.Rename(src, dst); err != nil {
					return fmt.Errorf("bundle: recover %s: %w", src, err)
				}
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("bundle: remove leftover %s: %w", dir, err)
		}
	}
	return nil
}
