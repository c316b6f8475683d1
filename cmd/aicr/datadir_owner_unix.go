//go:build unix

package main

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// checkDataDirOwner refuses a command that writes data_dir when it runs
// as another user than the directory's owner: files it created (a new
// aicr.db, runs/N) would belong to that user, and a daemon running as the
// owner could then not open or clean them.
func checkDataDirOwner(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil //nolint:nilerr // not created yet: whoever runs first owns it
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	euid := os.Geteuid()
	if euid < 0 || uint32(euid) == st.Uid {
		return nil
	}
	owner := strconv.FormatUint(uint64(st.Uid), 10)
	if u, err := user.LookupId(owner); err == nil {
		owner = u.Username
	}
	return fmt.Errorf("data_dir %s belongs to %s; files this command creates would belong to uid %d and break the daemon: run as `runuser -u %s -- aicr ...` (as root; or `sudo -u %s aicr ...` where sudo is installed)", dir, owner, euid, owner, owner)
}
