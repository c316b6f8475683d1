//go:build unix

package triggers

import (
	"os"
	"syscall"
)

// chownLike gives path the owner of like; only root can, and only root
// needs to, since otherwise the installer is presumably the owner.
func chownLike(path string, like os.FileInfo) error {
	if os.Geteuid() != 0 {
		return nil
	}
	st, ok := like.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return os.Lchown(path, int(st.Uid), int(st.Gid))
}
