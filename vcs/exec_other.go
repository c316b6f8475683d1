//go:build !unix

package vcs

import "os/exec"

// setProcessGroup: without process groups only the child itself is
// killed on cancellation (exec.CommandContext's default).
func setProcessGroup(cmd *exec.Cmd) {}
