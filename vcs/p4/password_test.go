package p4

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An empty password file used to read as "no password" and fail later at
// login; it is now an error naming the file.
func TestEmptyPasswordFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p4.pass")
	if err := os.WriteFile(path, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Config{PasswordFile: path}.password()
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("err = %v, want an error naming the empty file", err)
	}
}
