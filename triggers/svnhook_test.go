//go:build unix

package triggers

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deadlockGuard only turns a hang into a failure; no test asserts how long
// anything takes.
const deadlockGuard = 60 * time.Second

// fakeAicr is a stand-in for the aicr binary that records its argv and
// environment, then tells the test it started (started fifo) and waits
// until the test releases it (release fifo). Because svn and our hook run
// it with an empty environment, every path is baked into the script.
type fakeAicr struct {
	path, dir string
}

func newFakeAicr(t *testing.T, dir string) fakeAicr {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	f := fakeAicr{path: filepath.Join(dir, "aicr"), dir: dir}
	must(t, syscall.Mkfifo(f.fifo("started"), 0o600))
	must(t, syscall.Mkfifo(f.fifo("release"), 0o600))
	q := shQuote(dir)
	script := "#!/bin/sh\n" +
		"printf '%s\\n' \"$@\" > " + q + "/argv\n" +
		"env > " + q + "/env\n" +
		"echo 'fake notify stderr line' >&2\n" +
		"echo started > " + q + "/started.fifo\n" +
		"read line < " + q + "/release.fifo\n" +
		"echo done > " + q + "/done\n"
	must(t, os.WriteFile(f.path, []byte(script), 0o755))
	t.Cleanup(f.unblock)
	return f
}

func (f fakeAicr) fifo(name string) string { return filepath.Join(f.dir, name+".fifo") }

// unblock lets a fake that is still waiting finish and makes later fifo
// operations of a late fake non-blocking, so no process outlives the test.
func (f fakeAicr) unblock() {
	for _, name := range []string{"started", "release"} {
		// O_RDWR on a fifo never blocks on Linux and satisfies a waiting peer.
		fd, err := os.OpenFile(f.fifo(name), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if name == "release" {
			fd.WriteString("go\n")
		}
		os.Remove(f.fifo(name))
		defer fd.Close()
	}
}

// waitStarted blocks until the fake has recorded its argv.
func (f fakeAicr) waitStarted(t *testing.T) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		b, err := os.ReadFile(f.fifo("started"))
		if err == nil && string(b) != "started\n" {
			err = errors.New("unexpected " + string(b))
		}
		done <- err
	}()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(deadlockGuard):
		t.Fatal("the notifier never started")
	}
}

func (f fakeAicr) release(t *testing.T) {
	t.Helper()
	must(t, os.WriteFile(f.fifo("release"), []byte("go\n"), 0))
}

func (f fakeAicr) argv(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "argv"))
	must(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func (f fakeAicr) env(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "env"))
	must(t, err)
	env := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	return env
}

func svnadminCreate(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath("svnadmin"); err != nil {
		t.Skip("svnadmin not installed")
	}
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	if out, err := exec.Command("svnadmin", "create", path).CombinedOutput(); err != nil {
		t.Fatalf("svnadmin create: %v\n%s", err, out)
	}
}

type hookFixture struct {
	opts SVNHookOptions
	fake fakeAicr
	hook string
}

func newHookFixture(t *testing.T, base string) hookFixture {
	t.Helper()
	repos := filepath.Join(base, "repos")
	svnadminCreate(t, repos)
	fake := newFakeAicr(t, filepath.Join(base, "bin"))
	config := filepath.Join(base, "aicr.toml")
	must(t, os.WriteFile(config, []byte("# test\n"), 0o644))
	return hookFixture{
		opts: SVNHookOptions{ReposPath: repos, AicrPath: fake.path, ConfigPath: config, RepoName: "main", SpoolDir: filepath.Join(base, "spool")},
		fake: fake,
		hook: filepath.Join(repos, "hooks", "post-commit"),
	}
}

// runHook runs the hook the way svn does: empty environment, stdout and
// stderr on pipes that svn reads to the end. Run returns only when the hook
// exited and the pipes closed, so a notifier holding them would hang here.
func runHook(t *testing.T, hook string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadlockGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, "env", append([]string{"-i", "/bin/sh", hook}, args...)...)
	cmd.Dir = "/"
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("hook failed (or did not return while the notifier was still running): %v\nstderr: %s", err, errb.String())
	}
	return out.String(), errb.String()
}

