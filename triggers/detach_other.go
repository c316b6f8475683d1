//go:build !unix

package triggers

import "os/exec"

// detachAttrs: Windows children outlive their parent without help.
func detachAttrs(c *exec.Cmd) {}
