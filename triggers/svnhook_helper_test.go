//go:build unix

package triggers

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 15 item 8: a symlinked post-commit (one script shared by every
// repository) is not silently replaced by a private copy.
func TestSVNHookRefusesSymlinkedHookUnlessForced(t *testing.T) {
	base := t.TempDir()
	fx := newHookFixture(t, base)
	shared := filepath.Join(base, "shared-post-commit")
	sharedScript := "#!/bin/sh\necho shared\nexit 0\n"
	must(t, os.WriteFile(shared, []byte(sharedScript), 0o755))
	must(t, os.Symlink(shared, fx.hook))

	_, err := InstallSVNHook(fx.opts)
	if !errors.Is(err, ErrSymlinkHook) || !strings.Contains(err.Error(), shared) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("InstallSVNHook over a symlink: %v, want ErrSymlinkHook naming %s and --force", err, shared)
	}
	if target, err := os.Readlink(fx.hook); err != nil || target != shared {
		t.Fatalf("the link was changed: %q %v", target, err)
	}

	o := fx.opts
	o.Force = true
	if _, err := InstallSVNHook(o); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(fx.hook)
	must(t, err)
	if st.Mode()&os.ModeSymlink != 0 {
		t.Fatal("--force kept the link")
	}
	got, _ := os.ReadFile(fx.hook)
	if !strings.Contains(string(got), "echo shared") || !strings.Contains(string(got), SVNHookBegin) {
		t.Fatalf("--force hook lacks the shared lines or the block:\n%s", got)
	}
	if b, _ := os.ReadFile(shared); string(b) != sharedScript {
		t.Fatalf("the shared target was modified:\n%s", b)
	}

	// Uninstall refuses to rewrite a symlinked hook holding the block.
	must(t, os.Remove(fx.hook))
	must(t, os.WriteFile(shared, got, 0o755))
	must(t, os.Symlink(shared, fx.hook))
	if err := UninstallSVNHook(fx.opts.ReposPath); !errors.Is(err, ErrSymlinkHook) || !strings.Contains(err.Error(), "by hand") {
		t.Fatalf("UninstallSVNHook of a symlinked hook: %v, want ErrSymlinkHook", err)
	}
	if target, _ := os.Readlink(fx.hook); target != shared {
		t.Fatal("uninstall replaced the link")
	}
}

// Issue 15 item 8: a hook in another language is not edited; the aicr
// block goes into a helper script, and the line that calls it, pasted
// into the hook as printed, makes a real commit notify aicr.
func TestSVNHookForeignLanguageGetsHelperAndPasteLine(t *testing.T) {
	if _, err := exec.LookPath("svn"); err != nil {
		t.Skip("svn not installed")
	}
	for _, tc := range []struct {
		name, interp, body string
		lineSays           string
	}{
		{"perl", "/usr/bin/perl", "use strict;\nmy $x = 1;\n", "system('"},
		{"python", "/usr/bin/python3", "import sys\nx = 1\n", "import subprocess, sys; subprocess.call([\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.interp); err != nil {
				t.Skipf("%s not installed", tc.interp)
			}
			base := t.TempDir()
			fx := newHookFixture(t, base)
			foreign := "#!" + tc.interp + "\n" + tc.body
			must(t, os.WriteFile(fx.hook, []byte(foreign), 0o755))

			res, err := InstallSVNHookOrHelper(fx.opts)
			must(t, err)
			helper := SVNHelperPath(fx.opts.ReposPath)
			if res.Hook != helper || res.PasteInto != fx.hook || !strings.HasPrefix(res.PasteLine, tc.lineSays) || res.AlreadyCalled {
				t.Fatalf("result %+v, want the helper %s and a %s line for %s", res, helper, tc.name, fx.hook)
			}
			if got, _ := os.ReadFile(fx.hook); string(got) != foreign {
				t.Fatalf("the %s hook was edited:\n%s", tc.name, got)
			}
			// The operator pastes the line as printed.
			must(t, os.WriteFile(fx.hook, []byte(foreign+res.PasteLine+"\n"), 0o755))
			again, err := InstallSVNHookOrHelper(fx.opts)
			must(t, err)
			if !again.AlreadyCalled {
				t.Error("a reinstall does not see the pasted line")
			}
			if got := SVNBlockFile(fx.opts.ReposPath); got != helper {
				t.Errorf("SVNBlockFile = %s, want the helper %s", got, helper)
			}

			wc := filepath.Join(base, "wc")
			must(t, os.MkdirAll(wc, 0o755))
			svn := func(args ...string) string {
				cmd := exec.Command("svn", append([]string{"--non-interactive", "--config-dir", filepath.Join(base, "svnconfig")}, args...)...)
				cmd.Dir = wc
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("svn %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			svn("checkout", "file://"+fx.opts.ReposPath, ".")
			must(t, os.WriteFile(filepath.Join(wc, "a.txt"), []byte("a\n"), 0o644))
			svn("add", "a.txt")
			if out := svn("commit", "-m", "first"); strings.Contains(out, "Warning") || strings.Contains(out, "hook failed") {
				t.Fatalf("commit reported a hook problem:\n%s", out)
			}
			fx.fake.waitStarted(t)
			fx.fake.release(t)
			if got := fx.fake.argv(t); len(got) < 8 || got[6] != fx.opts.ReposPath || got[7] != "1" {
				t.Fatalf("notifier argv %q, want the repository and revision 1", got)
			}

			// Uninstall retires the helper (the hook still calls it, so a
			// missing file would make it fail) and never edits the hook.
			must(t, UninstallSVNHook(fx.opts.ReposPath))
			if !HelperStillCalled(fx.opts.ReposPath) {
				t.Fatal("the helper is gone while the hook still calls it")
			}
			if b, _ := os.ReadFile(helper); strings.Contains(string(b), SVNHookBegin) {
				t.Fatalf("the retired helper still notifies:\n%s", b)
			}
			must(t, os.WriteFile(filepath.Join(wc, "a.txt"), []byte("b\n"), 0o644))
			if out := svn("commit", "-m", "second"); strings.Contains(out, "Warning") || strings.Contains(out, "hook failed") {
				t.Fatalf("a commit after uninstall reported a hook problem:\n%s", out)
			}
		})
	}
}

func TestSVNHookHelperLinesPerLanguage(t *testing.T) {
	h := "/srv/svn/it's/hooks/post-commit.aicr"
	for lang, want := range map[string]string{
		"python3": `import subprocess, sys; subprocess.call(["/srv/svn/it's/hooks/post-commit.aicr"] + sys.argv[1:])`,
		"perl":    `system('/srv/svn/it\'s/hooks/post-commit.aicr', @ARGV);`,
		"ruby":    `system('/srv/svn/it\'s/hooks/post-commit.aicr', *ARGV)`,
		"binary":  `'/srv/svn/it'\''s/hooks/post-commit.aicr' "$REPOS" "$REV" "$TXN_NAME"`,
	} {
		if got := helperCall(lang, h); got != want {
			t.Errorf("%s: %s\nwant %s", lang, got, want)
		}
	}
	for script, want := range map[string]string{
		"#!/usr/bin/env -S python3 -u\n": "python3",
		"#!/usr/bin/perl -w\n":           "perl",
		"#!/bin/bash\n":                  "",
		"echo no shebang\n":              "",
		"\x7fELF\x00\x00":                "binary",
	} {
		if got := hookLanguage([]byte(script)); got != want {
			t.Errorf("hookLanguage(%q) = %q, want %q", script, got, want)
		}
	}
}
