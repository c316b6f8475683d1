//go:build unix

package triggers

import (
	"errors"
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

// shareWithDir gives path the group of dir (and, when run as root, its
// owner too), so whoever owns the spool can read what a hook run as
// another user (root, typically) wrote there. As a non-root user only the
// group can change, and only to a group the user is in; a refusal leaves
// the file with the user's group, which the setgid spool dir normally
// already made right.
func shareWithDir(path string, dir os.FileInfo) error {
	st, ok := dir.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if os.Geteuid() == 0 {
		return os.Lchown(path, int(st.Uid), int(st.Gid))
	}
	if err := os.Lchown(path, -1, int(st.Gid)); err != nil && !errors.Is(err, syscall.EPERM) {
		return err
	}
	return nil
}
