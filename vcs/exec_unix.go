//go:build unix

package vcs

import (
	"os/exec"
	"syscall"
)

// setProcessGroup makes the child the leader of a new process group and
// makes cancellation kill the group, not only the leader: a killed svn
// would otherwise leave its ssh (or a wrapper's real client) running and
// holding the output pipe open.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
