//go:build unix

package file

import (
	"os"
	"syscall"
)

// lock takes an exclusive flock on f: appends and Prune take it, so a
// prune's rewrite never loses a line appended meanwhile.
func lock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

// sameFile reports whether f is still the file at path: a prune (or
// logrotate) may have replaced it while f waited for the lock.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// keepOwner gives the rewritten file the old one's owner and group when
// this process may (root); otherwise it stays the writer's, as an append
// would have created it.
func keepOwner(f *os.File, old os.FileInfo) {
	if st, ok := old.Sys().(*syscall.Stat_t); ok {
		_ = f.Chown(int(st.Uid), int(st.Gid))
	}
}
