package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 22 F21: an unknown key in an array of tables was reported once
// per table for every line (4 errors for 2 typos), with no hint but a
// checkout path. Each line is reported once, with the nearest known key.
func TestConfigUnknownKeysOnceWithTheNearestKnownKey(t *testing.T) {
	_, err := Parse("aicr.toml", "/tmp/aicr.toml", []byte(`
[daemon]
data_dir = "d"
worker = 2
[[repo]]
name = "a"
kind = "svn"
url = "file:///x"
chanels = ["c"]
[[repo]]
name = "b"
kind = "svn"
url = "file:///y"
chanels = ["c"]
[[channel]]
name = "c"
kind = "console"
zzzzzz = "x"
`))
	if err == nil {
		t.Fatal("config with unknown keys accepted")
	}
	msgs := strings.Split(err.Error(), "\n")
	seen := map[string]bool{}
	for _, m := range msgs {
		if seen[m] {
			t.Errorf("reported twice: %s", m)
		}
		seen[m] = true
	}
	for _, want := range []string{
		"aicr.toml:4: daemon.worker: unknown key (did you mean `workers`?)",
		"aicr.toml:9: repo.chanels: unknown key (did you mean `channels`?)",
		"aicr.toml:14: repo.chanels: unknown key (did you mean `channels`?)",
		"aicr.toml:18: channel.zzzzzz: unknown key (check the spelling against " + ExamplePath,
	} {
		found := false
		for _, m := range msgs {
			found = found || strings.HasPrefix(m, want)
		}
		if !found {
			t.Errorf("no error %q in:\n%s", want, err)
		}
	}
	if len(msgs) != 4 {
		t.Errorf("%d errors, want 4 (one per line with an unknown key):\n%s", len(msgs), err)
	}
}

// The trigger secret's problems say file:line like every other config
// error, so the admin finds the key to fix.
func TestPreflightLocatesTheDaemonSecretFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aicr.toml")
	if err := os.WriteFile(path, []byte(`[daemon]
data_dir = "d"
listen = "127.0.0.1:0"
secret_file = "missing-secret"
[[repo]]
name = "a"
kind = "svn"
url = "file:///x"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Preflight(cfg)
	if err == nil || !strings.Contains(err.Error(), path+":4: [daemon] secret_file") {
		t.Fatalf("Preflight = %v; want it located at %s:4", err, path)
	}
}
