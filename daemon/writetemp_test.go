package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// writeTemp writes a config body to a fresh aicr.toml for the tests that
// need a daemon over a real file; config's own tests have their twin.
func writeTemp(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "aicr.toml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
