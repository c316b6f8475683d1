package doctor

// The hook's family (hook, hook-run and the dry run's own checks), with
// an installed post-commit hook run the way svn runs it: as the
// repository's owner, with an empty environment, notify in dry run.

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// installHook writes the post-commit hook aicr install svn-hook writes,
// running aicr at aicrPath.
func (in *install) installHook(t *testing.T, aicrPath string) string {
	t.Helper()
	hook, err := triggers.InstallSVNHook(triggers.SVNHookOptions{ReposPath: in.repos, AicrPath: aicrPath,
		ConfigPath: in.config, RepoName: "main", SpoolDir: in.spool})
	if err != nil {
		t.Fatal(err)
	}
	return hook
}

func (in *install) diagnoseRepo(t *testing.T, wait time.Duration) []Check {
	t.Helper()
	opts := Options{Config: loadConfig(t, in.config), Exe: aicrExe(t), ResultWait: wait}
	return checkSVNRepo(context.Background(), opts, "main", in.repos)
}

// The whole hook path on a sound installation: the hook runs, the
// notifier reports back every check of its own, and the dry run writes
// nothing to notify.log (which real commits append to) and spools nothing.
func TestHookRunsAsSvnWouldAndReportsBack(t *testing.T) {
	in := newInstall(t, "")
	startDaemon(t, in.config, "")
	in.installHook(t, aicrExe(t))
	logFile := filepath.Join(in.spool, "notify.log")
	writeFile(t, logFile, "an earlier commit's line\n", 0o660)

	checks := in.diagnoseRepo(t, 20*time.Second)
	for _, c := range checks {
		if c.Status != StatusOK {
			t.Errorf("%s: %s: %s (fix: %s)", c.Name, c.Status, c.Detail, c.Fix)
		}
		if c.Repo != "main" {
			t.Errorf("%s is not marked as repo main's: %+v", c.Name, c)
		}
	}
	for _, name := range []string{CheckHook, CheckHookRun, CheckConfig, CheckRepo, CheckSecret, CheckSpool, CheckLog, CheckHookDaemon} {
		findCheck(t, checks, name)
	}
	run := findCheck(t, checks, CheckHookRun)
	if !strings.Contains(run.Detail, "empty environment") || !strings.Contains(run.Detail, "dry run, nothing sent") {
		t.Errorf("hook-run does not say how it ran: %q", run.Detail)
	}
	// The notifier ran from the hook, with the log as its stderr.
	expect(t, findCheck(t, checks, CheckLog), StatusOK, []string{"appended to " + logFile}, nil)
	expect(t, findCheck(t, checks, CheckHookDaemon), StatusOK, []string{`knows repo "main"`}, nil)
	if b, _ := os.ReadFile(logFile); string(b) != "an earlier commit's line\n" {
		t.Errorf("the dry run wrote to notify.log: %q", b)
	}
	if spooled, _ := filepath.Glob(filepath.Join(in.spool, "*.json")); len(spooled) != 0 {
		t.Errorf("the dry run spooled %v", spooled)
	}
}

