package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// [retention] keys: defaults, durations, the schedule, and the old
// [daemon] keep_runs_for still honoured with a deprecation warning.
func TestRetentionConfig(t *testing.T) {
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "aicr.toml")
		body = "[daemon]\ndata_dir = \"d\"\n" + body + "\n[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///x\"\n[[channel]]\nname = \"console\"\nkind = \"console\"\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg, err := Load(write(""))
	if err != nil {
		t.Fatal(err)
	}
	want := Retention{RunDirs: DefaultKeepRunsFor, SpoolLeftovers: DefaultSpoolLeftoversFor, Findings: DefaultFindingsFor, Every: "@daily"}
	if cfg.Retention != want {
		t.Errorf("defaults = %+v, want %+v", cfg.Retention, want)
	}
	if len(cfg.deprecations) != 0 {
		t.Errorf("deprecations without the old key: %v", cfg.deprecations)
	}

	cfg, err = Load(write("[retention]\nrun_dirs = \"0\"\naudit_rows = \"8760h\"\nspool_leftovers = \"0\"\nchannel_files = \"2160h\"\nfindings = \"0\"\nevery = \"@every 6h\"\nkeep_sources = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	want = Retention{AuditRows: 8760 * time.Hour, ChannelFiles: 2160 * time.Hour, Every: "@every 6h", KeepSources: true}
	if cfg.Retention != want {
		t.Errorf("set = %+v, want %+v", cfg.Retention, want)
	}

	// The deprecated key still works and says where it moved.
	cfg, err = Load(write("keep_runs_for = \"48h\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Retention.RunDirs != 48*time.Hour {
		t.Errorf("keep_runs_for = 48h gave run_dirs %s", cfg.Retention.RunDirs)
	}
	warnings, _ := Preflight(cfg)
	if !containsAll(strings.Join(warnings, "\n"), "keep_runs_for is deprecated", "[retention] run_dirs") {
		t.Errorf("Preflight warnings %q do not name the deprecated key and its new place", warnings)
	}

	for body, key := range map[string]string{
		"keep_runs_for = \"24h\"\n[retention]\nrun_dirs = \"48h\"\n": "daemon.keep_runs_for",
		"[retention]\naudit_rows = \"-1h\"\n":                        "retention.audit_rows",
		"[retention]\nevery = \"sometimes\"\n":                       "retention.every",
		"[retention]\nfindings = \"-24h\"\n":                         "retention.findings",
		"[retention]\nkeep = \"1h\"\n":                               "retention.keep",
	} {
		_, err := Load(write(body))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: err = %v, want one naming %s", body, err, key)
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
