//go:build unix

package cli

import (
	"os"
	"syscall"
)

// lockFile holds an exclusive flock on path until the returned func runs;
// the kernel releases it when the process dies, so a crashed install
// never blocks the next one.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
