//go:build unix

package audit

import (
	"errors"
	"syscall"
)

// processAlive reports whether pid exists on this host. EPERM means it
// exists under another user.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
