//go:build unix

package triggers

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// The spool is writable by the hook's account, so every name in it may be
// a link, a FIFO or something swapped in after it was listed. The daemon
// works on it through directory descriptors and never follows a link: a
// path is resolved once, when its directory is opened, and every later
// step is relative to that descriptor.

// openDir opens a configured directory (its path is the admin's, so links
// in it are followed) for the *at calls below.
func openDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openSubdir opens parent/name, which must be a real directory: a link
// there (to data_dir, say) is refused, not followed. With create, a
// missing one is made (created reports it), for shareSubdir.
func openSubdir(parent *os.File, name string, create bool) (dir *os.File, created bool, err error) {
	path := filepath.Join(parent.Name(), name)
	for range 2 {
		fd, err := unix.Openat(int(parent.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			return os.NewFile(uintptr(fd), path), created, nil
		}
		switch {
		case errors.Is(err, unix.ENOENT) && create:
			err := unix.Mkdirat(int(parent.Fd()), name, 0o770)
			if err != nil && !errors.Is(err, unix.EEXIST) {
				return nil, false, &os.PathError{Op: "mkdir", Path: path, Err: err}
			}
			created = err == nil
			continue
		case errors.Is(err, unix.ENOENT):
			return nil, false, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
		case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EMLINK):
			return nil, false, &NotDirError{Path: path, Kind: kindAt(parent, name)}
		default:
			return nil, false, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
	return nil, false, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
}

// shareSubdir gives a directory openSubdir created the spool's mode and
// the parent's owner and group, as ensureSpoolDir does by path.
func shareSubdir(parent, dir *os.File) error {
	if err := unix.Fchmod(int(dir.Fd()), uint32(spoolDirMode.Perm())|unix.S_ISGID); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(parent.Fd()), &st); err != nil {
		return err
	}
	return fchownLikeDir(dir, st)
}

func fchownLikeDir(f *os.File, dir unix.Stat_t) error {
	uid := -1
	if os.Geteuid() == 0 {
		uid = int(dir.Uid)
	}
	if err := unix.Fchown(int(f.Fd()), uid, int(dir.Gid)); err != nil && !errors.Is(err, unix.EPERM) {
		return err
	}
	return nil
}

// readEntryAt reads dir/name if it is a regular file of at most limit
// bytes. It opens without following a link and without blocking on a
// FIFO, and checks what it opened (not what was listed), so a file swapped
// after listing is seen as what it is. A non-regular entry is a
// *NotRegularError; an oversized one returns no body and its size.
func readEntryAt(dir *os.File, name string, limit int64) ([]byte, int64, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) {
		return nil, 0, &NotRegularError{Kind: kindAt(dir, name)}
	}
	if err != nil {
		return nil, 0, &os.PathError{Op: "open", Path: filepath.Join(dir.Name(), name), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name))
	defer f.Close()
	return readRegular(f, limit)
}

// kindAt names what dir/name is, without following it.
func kindAt(dir *os.File, name string) string {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "unknown type"
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return kindSymlink
	case unix.S_IFIFO:
		return kindFIFO
	case unix.S_IFDIR:
		return kindDir
	case unix.S_IFSOCK:
		return kindSocket
	case unix.S_IFCHR, unix.S_IFBLK:
		return kindDevice
	case unix.S_IFREG:
		return kindRegular
	}
	return "unknown type"
}

// renameAt moves from/name to to/name; the name at the destination, even a
// link, is replaced, never written through.
func renameAt(from *os.File, name string, to *os.File, newName string) error {
	if err := unix.Renameat(int(from.Fd()), name, int(to.Fd()), newName); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(from.Name(), name), New: filepath.Join(to.Name(), newName), Err: err}
	}
	return nil
}

// writeFileAt writes data to dir/name as a new file (O_EXCL, never through
// a link) under a temp name, then renames it over name, so a link already
// called name is replaced rather than its target truncated. It is not
// atomicfile.WriteFile: every step is relative to the opened dir (openat),
// so a spool directory swapped for a link mid-write cannot redirect it.
func writeFileAt(dir *os.File, name string, data []byte) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := spoolTmpPrefix + hex.EncodeToString(rnd[:]) + reasonExt
	fd, err := unix.Openat(int(dir.Fd()), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, spoolFileMode)
	if err != nil {
		return &os.PathError{Op: "create", Path: filepath.Join(dir.Name(), tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), tmp))
	ok := false
	defer func() {
		if !ok {
			_ = unix.Unlinkat(int(dir.Fd()), tmp, 0)
		}
	}()
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err == nil {
		_ = fchownLikeDir(f, st)
	}
	_ = unix.Fchmod(fd, spoolFileMode)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := renameAt(dir, tmp, dir, name); err != nil {
		return err
	}
	ok = true
	return nil
}

// removeAt unlinks dir/name itself (a link, not its target).
func removeAt(dir *os.File, name string) error {
	if err := unix.Unlinkat(int(dir.Fd()), name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: filepath.Join(dir.Name(), name), Err: err}
	}
	return nil
}

// pruneAt removes the entries of dir (files, links, FIFOs; not
// directories) last modified before cutoff, looking at each entry itself.
func pruneAt(dir *os.File, cutoff time.Time) (int, error) {
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			continue
		}
		sec, nsec := st.Mtim.Unix()
		if !time.Unix(sec, nsec).Before(cutoff) {
			continue
		}
		if err := removeAt(dir, name); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
