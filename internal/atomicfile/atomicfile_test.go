package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestWriteFileReplacesWithModeAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("content %q, %v; want new", got, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v; want 0644 (CreateTemp's 0600 must not stick)", fi.Mode().Perm(), err)
	}
	if left, _ := filepath.Glob(TempGlob(path)); len(left) != 0 {
		t.Fatalf("temp files left: %v", left)
	}
}

func TestWriteFileFailureLeavesTargetAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	// The target is a non-empty directory: the rename fails after the temp
	// file was written.
	path := filepath.Join(dir, "target")
	if err := os.MkdirAll(filepath.Join(path, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("x"), 0o644); err == nil {
		t.Fatal("WriteFile over a non-empty directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(path, "keep")); err != nil {
		t.Fatalf("target disturbed: %v", err)
	}
	if left, _ := filepath.Glob(TempGlob(path)); len(left) != 0 {
		t.Fatalf("temp files left: %v", left)
	}
}

func TestWriteTempPrepareFailureRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	boom := errors.New("boom")
	if _, err := WriteTemp(dir, "spool-*.json", []byte("x"), 0o640, func(string) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

func TestWriteTempIsWrittenAndClosed(t *testing.T) {
	dir := t.TempDir()
	var prepared string
	name, err := WriteTemp(dir, "spool-*.json", []byte("body"), 0o640, func(n string) error { prepared = n; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if prepared != name || filepath.Dir(name) != dir {
		t.Fatalf("name %q prepared %q, want one temp file in %s", name, prepared, dir)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(name, &st); err != nil || os.FileMode(st.Mode).Perm() != 0o640 {
		t.Fatalf("mode %o, %v; want 0640", st.Mode&0o777, err)
	}
	if got, _ := os.ReadFile(name); string(got) != "body" {
		t.Fatalf("content %q", got)
	}
}

func TestTempGlobEscapesMetacharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run[1]")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state.json")
	stray := filepath.Join(dir, "state.json.tmp-123")
	if err := os.WriteFile(stray, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if left, err := filepath.Glob(TempGlob(path)); err != nil || len(left) != 1 || left[0] != stray {
		t.Fatalf("glob %v, %v; want [%s]", left, err, stray)
	}
}

func TestSyncDirMissing(t *testing.T) {
	if err := SyncDir(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want not exist", err)
	}
}