func TestSVNHookRunsNotifierDetached(t *testing.T) {
	fx := newHookFixture(t, t.TempDir())
	path, err := InstallSVNHook(fx.opts)
	must(t, err)
	if path != fx.hook {
		t.Fatalf("InstallSVNHook path %s, want %s", path, fx.hook)
	}
	info, err := os.Stat(path)
	must(t, err)
	if info.Mode().Perm() != 0o755 {
		t.Fatalf("hook mode %v, want 0755", info.Mode().Perm())
	}

	stdout, stderr := runHook(t, path, fx.opts.ReposPath, "7", "7-a")
	// The hook has exited, yet the fake is blocked until we release it:
	// the commit does not wait for aicr.
	fx.fake.waitStarted(t)
	if _, err := os.Stat(filepath.Join(fx.fake.dir, "done")); err == nil {
		t.Fatal("notifier finished before release; test is not proving detachment")
	}
	fx.fake.release(t)
	if stdout != "" || stderr != "" {
		t.Fatalf("hook printed stdout %q stderr %q; svn would show them to the committer", stdout, stderr)
	}

	want := []string{"notify", "svn", "--config", fx.opts.ConfigPath, "--repo", "main", fx.opts.ReposPath, "7", "7-a"}
	if got := fx.fake.argv(t); !equalStrings(got, want) {
		t.Fatalf("notifier argv %q, want %q", got, want)
	}
	env := fx.fake.env(t)
	if env["LC_ALL"] != "C.UTF-8" || env["PATH"] != hookPATH {
		t.Fatalf("notifier env LC_ALL=%q PATH=%q", env["LC_ALL"], env["PATH"])
	}
	log, err := os.ReadFile(filepath.Join(fx.opts.SpoolDir, "notify.log"))
	must(t, err)
	if !strings.Contains(string(log), "fake notify stderr line") {
		t.Fatalf("notify.log %q lacks the notifier's stderr", log)
	}
	spoolInfo, err := os.Stat(fx.opts.SpoolDir)
	must(t, err)
	if spoolInfo.Mode().Perm() != 0o770 {
		t.Fatalf("spool dir mode %v, want 0770", spoolInfo.Mode().Perm())
	}
}

func TestSVNHookTwoArgsAndUnwritableLog(t *testing.T) {
	fx := newHookFixture(t, t.TempDir())
	fx.opts.LogFile = filepath.Join(t.TempDir(), "logs", "notify.log")
	_, err := InstallSVNHook(fx.opts)
	must(t, err)
	// A log that cannot be opened must not stop the notifier.
	must(t, os.Remove(fx.opts.LogFile))
	must(t, os.Mkdir(fx.opts.LogFile, 0o755))
	runHook(t, fx.hook, fx.opts.ReposPath, "3") // svn before 1.8 passes no txn
	fx.fake.waitStarted(t)
	fx.fake.release(t)
	got := fx.fake.argv(t)
	if len(got) != 9 || got[7] != "3" || got[8] != "" {
		t.Fatalf("notifier argv %q, want revision 3 and an empty txn", got)
	}
}

