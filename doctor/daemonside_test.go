package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/config"
)

// Every *_file the daemon reads is found, in any section and in the kind
// settings of repos and channels; the hook's [notify] file is not the
// daemon's.
func TestDaemonFilesFindsEveryFileKey(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"secret", "hook-secret", "llm-key", "svn-pw", "p4-tickets", "feishu-url", "feishu-secret", "rules.md"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	body := `[daemon]
data_dir = "data"
secret_file = "secret"
[notify]
secret_file = "hook-secret"
[agent]
kind = "llm"
rules_file = "rules.md"
[agent.llm]
api = "openai-chat"
base_url = "http://127.0.0.1:1/v1"
model = "m"
api_key_file = "llm-key"
[[repo]]
name = "main"
kind = "svn"
url = "svn://svn.example.com/main"
username = "aicr"
password_file = "svn-pw"
channels = ["feishu"]
[[repo]]
name = "depot"
kind = "p4"
port = "ssl:p4:1666"
user = "aicr"
ticket_file = "p4-tickets"
depot_paths = ["//depot/main/..."]
channels = ["feishu"]
[[channel]]
name = "feishu"
kind = "feishu"
webhook_url_file = "feishu-url"
secret_file = "feishu-secret"
`
	path := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := daemonFiles(cfg, "")
	got := map[string]string{}
	for _, f := range files {
		got[f.Key] = filepath.Base(f.Path) + "@" + f.Repo
	}
	want := map[string]string{
		"[daemon] secret_file":                "secret@",
		"[agent] rules_file":                  "rules.md@",
		"[agent.llm] api_key_file":            "llm-key@",
		"[[repo]] main password_file":         "svn-pw@main",
		"[[repo]] depot ticket_file":          "p4-tickets@depot",
		"[[channel]] feishu webhook_url_file": "feishu-url@",
		"[[channel]] feishu secret_file":      "feishu-secret@",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	for k, v := range got {
		if strings.Contains(v, "hook-secret") {
			t.Errorf("the hook's [notify] secret is listed as the daemon's: %s", k)
		}
	}
	// --repo limits the repos' files to that repo.
	files, _ = daemonFiles(cfg, "depot")
	for _, f := range files {
		if f.Repo == "main" {
			t.Errorf("--repo depot listed %+v", f)
		}
	}
}

func TestVersionCheckMinimum(t *testing.T) {
	if c := versionCheck(CheckSvn, "1.9.7", "/usr/bin/svn", "1.10.0"); c.Status != StatusFail || !strings.Contains(c.Detail, "older than 1.10.0") || !strings.Contains(c.Fix, "svn_path") {
		t.Errorf("svn 1.9.7: %+v", c)
	}
	if c := versionCheck(CheckSvn, "1.14.2", "/usr/bin/svn", "1.10.0"); c.Status != StatusOK {
		t.Errorf("svn 1.14.2: %+v", c)
	}
	if c := versionCheck(CheckPodman, "3.4.4", "/usr/bin/podman", "4.0.0"); c.Status != StatusFail || !strings.Contains(c.Fix, "[sandbox.podman] binary") {
		t.Errorf("podman 3.4.4: %+v", c)
	}
	if c := versionCheck(CheckPodman, "", "/usr/bin/podman", "4.0.0"); c.Status != StatusWarn {
		t.Errorf("unparseable version: %+v", c)
	}
}

// A ticket_file that does not exist is cured by p4 login as the daemon's
// account with P4TICKETS naming it (not by creating a file by hand), in
// words a Debian host has: runuser, with sudo as the alternative.
func TestMissingTicketFileFixIsP4Login(t *testing.T) {
	dir := t.TempDir()
	body := `[daemon]
data_dir = "data"
[[repo]]
name = "depot"
kind = "p4"
port = "ssl:p4:1666"
user = "svc-aicr"
ticket_file = "p4-tickets"
depot_paths = ["//depot/main/..."]
`
	path := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	me := currentAccount()
	checks := checkDaemonFiles(cfg, "", me)
	if len(checks) != 1 || checks[0].Status == StatusOK {
		t.Fatalf("checks = %+v; want the missing ticket file failed", checks)
	}
	fix := checks[0].Fix
	tickets := filepath.Join(dir, "p4-tickets")
	for _, want := range []string{"runuser -u " + me.user + " -- env P4TICKETS=" + shellQuote(tickets) + " p4 -p ssl:p4:1666 -u svc-aicr login -a", "sudo -u " + me.user} {
		if !strings.Contains(fix, want) {
			t.Errorf("fix %q lacks %q", fix, want)
		}
	}
	if strings.Contains(fix, "install -m") {
		t.Errorf("fix %q creates the tickets file by hand", fix)
	}
}
