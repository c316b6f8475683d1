package triggers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadHookConfigIgnoresWhatTheHookDoesNotUse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "aicr.toml")
	must(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("s3cret\n"), 0o600))
	// Things the daemon refuses (an unknown key, a channel without its
	// token, a table from a newer aicr, a repo kind this binary lacks)
	// must not keep the hook from sending.
	must(t, os.WriteFile(path, []byte(`
[daemon]
listen = "127.0.0.1:9999"
data_dir = "data"
no_such_key = true
[notify]
secret_file = "secret"
timeout = "3s"
unknown_repo_retry = "6h"
[future_table]
x = 1
[[channel]]
name = "team"
kind = "slack"
[[repo]]
name = "main"
kind = "svn"
local_path = "repos/main"
mystery = "yes"
[[repo]]
name = "depot"
kind = "p4"
port = "ssl:p4:1666"
`), 0o600))
	cfg, warnings, err := LoadHookConfig(path)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("LoadHookConfig = %v, warnings %v; want the hook's settings without complaint", err, warnings)
	}
	if cfg.URL != "http://127.0.0.1:9999" || cfg.SpoolDir != filepath.Join(dir, "data", "spool") ||
		cfg.Timeout != 3*time.Second || cfg.UnknownRepoRetry != 6*time.Hour || cfg.ResendMax != DefaultResendMax {
		t.Fatalf("config %+v", cfg)
	}
	if r, ok := cfg.RepoForPath(filepath.Join(dir, "repos", "main")); !ok || r.Name != "main" {
		t.Fatalf("RepoForPath = %+v, %v", r, ok)
	}
	if r, ok := cfg.Repo("depot"); !ok || r.Kind != "p4" || r.LocalPath != "" {
		t.Fatalf("Repo(depot) = %+v, %v", r, ok)
	}
	cc, err := cfg.ClientConfig()
	if err != nil || string(cc.Secret) != "s3cret" {
		t.Fatalf("ClientConfig secret %q, %v", cc.Secret, err)
	}
}

func TestLoadHookConfigWarnsOnUnusableValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aicr.toml")
	must(t, os.WriteFile(path, []byte("[notify]\ntimeout = \"soon\"\nspool_dir = \"/x/spool\"\n"), 0o600))
	cfg, warnings, err := LoadHookConfig(path)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "timeout") {
		t.Fatalf("LoadHookConfig = %v, warnings %v; want one warning naming timeout", err, warnings)
	}
	if cfg.Timeout != DefaultTimeout || cfg.SpoolDir != "/x/spool" {
		t.Fatalf("config %+v", cfg)
	}
}

func TestLoadHookConfigBrokenFileStillFindsTheSpool(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "aicr.toml")
	must(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("s3cret\n"), 0o600))
	must(t, os.WriteFile(path, []byte("[notify]\nspool_dir = \"/srv/aicr/spool\"\nsecret_file = \"secret\"\n[daemon\nbroken = \n"), 0o600))
	cfg, _, err := LoadHookConfig(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want the parse error naming the file", err)
	}
	if cfg.SpoolDir != "/srv/aicr/spool" {
		t.Fatalf("spool dir %q, want the one the broken file names", cfg.SpoolDir)
	}
	// The secret is found too, so the spool file is signed and delivered
	// once the config is fixed.
	if secret, err := cfg.Secret(); err != nil || string(secret) != "s3cret" {
		t.Fatalf("secret of a broken file = %q, %v", secret, err)
	}

	must(t, os.WriteFile(path, []byte("[daemon]\ndata_dir = 'data'\n[[repo\n"), 0o600))
	if cfg, _, err = LoadHookConfig(path); err == nil || cfg.SpoolDir != filepath.Join(dir, "data", "spool") {
		t.Fatalf("spool dir %q (%v), want data_dir/spool", cfg.SpoolDir, err)
	}

	cfg, _, err = LoadHookConfig(filepath.Join(dir, "missing.toml"))
	want := ""
	if st, serr := os.Stat(DefaultSpoolDir); serr == nil && st.IsDir() {
		want = DefaultSpoolDir
	}
	if err == nil || cfg.SpoolDir != want {
		t.Fatalf("missing file: spool dir %q (%v), want %q (the default only if it exists)", cfg.SpoolDir, err, want)
	}
}