func TestSVNHookPathsWithSpacesAndQuotes(t *testing.T) {
	base := filepath.Join(t.TempDir(), "it's a dir")
	fx := newHookFixture(t, base)
	fx.opts.RepoName = `team's "repo" $HOME`
	fx.opts.SpoolDir = filepath.Join(base, "spool dir's")
	_, err := InstallSVNHook(fx.opts)
	must(t, err)
	runHook(t, fx.hook, fx.opts.ReposPath, "12", "12-c")
	fx.fake.waitStarted(t)
	fx.fake.release(t)
	want := []string{"notify", "svn", "--config", fx.opts.ConfigPath, "--repo", fx.opts.RepoName, fx.opts.ReposPath, "12", "12-c"}
	if got := fx.fake.argv(t); !equalStrings(got, want) {
		t.Fatalf("notifier argv %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(fx.opts.SpoolDir, "notify.log")); err != nil {
		t.Fatalf("log in quoted spool dir: %v", err)
	}
}

func TestSVNHookPreservesExistingHookAndIsIdempotent(t *testing.T) {
	fx := newHookFixture(t, t.TempDir())
	marker := filepath.Join(t.TempDir(), "mailer-ran")
	original := "#!/bin/sh\n# site mailer\nREPOS=\"$1\"\necho \"$2\" > " + shQuote(marker) + "\n\nexit 0\n"
	must(t, os.WriteFile(fx.hook, []byte(original), 0o750))

	_, err := InstallSVNHook(fx.opts)
	must(t, err)
	first, err := os.ReadFile(fx.hook)
	must(t, err)
	s := string(first)
	begin, end, exit := strings.Index(s, SVNHookBegin), strings.Index(s, SVNHookEnd), strings.LastIndex(s, "exit 0")
	if !strings.HasPrefix(s, "#!/bin/sh\n# site mailer\n") || begin < 0 || !(begin < end && end < exit) {
		t.Fatalf("block not inserted before the final exit:\n%s", s)
	}

	_, err = InstallSVNHook(fx.opts)
	must(t, err)
	second, err := os.ReadFile(fx.hook)
	must(t, err)
	if !bytes.Equal(first, second) {
		t.Fatalf("reinstall changed the hook:\n--- first\n%s\n--- second\n%s", first, second)
	}

	runHook(t, fx.hook, fx.opts.ReposPath, "21", "21-x")
	fx.fake.waitStarted(t)
	fx.fake.release(t)
	if got, _ := os.ReadFile(marker); string(got) != "21\n" {
		t.Fatalf("existing hook's own work did not run: %q", got)
	}
	if got := fx.fake.argv(t); got[7] != "21" {
		t.Fatalf("notifier argv %q", got)
	}

	must(t, UninstallSVNHook(fx.opts.ReposPath))
	after, err := os.ReadFile(fx.hook)
	must(t, err)
	if string(after) != original {
		t.Fatalf("uninstall did not restore the original hook:\n%s", after)
	}
	must(t, UninstallSVNHook(fx.opts.ReposPath)) // nothing left to remove
}

func TestSVNHookAppendsWithoutFinalExit(t *testing.T) {
	fx := newHookFixture(t, t.TempDir())
	original := "#!/bin/bash\nlogger committed \"$2\""
	must(t, os.WriteFile(fx.hook, []byte(original), 0o755))
	_, err := InstallSVNHook(fx.opts)
	must(t, err)
	got, err := os.ReadFile(fx.hook)
	must(t, err)
	if !strings.HasPrefix(string(got), original+"\n"+SVNHookBegin+"\n") || !strings.HasSuffix(string(got), SVNHookEnd+"\n") {
		t.Fatalf("block not appended:\n%s", got)
	}
}

func TestSVNHookFreshInstallAndUninstallRemovesFile(t *testing.T) {
	fx := newHookFixture(t, t.TempDir())
	_, err := InstallSVNHook(fx.opts)
	must(t, err)
	got, err := os.ReadFile(fx.hook)
	must(t, err)
	if !strings.HasPrefix(string(got), "#!/bin/sh\n"+SVNHookBegin+"\n") || !strings.HasSuffix(string(got), SVNHookEnd+"\nexit 0\n") {
		t.Fatalf("fresh hook:\n%s", got)
	}
	must(t, UninstallSVNHook(fx.opts.ReposPath))
	if _, err := os.Stat(fx.hook); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("hook with only the aicr block not removed: %v", err)
	}
}

