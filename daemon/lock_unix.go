//go:build unix

package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDataDir takes an exclusive lock on data_dir so a second daemon on
// the same data cannot start: at start-up a daemon re-queues every run
// left `running`, which would steal work from a live one.
func lockDataDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, dataDirMode); err != nil {
		return nil, fmt.Errorf("create data_dir: %w", err)
	}
	if err := privateDataDir(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "daemon.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: another aicr daemon holds %s (pid in the file); stop it or use another data_dir", ErrDataDirLocked, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() { f.Close() }, nil
}

// dataDirMode keeps data_dir to the daemon's user: it holds the audit
// database, the reviewed sources and the operator secret, and the group
// the daemon shares with the hook's account (for the config, the trigger
// secret and the spool) must not reach them.
const dataDirMode = 0o700

// privateDataDir takes group and other access off a data_dir the daemon
// owns (one made 0750 by an older install); one it does not own is left
// as the admin made it.
func privateDataDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || int(sys.Uid) != os.Geteuid() || st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(dir, st.Mode().Perm()&^0o077); err != nil {
		return fmt.Errorf("make data_dir %s private to its owner: %w", dir, err)
	}
	return nil
}
