package doctor

// notify's own checks (secret, spool, log, the daemon as the hook meets
// it), run in process as the hook's dry run runs them.

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func notifyChecks(t *testing.T, in *install, stderr io.Writer) []Check {
	t.Helper()
	return CheckNotify(context.Background(), NotifyCheckOptions{ConfigPath: in.config, RepoName: "main", ReposPath: in.repos, Stderr: stderr})
}

func TestNotifySecretCheck(t *testing.T) {
	t.Run("readable file", func(t *testing.T) {
		in := newInstall(t, "")
		expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckSecret), StatusOK, []string{in.secret, "readable"}, nil)
	})
	t.Run("missing file", func(t *testing.T) {
		in := newInstall(t, "")
		os.Remove(in.secret)
		me := currentAccount()
		expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckSecret), StatusFail,
			[]string{in.secret, "does not exist", "spooled, never delivered"},
			[]string{"install -m 0640 -g " + me.group + " SECRET " + in.secret})
	})
	t.Run("no secret at all", func(t *testing.T) {
		in := newInstall(t, "")
		writeFile(t, in.config, strings.Replace(mustRead(t, in.config), "secret_file = \"secret\"\n", "", 1), 0o644)
		expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckSecret), StatusFail,
			[]string{"no signing secret configured"}, []string{"[notify] secret_file", "[daemon] secret_file"})
	})
	t.Run("environment variable", func(t *testing.T) {
		in := newInstall(t, "")
		writeFile(t, in.config, strings.Replace(mustRead(t, in.config), "[notify]\n", "[notify]\nsecret_env = \"AICR_DOCTOR_NOTIFY_SECRET\"\n", 1), 0o644)
		t.Setenv("AICR_DOCTOR_NOTIFY_SECRET", "")
		expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckSecret), StatusFail,
			[]string{"$AICR_DOCTOR_NOTIFY_SECRET", "empty environment"}, []string{"set [notify] secret_file", currentAccount().user})
		t.Setenv("AICR_DOCTOR_NOTIFY_SECRET", "x")
		expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckSecret), StatusOK, []string{"secret from $AICR_DOCTOR_NOTIFY_SECRET"}, nil)
	})
}

func TestNotifySpoolCheck(t *testing.T) {
	in := newInstall(t, "")
	expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckSpool), StatusOK, []string{in.spool, "created and deleted a probe file"}, nil)
	if left, _ := os.ReadDir(in.spool); len(left) != 0 {
		t.Errorf("the spool probe left %v", left)
	}
	// A spool dir that cannot hold files: a file in its place.
	os.RemoveAll(in.spool)
	writeFile(t, in.spool, "", 0o644)
	me := currentAccount()
	expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckSpool), StatusFail,
		[]string{in.spool, "not writable by " + me.who(), "would be lost"},
		[]string{"chown -R " + me.user + ":" + me.group + " " + in.spool, "chmod 0770 " + in.spool})
}

func TestNotifyLogCheck(t *testing.T) {
	in := newInstall(t, "")
	logFile := filepath.Join(in.spool, "notify.log")
	me := currentAccount()

	// Run from the hook: stderr is the log itself, or /dev/null when the
	// hook could not append to it.
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o660)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	expect(t, findCheck(t, notifyChecks(t, in, f), CheckLog), StatusOK, []string{"appended to " + logFile}, nil)
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	expect(t, findCheck(t, notifyChecks(t, in, null), CheckLog), StatusFail,
		[]string{"could not append to its log", logFile, os.DevNull},
		[]string{"chown " + me.user + ":" + me.group + " " + logFile})

	// Run directly: the log is opened for appending, never created.
	os.Remove(logFile)
	expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckLog), StatusOK, []string{"does not exist yet"}, nil)
	if _, err := os.Stat(logFile); err == nil {
		t.Error("the log check created notify.log")
	}
	if err := os.Mkdir(logFile, 0o770); err != nil {
		t.Fatal(err)
	}
	expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckLog), StatusFail,
		[]string{logFile, "not appendable", "hook errors would be lost"},
		[]string{"chown " + me.user + ":" + me.group + " " + logFile})
}

// checkHookRepo finds the hook's repository the way notify does.
func TestNotifyRepoCheck(t *testing.T) {
	in := newInstall(t, `
[[repo]]
name = "depot"
kind = "p4"
port = "ssl:p4:1666"
user = "aicr"
depot_paths = ["//depot/main/..."]
`)
	check := func(name, repos string) Check {
		return findCheck(t, CheckNotify(context.Background(), NotifyCheckOptions{ConfigPath: in.config, RepoName: name, ReposPath: repos, Stderr: io.Discard}), CheckRepo)
	}
	expect(t, check("main", in.repos), StatusOK, []string{`[[repo]] "main"`}, nil)
	expect(t, check("", in.repos), StatusOK, []string{"has local_path " + in.repos}, nil)
	expect(t, check("", "/srv/svn/elsewhere"), StatusFail, []string{`no [[repo]] has local_path = "/srv/svn/elsewhere"`}, []string{"set local_path", "--name"})
	expect(t, check("gone", in.repos), StatusFail, []string{`names repo "gone"`, in.config},
		[]string{"add the [[repo]]", "aicr install svn-hook --repo " + in.repos + " --config " + in.config})
	expect(t, check("depot", in.repos), StatusFail, []string{`repo "depot" is kind p4`}, []string{"--name of the svn [[repo]]"})
}

// The daemon as the hook meets it: reached, accepting the hook's
// signature, knowing the hook's repo.
func TestNotifyHookDaemonCheck(t *testing.T) {
	in := newInstall(t, "")
	expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckHookDaemon), StatusFail,
		[]string{"cannot reach the daemon at http://" + in.addr, "events would be spooled"},
		[]string{"start the daemon", "[notify] url"})

	startDaemon(t, in.config, "")
	expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckHookDaemon), StatusOK, []string{`accepts the hook's signature and knows repo "main"`}, nil)

	// The hook signs with its own file, which holds another value.
	hookSecret := filepath.Join(in.dir, "hook-secret")
	writeFile(t, hookSecret, "not-the-daemons\n", 0o640)
	writeFile(t, in.config, strings.Replace(mustRead(t, in.config), "[notify]\n", "[notify]\nsecret_file = \"hook-secret\"\n", 1), 0o644)
	expect(t, findCheck(t, notifyChecks(t, in, io.Discard), CheckHookDaemon), StatusFail,
		[]string{"refuses what the hook signs with " + hookSecret, "bad_signature", "never reviewed"},
		[]string{"make " + hookSecret + " hold the daemon's secret"})

	// A repo the running daemon was not started with.
	writeFile(t, in.config, strings.Replace(mustRead(t, in.config), "secret_file = \"hook-secret\"\n", "", 1)+`
[[repo]]
name = "new"
kind = "svn"
url = "file:///srv/svn/new"
reconcile_every = "off"
`, 0o644)
	c := findCheck(t, CheckNotify(context.Background(), NotifyCheckOptions{ConfigPath: in.config, RepoName: "new", ReposPath: "/srv/svn/new", Stderr: io.Discard}), CheckHookDaemon)
	expect(t, c, StatusFail, []string{`does not know repo "new"`, "unknown_repo"}, []string{"reload the daemon", "systemctl reload aicr"})
}