func TestSVNHookRefusesBadInput(t *testing.T) {
	fx := newHookFixture(t, t.TempDir())
	wc := t.TempDir() // not a repository

	tests := []struct {
		name   string
		change func(o *SVNHookOptions)
		want   error
		substr string
	}{
		{"not a repository", func(o *SVNHookOptions) { o.ReposPath = wc }, ErrNotSVNRepo, "svnadmin create"},
		{"missing aicr", func(o *SVNHookOptions) { o.AicrPath = filepath.Join(wc, "nope") }, nil, "aicr binary"},
		{"missing config", func(o *SVNHookOptions) { o.ConfigPath = filepath.Join(wc, "nope.toml") }, nil, "config file"},
		{"no repo name", func(o *SVNHookOptions) { o.RepoName = "" }, nil, "repo name"},
		{"no spool dir", func(o *SVNHookOptions) { o.SpoolDir = "" }, nil, "spool directory"},
		{"spool under a file", func(o *SVNHookOptions) { o.SpoolDir = filepath.Join(o.ConfigPath, "spool") }, nil, "create spool dir"},
		{"newline in name", func(o *SVNHookOptions) { o.RepoName = "a\nb" }, nil, "line break"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := fx.opts
			tt.change(&o)
			_, err := InstallSVNHook(o)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.substr) {
				t.Fatalf("InstallSVNHook: %v, want error mentioning %q", err, tt.substr)
			}
		})
	}

	t.Run("foreign hook", func(t *testing.T) {
		py := "#!/usr/bin/env python3\nprint('hi')\n"
		must(t, os.WriteFile(fx.hook, []byte(py), 0o755))
		_, err := InstallSVNHook(fx.opts)
		if !errors.Is(err, ErrForeignHook) || !strings.Contains(err.Error(), "python3") {
			t.Fatalf("InstallSVNHook over a python hook: %v, want ErrForeignHook", err)
		}
		if got, _ := os.ReadFile(fx.hook); string(got) != py {
			t.Fatal("python hook modified")
		}
	})
	t.Run("unmatched marker", func(t *testing.T) {
		must(t, os.WriteFile(fx.hook, []byte("#!/bin/sh\n"+SVNHookBegin+"\necho hi\n"), 0o755))
		if _, err := InstallSVNHook(fx.opts); !errors.Is(err, ErrHookMarkers) {
			t.Fatalf("InstallSVNHook: %v, want ErrHookMarkers", err)
		}
	})
}

func TestSVNHookFiresOnRealCommit(t *testing.T) {
	if _, err := exec.LookPath("svn"); err != nil {
		t.Skip("svn not installed")
	}
	base := t.TempDir()
	fx := newHookFixture(t, base)
	_, err := InstallSVNHook(fx.opts)
	must(t, err)

	wc := filepath.Join(base, "wc")
	svn := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), deadlockGuard)
		defer cancel()
		cmd := exec.CommandContext(ctx, "svn", append([]string{"--non-interactive", "--config-dir", filepath.Join(base, "svnconfig")}, args...)...)
		cmd.Dir = wc
		cmd.Stdin = nil
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("svn %v: %v\n%s", args, err, out.String())
		}
		if strings.Contains(out.String(), "post-commit hook failed") || strings.Contains(out.String(), "Warning") {
			t.Fatalf("svn %v reported a hook problem:\n%s", args, out.String())
		}
	}
	must(t, os.MkdirAll(wc, 0o755))
	svn("checkout", "file://"+fx.opts.ReposPath, ".")
	must(t, os.WriteFile(filepath.Join(wc, "hello.c"), []byte("int main(void) { return 0; }\n"), 0o644))
	svn("add", "hello.c")
	svn("commit", "-m", "first", "--username", "alice")

	fx.fake.waitStarted(t)
	fx.fake.release(t)
	got := fx.fake.argv(t)
	if len(got) != 9 || got[6] != fx.opts.ReposPath || got[7] != "1" || got[8] == "" {
		t.Fatalf("notifier argv %q, want repository, revision 1 and a txn name", got)
	}
	if env := fx.fake.env(t); env["LC_ALL"] != "C.UTF-8" || env["PATH"] != hookPATH {
		t.Fatalf("notifier env under svn: LC_ALL=%q PATH=%q", env["LC_ALL"], env["PATH"])
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSVNHookSpoolOwnedByRepoOwnerWhenRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	const uid, gid = 4321, 4321
	base := t.TempDir()
	// Let the repo owner reach the fixture through the test temp dirs.
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	must(t, os.Chmod(base, 0o755))
	fx := newHookFixture(t, base)
	must(t, os.Chmod(fx.fake.dir, 0o777))
	must(t, os.Chown(fx.fake.fifo("started"), uid, gid))
	must(t, os.Chown(fx.fake.fifo("release"), uid, gid))
	must(t, filepathWalkChown(fx.opts.ReposPath, uid, gid))
	fx.opts.SpoolDir = filepath.Join(base, "var", "spool", "aicr")

	_, err := InstallSVNHook(fx.opts)
	must(t, err)
	for _, p := range []string{filepath.Join(base, "var"), filepath.Join(base, "var", "spool"), fx.opts.SpoolDir, filepath.Join(fx.opts.SpoolDir, "notify.log"), fx.hook} {
		info, err := os.Stat(p)
		must(t, err)
		st := info.Sys().(*syscall.Stat_t)
		if st.Uid != uid || st.Gid != gid {
			t.Fatalf("%s owned by %d:%d, want the repository owner %d:%d", p, st.Uid, st.Gid, uid, gid)
		}
	}

	// Run the hook as the repository owner, as svnserve or Apache would.
	ctx, cancel := context.WithTimeout(context.Background(), deadlockGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/env", "-i", "/bin/sh", fx.hook, fx.opts.ReposPath, "5", "5-a")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hook as repo owner: %v\n%s", err, out)
	}
	fx.fake.waitStarted(t)
	fx.fake.release(t)
	log, err := os.ReadFile(filepath.Join(fx.opts.SpoolDir, "notify.log"))
	must(t, err)
	if !strings.Contains(string(log), "fake notify stderr line") {
		t.Fatalf("repo owner could not write notify.log: %q", log)
	}
}

