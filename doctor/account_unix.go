//go:build unix

package doctor

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

const (
	permRead = 4
	permExec = 1
)

// account is a user the way the kernel checks it: uid, primary and
// supplementary groups, plus names for the fix lines.
type account struct {
	known       bool
	uid, gid    uint32
	groups      []uint32
	user, group string
}

// ownerOf is the account svn most likely runs the repository's hooks as:
// its owner, since the server must be able to write the repository.
func ownerOf(path string) account {
	st, err := os.Stat(path)
	if err != nil {
		return account{}
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return account{}
	}
	return lookupAccount(sys.Uid, sys.Gid)
}

func currentAccount() account {
	return lookupAccount(uint32(os.Getuid()), uint32(os.Getgid()))
}

func lookupAccount(uid, gid uint32) account {
	a := account{known: true, uid: uid, gid: gid, user: strconv.FormatUint(uint64(uid), 10), group: strconv.FormatUint(uint64(gid), 10)}
	if u, err := user.LookupId(a.user); err == nil {
		a.user = u.Username
		// A hook runs with the server's supplementary groups, which come
		// from the group database like these.
		if ids, err := u.GroupIds(); err == nil {
			for _, id := range ids {
				if n, err := strconv.ParseUint(id, 10, 32); err == nil {
					a.groups = append(a.groups, uint32(n))
				}
			}
		}
	}
	if g, err := user.LookupGroupId(a.group); err == nil {
		a.group = g.Name
	}
	return a
}

func (a account) who() string {
	if !a.known {
		return "the hook's account"
	}
	return fmt.Sprintf("%s (uid %d)", a.user, a.uid)
}

// can reports whether a may access st with perm by its mode bits.
func (a account) can(st os.FileInfo, perm uint32) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !a.known || !ok {
		return true
	}
	mode := uint32(st.Mode().Perm())
	if a.uid == 0 {
		// root reads and writes anything but runs only what has an x bit.
		return perm&permExec == 0 || mode&0o111 != 0
	}
	var bits uint32
	switch {
	case sys.Uid == a.uid:
		bits = mode >> 6
	case a.inGroup(sys.Gid):
		bits = mode >> 3
	default:
		bits = mode
	}
	return bits&perm == perm
}

func (a account) inGroup(gid uint32) bool {
	if gid == a.gid {
		return true
	}
	for _, g := range a.groups {
		if g == gid {
			return true
		}
	}
	return false
}

// switching reports whether doctor, as root, runs things as a instead.
func (a account) switching() bool {
	return a.known && os.Geteuid() == 0 && a.uid != 0
}

// chown hands path to a when doctor will run as a, so a can write there.
func (a account) chown(path string) error {
	if !a.switching() {
		return nil
	}
	return os.Chown(path, int(a.uid), int(a.gid))
}

// runAs makes cmd run as a, which only root can do. It returns a note
// when the command runs as someone else, so results may differ from svn's.
func (a account) runAs(cmd *exec.Cmd) string {
	if !a.known || uint32(os.Geteuid()) == a.uid {
		return ""
	}
	if !a.switching() {
		return fmt.Sprintf("ran as uid %d, not as the repository's owner %s: run aicr doctor as root to check as svn would", os.Geteuid(), a.who())
	}
	groups := a.groups
	if groups == nil {
		// An empty list still clears root's own supplementary groups.
		groups = []uint32{}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: groups}}
	return ""
}

// lookupUser is the account named on doctor's command line (--as-user).
func lookupUser(name string) (account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return account{}, err
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return account{}, fmt.Errorf("user %s has a non-numeric uid or gid", name)
	}
	return lookupAccount(uint32(uid), uint32(gid)), nil
}

// home is the account's home directory, which the daemon's child
// processes see as HOME; "/" when it has none.
func (a account) home() string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(a.uid), 10)); err == nil && u.HomeDir != "" {
		return u.HomeDir
	}
	return "/"
}

// isCurrent reports whether doctor itself runs as a.
func (a account) isCurrent() bool { return !a.known || uint32(os.Geteuid()) == a.uid }

// groupOf names the file's group, "" when unknown.
func groupOf(st os.FileInfo) string {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	id := strconv.FormatUint(uint64(sys.Gid), 10)
	if g, err := user.LookupGroupId(id); err == nil {
		return g.Name
	}
	return id
}
