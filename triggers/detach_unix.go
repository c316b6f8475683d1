//go:build unix

package triggers

import (
	"os/exec"
	"syscall"
)

// detachAttrs puts the child in its own session, so p4d's process group
// signals and terminal do not reach it.
func detachAttrs(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