// svn runs hooks with an empty environment, and so does doctor: a secret
// in the admin's shell is not the hook's.
func TestHookRunHasAnEmptyEnvironment(t *testing.T) {
	in := newInstall(t, "")
	// [notify] secret_env is the hook's secret, over [daemon] secret_file.
	writeFile(t, in.config, strings.Replace(mustRead(t, in.config), "[notify]\n", "[notify]\nsecret_env = \"AICR_DOCTOR_HOOK_SECRET\"\n", 1), 0o644)
	t.Setenv("AICR_DOCTOR_HOOK_SECRET", "doctor-test-secret")
	in.installHook(t, aicrExe(t))

	c := findCheck(t, in.diagnoseRepo(t, 20*time.Second), CheckSecret)
	expect(t, c, StatusFail, []string{"$AICR_DOCTOR_HOOK_SECRET", "empty environment"}, []string{"secret_file"})
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A hook with the admin's own commands runs only its aicr block, so a
// made-up revision never reaches them.
func TestHookRunSkipsTheAdminsOwnCommands(t *testing.T) {
	in := newInstall(t, "")
	marker := filepath.Join(in.dir, "mailer-ran")
	hook := triggers.SVNHookPath(in.repos, false)
	writeFile(t, hook, "#!/bin/sh\ntouch "+marker+"\n", 0o755)
	in.installHook(t, aicrExe(t))

	run := findCheck(t, in.diagnoseRepo(t, 20*time.Second), CheckHookRun)
	expect(t, run, StatusOK, []string{"the aicr block of " + hook}, nil)
	if _, err := os.Stat(marker); err == nil {
		t.Error("doctor ran the hook's other commands")
	}
}

// Every way the hook file itself is broken names the file and the cure.
func TestHookFileFaults(t *testing.T) {
	notifier := func(in *install) string {
		p := filepath.Join(in.dir, "aicr-elsewhere")
		writeFile(t, p, "#!/bin/sh\nexit 0\n", 0o755)
		return p
	}
	cases := []struct {
		name   string
		break_ func(t *testing.T, in *install, hook string)
		detail []string
		fix    func(in *install, hook string) []string
	}{
		{"missing", func(t *testing.T, in *install, hook string) { os.Remove(hook) },
			[]string{"does not exist"},
			func(in *install, hook string) []string {
				return []string{"aicr install svn-hook --repo " + in.repos + " --config " + in.config}
			}},
		{"no aicr block", func(t *testing.T, in *install, hook string) { writeFile(t, hook, "#!/bin/sh\nexit 0\n", 0o755) },
			[]string{"has no aicr block", triggers.SVNHookBegin},
			func(in *install, hook string) []string { return []string{"aicr install svn-hook --repo " + in.repos} }},
		{"not executable", func(t *testing.T, in *install, hook string) { os.Chmod(hook, 0o644) },
			[]string{"hooks/post-commit", "not readable and executable"},
			func(in *install, hook string) []string { return []string{"chmod 0755 " + hook} }},
		{"aicr binary gone", func(t *testing.T, in *install, hook string) { os.Remove(filepath.Join(in.dir, "aicr-elsewhere")) },
			[]string{filepath.Join("aicr-elsewhere"), "does not exist"},
			func(in *install, hook string) []string {
				return []string{"--aicr /usr/local/bin/aicr", "aicr install svn-hook"}
			}},
		{"aicr binary not executable", func(t *testing.T, in *install, hook string) { os.Chmod(filepath.Join(in.dir, "aicr-elsewhere"), 0o644) },
			[]string{"cannot execute"},
			func(in *install, hook string) []string {
				return []string{"chmod 0755 " + filepath.Join(in.dir, "aicr-elsewhere")}
			}},
		{"config gone", func(t *testing.T, in *install, hook string) {
			moved := in.config + ".moved"
			if err := os.Rename(in.config, moved); err != nil {
				t.Fatal(err)
			}
			in.config = moved
		}, []string{"reads config", "does not exist"},
			func(in *install, hook string) []string { return []string{"aicr install svn-hook --repo " + in.repos} }},
		{"block aims at another repo name", func(t *testing.T, in *install, hook string) {
			writeFile(t, hook, strings.Replace(mustRead(t, hook), "--repo 'main'", "--repo 'other'", 1), 0o755)
		}, []string{`notifies as repo "other"`, `names this repository "main"`},
			func(in *install, hook string) []string { return []string{"aicr install svn-hook --repo " + in.repos} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := newInstall(t, "")
			hook := in.installHook(t, notifier(in))
			tc.break_(t, in, hook)
			cfg := loadConfig(t, in.config)
			c, _, _, runnable := inspectHook(cfg, "main", in.repos, ownerOf(in.repos))
			if runnable {
				t.Errorf("a broken hook is runnable: %+v", c)
			}
			expect(t, c, StatusFail, tc.detail, tc.fix(in, hook))
			if c.Fix == "" {
				t.Errorf("no fix: %+v", c)
			}
		})
	}
}

// A hook that fails, or whose notifier never reports, is a hook-run
// failure that says what to run by hand; the account's checks then still
// come from notify run directly.
func TestHookRunFaults(t *testing.T) {
	t.Run("hook exits 1", func(t *testing.T) {
		in := newInstall(t, "")
		hook := in.installHook(t, aicrExe(t))
		writeFile(t, hook, strings.Replace(mustRead(t, hook), triggers.SVNHookEnd+"\n", "exit 1\n"+triggers.SVNHookEnd+"\n", 1), 0o755)
		checks := in.diagnoseRepo(t, 20*time.Second)
		expect(t, findCheck(t, checks, CheckHookRun), StatusFail, []string{"failed with an empty environment", "exit status 1"},
			[]string{"env -i " + hook + " " + in.repos + " 0"})
		// notify run directly still checked the account's access.
		if c := findCheck(t, checks, CheckSecret); c.Status != StatusOK || !strings.Contains(c.Detail, "without the hook") {
			t.Errorf("secret check from notify run directly: %+v", c)
		}
	})
	t.Run("notifier never reports", func(t *testing.T) {
		in := newInstall(t, "")
		silent := filepath.Join(in.dir, "old-aicr")
		writeFile(t, silent, "#!/bin/sh\necho 'aicr: unknown flag' >&2\nexit 0\n", 0o755)
		in.installHook(t, silent)
		checks := in.diagnoseRepo(t, time.Second)
		expect(t, findCheck(t, checks, CheckHookRun), StatusFail,
			[]string{"did not report within 1s", "it logged: aicr: unknown flag"},
			[]string{silent + " --version", "env -i " + triggers.NotifyCheckEnv + "=/tmp/aicr-check.json " + silent + " notify svn --config " + in.config})
	})
}

// The hook runs as the repository's owner (svn's account), not as
// doctor: a secret only root reads is the hook's failure, named with the
// account and a cure that gives it read access.
func TestHookRunsAsTheRepositoryOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching to the repository's owner needs root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	in := newInstall(t, "")
	startDaemon(t, in.config, "")
	in.installHook(t, aicrExe(t))
	// svn's account owns the repository and the spool and reaches the
	// config; the secret stays root's (0600).
	for _, dir := range []string{filepath.Dir(in.dir), in.dir} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{in.repos, in.spool} {
		if err := filepath.Walk(p, func(path string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, uid, gid)
		}); err != nil {
			t.Fatal(err)
		}
	}
	checks := in.diagnoseRepo(t, 20*time.Second)
	expect(t, findCheck(t, checks, CheckHookRun), StatusOK, []string{"as nobody (uid " + nobody.Uid + ")"}, nil)
	expect(t, findCheck(t, checks, CheckConfig), StatusOK, []string{"loads as nobody"}, nil)
	expect(t, findCheck(t, checks, CheckSecret), StatusFail, []string{in.secret, "not readable by nobody"},
		[]string{"setfacl -m u:nobody:r " + in.secret})
	expect(t, findCheck(t, checks, CheckSpool), StatusOK, []string{in.spool, "writable"}, nil)
	// Without a secret the hook can only ask /healthz.
	expect(t, findCheck(t, checks, CheckHookDaemon), StatusOK, []string{"reaches the daemon"}, nil)
}
