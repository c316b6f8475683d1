package config

import (
	"os"
	"path/filepath"
	"testing"
)

// [agent] rules_file is relative to the config file, and a missing file
// fails config check under its key instead of reviewing without the
// operator's rules.
func TestLoadConfigRulesFile(t *testing.T) {
	dir, _ := filepath.Abs("testdata")
	_, err := Load("testdata/bad_rules_file.toml")
	want := "testdata/bad_rules_file.toml:19: agent.rules_file: " + filepath.Join(dir, "no-such-rules.md") +
		" does not exist: create it or remove the key"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n got %v\nwant %s", err, want)
	}

	tmp := t.TempDir()
	src, err := os.ReadFile("testdata/bad_rules_file.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "aicr.toml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "no-such-rules.md"), []byte("Check error paths.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(filepath.Join(tmp, "aicr.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.RulesFile != filepath.Join(tmp, "no-such-rules.md") {
		t.Errorf("rules_file = %q, want it resolved against the config's directory", cfg.Agent.RulesFile)
	}
}