func filepathWalkChown(root string, uid, gid int) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func TestSVNCmdHookInstallKeepsExistingAndUninstalls(t *testing.T) {
	fx := newHookFixture(t, t.TempDir())
	fx.opts.Windows = true
	cmdHook := SVNHookPath(fx.opts.ReposPath, true)

	// Fresh install: @echo off, the block, exit /b 0, CRLF line endings.
	_, err := InstallSVNHook(fx.opts)
	must(t, err)
	got, err := os.ReadFile(cmdHook)
	must(t, err)
	s := string(got)
	if !strings.HasPrefix(s, "@echo off\r\n"+SVNHookBeginCmd+"\r\n") || !strings.HasSuffix(s, SVNHookEndCmd+"\r\nexit /b 0\r\n") {
		t.Fatalf("fresh post-commit.cmd:\n%s", s)
	}
	for _, want := range []string{"set LC_ALL=C.UTF-8", `start "" /b "` + fx.opts.AicrPath + `" notify svn --config "`, `"%~1" "%~2" "%~3" <NUL >NUL 2>>"`} {
		if !strings.Contains(s, want) {
			t.Errorf("post-commit.cmd lacks %q:\n%s", want, s)
		}
	}
	if _, err := os.Stat(fx.hook); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--windows also wrote the POSIX hook: %v", err)
	}
	must(t, UninstallSVNCmdHook(fx.opts.ReposPath))
	if _, err := os.Stat(cmdHook); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("hook with only the aicr block not removed: %v", err)
	}

	// An existing hook keeps its lines; the block goes before exit /b.
	original := "@echo off\r\nREM site mailer\r\ncall mailer.cmd %1 %2\r\nexit /b 0\r\n"
	must(t, os.WriteFile(cmdHook, []byte(original), 0o755))
	_, err = InstallSVNHook(fx.opts)
	must(t, err)
	first, _ := os.ReadFile(cmdHook)
	s = string(first)
	if !strings.HasPrefix(s, "@echo off\r\nREM site mailer\r\ncall mailer.cmd %1 %2\r\n"+SVNHookBeginCmd) || !strings.HasSuffix(s, SVNHookEndCmd+"\r\nexit /b 0\r\n") {
		t.Fatalf("block not placed before exit /b:\n%s", s)
	}
	_, err = InstallSVNHook(fx.opts)
	must(t, err)
	if second, _ := os.ReadFile(cmdHook); !bytes.Equal(first, second) {
		t.Fatalf("reinstall changed the hook:\n%s\n---\n%s", first, second)
	}
	must(t, UninstallSVNCmdHook(fx.opts.ReposPath))
	if after, _ := os.ReadFile(cmdHook); string(after) != original {
		t.Fatalf("uninstall did not restore the original hook:\n%q", after)
	}
}
