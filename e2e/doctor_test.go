package e2e

// aicr doctor on real parts: svnadmin repositories, the hook written by
// `aicr install svn-hook` (triggers.InstallSVNHook) running the real aicr
// binary, a real daemon. Permission failures need a hook account other
// than root, so those cases hand the repository to nobody (uid 65534),
// as svn would run it as www-data.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/doctor"
	"github.com/aicr-dev/aicr/triggers"
)

// runDoctor runs the real binary and returns its report and exit code.
func runDoctor(t *testing.T, e *env, args ...string) (doctor.Report, string, int) {
	t.Helper()
	cmd := exec.Command(aicrBin, append([]string{"doctor", "--config", e.config, "--format", "json"}, args...)...)
	cmd.Dir = e.dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("aicr doctor: %v", err)
	}
	var rep doctor.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("aicr doctor --format json: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	return rep, string(out), code
}

func failedChecks(rep doctor.Report) []string {
	var out []string
	for _, c := range rep.Checks {
		if c.Failed() {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out
}

func findCheck(t *testing.T, rep doctor.Report, name string) doctor.Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", name, rep.Checks)
	return doctor.Check{}
}

// giveToNobody makes nobody the repository's owner, so doctor (root) runs
// the hook as nobody, and opens the paths nobody must reach on the way:
// the test directories, the binary's directory and the config.
func giveToNobody(t *testing.T, e *env) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the hook as another account")
	}
	for _, p := range []string{e.repos, e.spool} {
		if err := filepath.Walk(p, func(path string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, 65534, 65534)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Dir(e.dir), e.dir, filepath.Dir(aicrBin)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(e.config, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDoctorGoodInstallPasses(t *testing.T) {
	e := newEnv(t, 1)
	e.startDaemon()
	// A hook with the admin's own command before the aicr block: doctor
	// must not fire it for its made-up revision.
	hook := filepath.Join(e.repos, "hooks", "post-commit")
	marker := filepath.Join(e.dir, "mailer-ran")
	old, err := os.ReadFile(hook)
	if err != nil {
		t.Fatal(err)
	}
	withMailer := strings.Replace(string(old), "#!/bin/sh\n", "#!/bin/sh\ntouch "+marker+"\n", 1)
	if err := os.WriteFile(hook, []byte(withMailer), 0o755); err != nil {
		t.Fatal(err)
	}

	// The hook's log holds a real commit's line; the dry run must leave
	// it exactly so.
	logBefore := "aicr notify: a line a real commit left\n"
	if err := os.MkdirAll(e.spool, 0o770); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.spool, "notify.log"), []byte(logBefore), 0o660); err != nil {
		t.Fatal(err)
	}
	rep, out, code := runDoctor(t, e)
	if code != 0 || !rep.OK {
		t.Fatalf("exit %d, want 0; report:\n%s", code, out)
	}
	var names []string
	for _, c := range rep.Checks {
		names = append(names, c.Name)
	}
	for _, want := range []string{doctor.CheckHook, doctor.CheckHookRun, doctor.CheckConfig, doctor.CheckRepo, doctor.CheckSecret,
		doctor.CheckSpool, doctor.CheckLog, doctor.CheckHookDaemon, doctor.CheckDaemon, doctor.CheckSvn, doctor.CheckSvnlook} {
		if !slices.Contains(names, want) {
			t.Errorf("no %q check; got %v", want, names)
		}
	}
	if run := findCheck(t, rep, doctor.CheckHookRun); !strings.Contains(run.Detail, "aicr block of") {
		t.Errorf("hook-run with other commands in the hook should run only the aicr block: %s", run.Detail)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("doctor ran the admin's own post-commit command")
	}

	// The dry run sent nothing, spooled nothing and wrote nothing to
	// the hook's log.
	s := e.store()
	if runs, err := s.ListRuns(context.Background(), audit.ListOptions{Limit: 10}); err != nil || len(runs) != 0 {
		t.Errorf("runs after doctor = %v (err %v), want none", runs, err)
	}
	if total, _, err := s.CountEvents(context.Background(), "main", "0"); err != nil || total != 0 {
		t.Errorf("events after doctor = %d (err %v), want 0", total, err)
	}
	if names, err := (triggers.Spool{Dir: e.spool}).List(); err != nil || len(names) != 0 {
		t.Errorf("spool after doctor = %v (err %v), want empty", names, err)
	}
	if log, _ := os.ReadFile(filepath.Join(e.spool, "notify.log")); string(log) != logBefore {
		t.Errorf("the dry run wrote to notify.log:\nbefore: %q\nafter:  %q", logBefore, log)
	}

	text := e.aicr("doctor", "--config", e.config)
	if strings.Contains(text, "✗") || !strings.Contains(text, "✓ hook-run:") || !strings.Contains(text, "all checks passed") {
		t.Errorf("text report:\n%s", text)
	}
}

func TestDoctorBrokenInstallsFail(t *testing.T) {
	cases := []struct {
		name    string
		daemon  bool
		breakIt func(t *testing.T, e *env)
		want    []string
		detail  string // in the failed check's detail
		fix     string // in its fix
	}{
		{
			name: "hook missing", daemon: true,
			breakIt: func(t *testing.T, e *env) { os.Remove(filepath.Join(e.repos, "hooks", "post-commit")) },
			want:    []string{doctor.CheckHook}, detail: "does not exist", fix: "aicr install svn-hook --repo",
		},
		{
			name: "daemon down", daemon: false,
			breakIt: func(t *testing.T, e *env) {},
			want:    []string{doctor.CheckDaemon, doctor.CheckHookDaemon}, detail: "connection refused", fix: "start the daemon",
		},
		{
			name: "secret file missing", daemon: true,
			breakIt: func(t *testing.T, e *env) { os.Remove(filepath.Join(e.dir, "secret")) },
			// The daemon reads the same file: both sides say so.
			want: []string{doctor.CheckFile, doctor.CheckSecret}, detail: "does not exist", fix: "install -m 0640",
		},
		{
			// The secret stays root's 0600 file; the hook runs as nobody.
			name: "secret unreadable by the hook's account", daemon: true,
			breakIt: giveToNobody,
			want:    []string{doctor.CheckSecret}, detail: "not readable by nobody (uid 65534)", fix: "setfacl -m u:nobody:r",
		},
		{
			name: "spool dir not writable", daemon: true,
			breakIt: func(t *testing.T, e *env) {
				giveToNobody(t, e)
				if err := os.Chmod(filepath.Join(e.dir, "secret"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(e.spool, 0o500); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{doctor.CheckSpool}, detail: "not writable by nobody (uid 65534)", fix: "chown -R nobody",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1)
			if tc.daemon {
				e.startDaemon()
			}
			tc.breakIt(t, e)
			rep, out, code := runDoctor(t, e)
			if code != 1 || rep.OK {
				t.Fatalf("exit %d, want 1; report:\n%s", code, out)
			}
			if got := failedChecks(rep); !slices.Equal(got, tc.want) {
				t.Fatalf("failed checks %v, want %v; report:\n%s", got, tc.want, out)
			}
			c := findCheck(t, rep, tc.want[0])
			if !strings.Contains(c.Detail, tc.detail) || !strings.Contains(c.Fix, tc.fix) {
				t.Errorf("%s check: detail %q (want %q), fix %q (want %q)", c.Name, c.Detail, tc.detail, c.Fix, tc.fix)
			}
		})
	}
}

func TestDoctorUnknownRepoIsUsageError(t *testing.T) {
	e := newEnv(t, 1)
	cmd := exec.Command(aicrBin, "doctor", "--config", e.config, "--repo", "nope")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "no such [[repo]]") {
		t.Fatalf("err %v, output %s; want exit 2 naming the repo", err, out)
	}
}
