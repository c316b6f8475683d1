package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// ErrBackupExists: the backup target exists; a backup never overwrites.
var ErrBackupExists = errors.New("backup file already exists")

// BackupInfo describes a finished backup, read back from the copy.
type BackupInfo struct {
	Path          string `json:"path"`
	Bytes         int64  `json:"bytes"`
	SchemaVersion int    `json:"schema_version"`
	Runs          int64  `json:"runs"`
	Events        int64  `json:"events"`
	Dispatches    int64  `json:"dispatches"`
}

// Backup writes a consistent copy of the database to path with SQLite's
// VACUUM INTO: one read transaction, so it is safe while the daemon writes
// (WAL readers do not block the writer, nor it them). The file is created
// here, exclusively and 0600 like the audit trail deserves, so an existing
// file is refused and two backups cannot race for one name. The copy is
// then opened and checked (integrity_check) before Backup reports it.
func (s *Store) Backup(ctx context.Context, path string) (BackupInfo, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return BackupInfo{}, fmt.Errorf("%w: %s (choose a new name; a backup never overwrites)", ErrBackupExists, path)
	}
	if err != nil {
		return BackupInfo{}, fmt.Errorf("create backup file: %w", err)
	}
	f.Close()
	ok := false
	defer func() {
		if !ok {
			os.Remove(path)
		}
	}()
	// VACUUM INTO accepts an existing empty file.
	if _, err := s.db.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return BackupInfo{}, fmt.Errorf("back up %s to %s: %w", s.path, path, err)
	}
	info, err := checkBackup(ctx, path)
	if err != nil {
		return BackupInfo{}, err
	}
	ok = true
	return info, nil
}

// checkBackup opens the copy read-only and verifies it.
func checkBackup(ctx context.Context, path string) (BackupInfo, error) {
	copyStore, err := OpenReadOnly(ctx, path)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("check backup %s: %w", path, err)
	}
	defer copyStore.Close()
	var verdict string
	if err := copyStore.db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&verdict); err != nil {
		return BackupInfo{}, fmt.Errorf("check backup %s: %w", path, err)
	}
	if verdict != "ok" {
		return BackupInfo{}, fmt.Errorf("check backup %s: integrity check says %q", path, verdict)
	}
	info := BackupInfo{Path: path}
	if info.SchemaVersion, err = copyStore.SchemaVersion(ctx); err != nil {
		return BackupInfo{}, fmt.Errorf("check backup %s: %w", path, err)
	}
	for _, c := range []struct {
		table string
		dst   *int64
	}{{"runs", &info.Runs}, {"events", &info.Events}, {"dispatches", &info.Dispatches}} {
		if err := copyStore.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+c.table).Scan(c.dst); err != nil {
			return BackupInfo{}, fmt.Errorf("check backup %s: count %s: %w", path, c.table, err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("check backup %s: %w", path, err)
	}
	info.Bytes = st.Size()
	return info, nil
}
