//go:build unix

package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aicr-dev/aicr/audit"
)

// Issue 22 B6: data_dir was 0750 and aicr.db 0640, so the daemon's group,
// which the hook's account joins for the config and the spool, could read
// the audit trail and the reviewed sources. A daemon starting on such a
// data_dir (an older install) makes it and the database its own.
func TestDataDirAndDatabaseArePrivateToTheDaemon(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "aicr.db")
	if err := os.WriteFile(db, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(db, 0o640); err != nil {
		t.Fatal(err)
	}
	release, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	store, err := audit.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	fresh := filepath.Join(t.TempDir(), "new", "data")
	release2, err := lockDataDir(fresh)
	if err != nil {
		t.Fatal(err)
	}
	defer release2()
	for path, want := range map[string]os.FileMode{dir: 0o700, db: 0o600, fresh: 0o700,
		filepath.Join(dir, "daemon.lock"): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got&0o077 != 0 {
			t.Errorf("%s is %04o, want %04o: nothing for the group the hook's account is in", path, got, want)
		}
	}
}
