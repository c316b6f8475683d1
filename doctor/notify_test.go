package doctor

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hookConfig writes a config whose hook part is sound, followed by extra.
func hookConfig(t *testing.T, extra string) (path, repo string) {
	t.Helper()
	dir := t.TempDir()
	repo = filepath.Join(dir, "svnrepo")
	if err := os.MkdirAll(filepath.Join(dir, "data", "spool"), 0o770); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := `[daemon]
listen = "127.0.0.1:1"
data_dir = "data"
secret_file = "secret"

[[repo]]
name = "main"
kind = "svn"
url = "file://` + repo + `"
local_path = "` + repo + `"
` + extra
	path = filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, repo
}

func findCheck(t *testing.T, checks []Check, name string) Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s check in %+v", name, checks)
	return Check{}
}

// Doctor judges the hook by what the hook reads: a config the daemon
// refuses (here: a channel kind it does not know, a repo with no
// channels) still lets the hook deliver, so the hook's config check
// passes. It used to load the config strictly and fail.
func TestCheckNotifyReadsTheConfigAsTheHookDoes(t *testing.T) {
	path, repo := hookConfig(t, `channels = ["pigeon"]

[[channel]]
name = "pigeon"
kind = "carrier-pigeon"
`)
	checks := CheckNotify(context.Background(), NotifyCheckOptions{ConfigPath: path, ReposPath: repo, Stderr: io.Discard})
	for _, name := range []string{CheckConfig, CheckRepo, CheckSecret, CheckSpool} {
		if c := findCheck(t, checks, name); c.Status != StatusOK {
			t.Errorf("%s check failed on a config the hook reads fine: %s (fix: %s)", name, c.Detail, c.Fix)
		}
	}
}

// A value the hook cannot use (it falls back to the default) is reported.
func TestCheckNotifyReportsValuesTheHookIgnores(t *testing.T) {
	path, repo := hookConfig(t, `
[notify]
timeout = "soon"
`)
	c := findCheck(t, CheckNotify(context.Background(), NotifyCheckOptions{ConfigPath: path, ReposPath: repo, Stderr: io.Discard}), CheckConfig)
	if !c.Failed() || !strings.Contains(c.Detail, `[notify] timeout: "soon" is not a positive duration`) || c.Fix == "" {
		t.Errorf("config check = %+v, want a failure naming [notify] timeout", c)
	}
}

// A hook whose --name is another repository's is refused by notify, so
// doctor says so.
func TestCheckNotifyRepoNameWithOtherLocalPath(t *testing.T) {
	path, _ := hookConfig(t, "")
	other := filepath.Join(t.TempDir(), "other")
	c := findCheck(t, CheckNotify(context.Background(), NotifyCheckOptions{ConfigPath: path, RepoName: "main", ReposPath: other, Stderr: io.Discard}), CheckRepo)
	if !c.Failed() || !strings.Contains(c.Detail, "the hook refuses its events") {
		t.Errorf("repo check = %+v, want the local_path mismatch", c)
	}
}
