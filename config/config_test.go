package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfigValid(t *testing.T) {
	cfg, err := Load("testdata/valid.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs("testdata")
	if cfg.Daemon.DataDir != filepath.Join(dir, "data") {
		t.Errorf("data_dir not resolved against the config file: %s", cfg.Daemon.DataDir)
	}
	if cfg.Daemon.Workers != 2 || cfg.Notify.Timeout != 2*time.Second || cfg.Notify.ResendMax != 20 {
		t.Errorf("defaults not applied: workers=%d timeout=%s resend=%d", cfg.Daemon.Workers, cfg.Notify.Timeout, cfg.Notify.ResendMax)
	}
	if cfg.Notify.URL != "http://127.0.0.1:9999" {
		t.Errorf("notify url should default to the daemon's listen address, got %s", cfg.Notify.URL)
	}
	if cfg.Notify.SecretEnv != "AICR_TEST_SECRET" {
		t.Errorf("notify secret should default to the daemon's, got %q", cfg.Notify.SecretEnv)
	}
	if cfg.Notify.SpoolDir != filepath.Join(dir, "data", "spool") {
		t.Errorf("spool dir default: %s", cfg.Notify.SpoolDir)
	}
	if len(cfg.Channels) != 2 || cfg.Channels[1].Kind != "file" || cfg.Channels[1].NoProblems != "suppress" {
		t.Fatalf("channels: %+v", cfg.Channels)
	}
	if r, ok := cfg.RepoForPath("/srv/svn/main/"); !ok || r.Name != "main" {
		t.Errorf("RepoForPath did not find main")
	}
}

// Each failure mode names the file, the line and the key, and every problem
// is reported at once so an admin fixes the file in one pass.
func TestLoadConfigErrors(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		{"unknown_key.toml", []string{
			"unknown_key.toml:4: daemon.wrokers: unknown key",
			"unknown_key.toml:16: repo.chanels: unknown key",
			"unknown_key.toml:21: channel.colour: unknown key",
		}},
		{"bad_values.toml", []string{
			"bad_values.toml:5: daemon.workers: must be between 1 and 64, got 0",
			"bad_values.toml:4: daemon.secret_file: set secret_env or secret_file, not both",
			`bad_values.toml:8: repo[0].name: must be 1-64 letters`,
			`bad_values.toml:9: repo[0].kind: unsupported repo kind "git"`,
			`bad_values.toml:11: repo[0].channels: names channel "nowhere"`,
			`bad_values.toml:21: channel[1].kind: unknown channel kind "carrier-pigeon"`,
		}},
		{"syntax.toml", []string{"syntax.toml:3: "}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", tc.file))
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%s", w, err)
				}
			}
		})
	}
}

func TestLoadConfigBadChannelValues(t *testing.T) {
	// Separate from bad_values.toml's unknown kind so the console channel's
	// own validation is reached.
	path := writeTemp(t, `
[daemon]
secret_env = "X"
[[repo]]
name = "main"
kind = "svn"
url = "file:///x"
[[channel]]
name = "console"
kind = "console"
no_problems = "sometimes"
`)
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), "sometimes") || !strings.Contains(err.Error(), `:11: channel[0].no_problems: invalid value "sometimes"`) {
		t.Fatalf("want a located no_problems error, got %v", err)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.toml"))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}

func TestLoadConfigUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		// root reads anything; a directory in place of the file is
		// unreadable for everyone.
		_, err := Load(t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "read config") {
			t.Fatalf("want a read error, got %v", err)
		}
		return
	}
	path := writeTemp(t, "[daemon]\n")
	os.Chmod(path, 0)
	if _, err := Load(path); err == nil {
		t.Fatal("want an error for an unreadable file")
	}
}

func TestSecrets(t *testing.T) {
	path := writeTemp(t, `
[daemon]
secret_env = "AICR_TEST_SECRET_X"
[notify]
secret_file = "s.txt"
[[repo]]
name = "main"
kind = "svn"
url = "file:///x"
`)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.DaemonSecret(); err == nil || !strings.Contains(err.Error(), "AICR_TEST_SECRET_X") {
		t.Errorf("unset env should name the variable, got %v", err)
	}
	t.Setenv("AICR_TEST_SECRET_X", "  s3cr3t\n")
	if s, err := cfg.DaemonSecret(); err != nil || string(s) != "s3cr3t" {
		t.Errorf("env secret: %q %v", s, err)
	}
	if _, err := cfg.NotifySecret(); err == nil || !strings.Contains(err.Error(), "s.txt") {
		t.Errorf("missing secret file should be named, got %v", err)
	}
	os.WriteFile(filepath.Join(filepath.Dir(path), "s.txt"), []byte("filesecret\n"), 0o600)
	if s, err := cfg.NotifySecret(); err != nil || string(s) != "filesecret" {
		t.Errorf("file secret: %q %v", s, err)
	}
}

func TestExampleConfigIsValid(t *testing.T) {
	if _, err := Load("../configs/aicr.example.toml"); err != nil {
		t.Fatal(err)
	}
}

func writeTemp(t testing.TB, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "aicr.toml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAgentLimitsFromConfig(t *testing.T) {
	path := writeTemp(t, `
[daemon]
secret_env = "X"
[agent]
kind = "builtin"
max_problems = 3
max_context_requests = 2
[[repo]]
name = "main"
kind = "svn"
url = "file:///x"
`)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Agent.Limits()
	if l.MaxProblems != 3 || l.MaxContextRequests != 2 || l.MaxAttributionRequests != 0 {
		t.Fatalf("limits: %+v", l)
	}
	bad := writeTemp(t, "[daemon]\nsecret_env = \"X\"\n[agent]\nmax_problems = -1\n[[repo]]\nname = \"m\"\nkind = \"svn\"\nurl = \"file:///x\"\n")
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Fatalf("negative limit: %v", err)
	}
}

// The bot kinds share their webhook keys through an embedded struct; the
// loader must decode them as the kind's own keys.
func TestBotChannelKeysDecode(t *testing.T) {
	path := writeTemp(t, `
[daemon]
secret_env = "X"
[[repo]]
name = "main"
kind = "svn"
url = "file:///x"
channels = ["fs", "wc"]
[[channel]]
name = "fs"
kind = "feishu"
webhook_url_env = "FS_HOOK"
secret_file = "fs-secret"
max_parts = 3
[[channel]]
name = "wc"
kind = "wecom"
webhook_url_file = "wc-hook"
`)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Channels) != 2 {
		t.Fatalf("channels: %+v", cfg.Channels)
	}
	bad := writeTemp(t, `
[daemon]
secret_env = "X"
[[repo]]
name = "main"
kind = "svn"
url = "file:///x"
[[channel]]
name = "wc"
kind = "wecom"
webhook_url_file = "wc-hook"
secret_env = "WC_SECRET"
`)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "does not sign requests") {
		t.Fatalf("a WeCom secret must be refused, got %v", err)
	}
}

// An [agent] error is reported once, under the key it is about and at that
// key's line, like every other key (it used to read "agent.kind:
// agent.timeout: ..." at the [agent] table).
func TestLoadConfigAgentErrorsNameTheirKey(t *testing.T) {
	cases := []struct{ file, want string }{
		{"bad_agent.toml", "testdata/bad_agent.toml:19: agent.timeout: must not be negative, got -5s"},
		{"bad_agent_limits.toml", "testdata/bad_agent_limits.toml:17: agent: agent.max_problems, max_context_requests, max_attribution_requests and max_rejected must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", tc.file))
			if err == nil {
				t.Fatal("expected an error")
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}
