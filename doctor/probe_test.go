package doctor

// The daemon as doctor's config sees it, against the real daemon
// (daemon.Serve) on loopback: reached, accepting the hook's signature,
// knowing every repo and running the config on disk.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func probe(t *testing.T, in *install, version string) []Check {
	t.Helper()
	checks, remote := probeDaemon(context.Background(), loadConfig(t, in.config), "", version)
	if remote != "" {
		t.Fatalf("a loopback daemon is reported on host %q", remote)
	}
	return checks
}

func TestProbeOfASoundDaemon(t *testing.T) {
	in := newInstall(t, "")
	startDaemon(t, in.config, "1.2.3")
	checks := probe(t, in, "1.2.3")
	expect(t, findCheck(t, checks, CheckDaemon), StatusOK, []string{"http://" + in.addr + " answers: aicr 1.2.3"}, nil)
	expect(t, findCheck(t, checks, CheckProbe), StatusOK, []string{"a probe signed with " + in.secret + " was answered"}, nil)
	expect(t, findCheck(t, checks, CheckDaemonRepos), StatusOK, []string{"knows main"}, nil)
	expect(t, findCheck(t, checks, CheckDaemonConfig), StatusOK, []string{"as it is on disk"}, nil)
}

func TestProbeWithoutADaemon(t *testing.T) {
	in := newInstall(t, "")
	checks := probe(t, in, "")
	if len(checks) != 1 {
		t.Errorf("checks after an unreachable daemon: %+v", checks)
	}
	expect(t, findCheck(t, checks, CheckDaemon), StatusFail, []string{"no answer from http://" + in.addr},
		[]string{"start the daemon: aicr daemon --config " + in.config})
}

// The hook's [notify] secret_file differs from the daemon's: the fix
// copies the daemon's value into the hook's file in place.
func TestProbeWithAWrongSecret(t *testing.T) {
	in := newInstall(t, "")
	startDaemon(t, in.config, "")
	hookSecret := filepath.Join(in.dir, "hook-secret")
	writeFile(t, hookSecret, "not-the-daemons\n", 0o640)
	writeFile(t, in.config, strings.Replace(mustRead(t, in.config), "[notify]\n", "[notify]\nsecret_file = \"hook-secret\"\n", 1), 0o644)
	checks := probe(t, in, "")
	expect(t, findCheck(t, checks, CheckDaemon), StatusOK, nil, nil)
	expect(t, findCheck(t, checks, CheckProbe), StatusFail, []string{"refuses what the hook signs", "bad_signature"},
		[]string{"the hook signs with " + hookSecret + " and the daemon checks with " + in.secret, "cat " + in.secret + " > " + hookSecret})
}

// Both read the same file, changed since the daemon started: only a
// restart makes the daemon read it.
func TestProbeAfterTheSecretChanged(t *testing.T) {
	in := newInstall(t, "")
	startDaemon(t, in.config, "")
	writeFile(t, in.secret, "rotated-secret\n", 0o600)
	expect(t, findCheck(t, probe(t, in, ""), CheckProbe), StatusFail, []string{"refuses what the hook signs"},
		[]string{"still runs with the one it read at start", "systemctl restart aicr"})
}

// A repo added to the config the daemon has not reloaded: its events are
// refused, and the config on disk is not the one running.
func TestProbeOfADaemonMissingARepo(t *testing.T) {
	in := newInstall(t, "")
	startDaemon(t, in.config, "")
	other := svnRepo(t, filepath.Join(in.dir, "other"))
	writeFile(t, in.config, mustRead(t, in.config)+`
[[repo]]
name = "other"
kind = "svn"
local_path = "`+other+`"
reconcile_every = "off"
`, 0o644)
	checks := probe(t, in, "")
	expect(t, findCheck(t, checks, CheckDaemonRepos), StatusFail, []string{`does not know repo "other"`, "unknown_repo"},
		[]string{"reload the daemon", "systemctl reload aicr"})
	expect(t, findCheck(t, checks, CheckDaemonConfig), StatusFail, []string{in.config + " changed since the daemon loaded it"},
		[]string{"systemctl reload aicr"})

	// --repo limits the repos compared to the one asked for.
	only, _ := probeDaemon(context.Background(), loadConfig(t, in.config), "main", "")
	expect(t, findCheck(t, only, CheckDaemonRepos), StatusOK, []string{"knows main"}, nil)
}

// Any edit to the file, a comment too, is a config the daemon does not
// run until it reloads.
func TestProbeOfAChangedConfig(t *testing.T) {
	in := newInstall(t, "")
	startDaemon(t, in.config, "")
	writeFile(t, in.config, mustRead(t, in.config)+"# edited\n", 0o644)
	checks := probe(t, in, "")
	expect(t, findCheck(t, checks, CheckDaemonRepos), StatusOK, nil, nil)
	expect(t, findCheck(t, checks, CheckDaemonConfig), StatusFail, []string{"changed since the daemon loaded it", "the change is not in effect"},
		[]string{"reload the daemon", "kill -HUP"})
}

// A daemon of another config file is a warning, not a difference.
func TestProbeOfADaemonRunningAnotherConfig(t *testing.T) {
	in := newInstall(t, "")
	startDaemon(t, in.config, "")
	copyPath := filepath.Join(t.TempDir(), "copy.toml")
	body := strings.ReplaceAll(mustRead(t, in.config), `"secret"`, `"`+in.secret+`"`)
	body = strings.ReplaceAll(body, `"spool"`, `"`+in.spool+`"`)
	body = strings.ReplaceAll(body, `"data"`, `"`+filepath.Join(in.dir, "data")+`"`)
	writeFile(t, copyPath, body, 0o644)
	checks, _ := probeDaemon(context.Background(), loadConfig(t, copyPath), "", "")
	expect(t, findCheck(t, checks, CheckDaemonConfig), StatusWarn, []string{"the daemon runs " + in.config, "not " + copyPath},
		nil)
	if c := findCheck(t, checks, CheckDaemonConfig); !strings.Contains(c.Detail, "aicr doctor --config "+in.config) {
		t.Errorf("daemon-config does not say where to compare: %+v", c)
	}
}

func TestProbeOfADaemonOfAnotherVersion(t *testing.T) {
	in := newInstall(t, "")
	startDaemon(t, in.config, "1.0.0")
	expect(t, findCheck(t, probe(t, in, "1.1.0"), CheckDaemon), StatusWarn, []string{"aicr 1.0.0", "this aicr is 1.1.0"},
		[]string{"restart the daemon", "systemctl restart aicr"})
}

// Without a secret the hook can read, only /healthz can be asked.
func TestProbeWithoutTheHooksSecret(t *testing.T) {
	in := newInstall(t, "")
	startDaemon(t, in.config, "")
	hookSecret := filepath.Join(in.dir, "hook-secret")
	writeFile(t, in.config, strings.Replace(mustRead(t, in.config), "[notify]\n", "[notify]\nsecret_file = \"hook-secret\"\n", 1), 0o644)
	os.Remove(hookSecret)
	checks := probe(t, in, "")
	expect(t, findCheck(t, checks, CheckDaemon), StatusOK, []string{"/healthz answers"}, nil)
	expect(t, findCheck(t, checks, CheckProbe), StatusWarn, []string{"cannot sign a probe", hookSecret}, []string{"see the secret check"})
}
