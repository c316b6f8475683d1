package svn

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/vcs/vcstest"
)

// svnHarness commits to a fresh repository of its own through a working
// copy, with the real svn client; the adapter reads it in one access mode.
type svnHarness struct {
	access string
	serve  *svnserve // svn:// access with a password, when set
	repo   string
	url    string
	wc     string
	cfgDir string
}

func newSvnHarness(t *testing.T, access string) *svnHarness {
	t.Helper()
	dir := t.TempDir()
	h := &svnHarness{access: access, repo: filepath.Join(dir, "repo"), wc: filepath.Join(dir, "wc"), cfgDir: filepath.Join(dir, "cfg")}
	h.url = (&url.URL{Scheme: "file", Path: filepath.ToSlash(h.repo)}).String()
	runSvn(t, "", "svnadmin", "create", h.repo)
	runSvn(t, "", "svn", "checkout", "--config-dir", h.cfgDir, h.url, h.wc)
	return h
}

func runSvn(t *testing.T, dir, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (h *svnHarness) svn(t *testing.T, args ...string) string {
	t.Helper()
	return runSvn(t, h.wc, "svn", append([]string{"--config-dir", h.cfgDir, "--non-interactive"}, args...)...)
}

func (h *svnHarness) Commit(t *testing.T, desc string, ops ...vcstest.FileOp) string {
	t.Helper()
	for _, op := range ops {
		p := filepath.Join(h.wc, filepath.FromSlash(op.Path))
		switch op.Op {
		case vcstest.OpAdd, vcstest.OpEdit:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if op.Symlink {
				if err := os.Symlink(string(op.Content), p); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(p, op.Content, 0o644); err != nil {
				t.Fatal(err)
			}
			if op.Op == vcstest.OpAdd {
				// "@" would end a path at a peg revision; the trailing
				// one keeps the name as written.
				h.svn(t, "add", "--parents", op.Path+"@")
				if op.Binary {
					h.svn(t, "propset", "svn:mime-type", "application/octet-stream", op.Path+"@")
				}
			}
		case vcstest.OpDelete:
			h.svn(t, "rm", op.Path+"@")
		case vcstest.OpMove:
			// svn takes a peg revision on the source only.
			h.svn(t, "mv", "--parents", op.From+"@", op.Path)
			if err := os.WriteFile(p, op.Content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.svn(t, "commit", "-m", desc)
	h.svn(t, "update")
	return strings.TrimSpace(h.svn(t, "info", "--show-item", "revision"))
}

func (h *svnHarness) Adapter(t *testing.T, scope vcs.Scope) vcs.Adapter {
	cfg := Config{URL: h.url, Access: h.access, Scope: scope}
	if h.access == AccessSvnlook {
		cfg.LocalPath = h.repo
	}
	if h.serve != nil {
		cfg.URL, cfg.Username, cfg.PasswordFile = h.serve.url, h.serve.user, h.serve.passFile
	}
	cfg.SetStateDir(filepath.Join(t.TempDir(), "state"))
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (h *svnHarness) ChangePath(rel string) string { return rel }

// TestAdapterConformance runs the suite shared with p4 against real
// repositories: the svn client over file://, over svnserve with a
// password, and svnlook.
func TestAdapterConformance(t *testing.T) {
	for _, access := range []string{AccessSVN, AccessSvnlook} {
		t.Run(access, func(t *testing.T) { vcstest.Run(t, newSvnHarness(t, access)) })
	}
	t.Run("svnserve", func(t *testing.T) {
		h := newSvnHarness(t, AccessSVN)
		s, err := startSvnserve(t.TempDir(), h.repo)
		if err != nil {
			t.Fatal(err)
		}
		defer s.stop()
		h.serve = s
		vcstest.Run(t, h)
	})
}
