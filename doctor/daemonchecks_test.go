package doctor

// The daemon's side on real parts: data_dir, every *_file the config
// names, repository access with real svn (file:// and svnserve) and the
// p4 emulator, client minimum versions, the agent CLI, and the checks
// made as the daemon's own account.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/internal/p4emu"
)

func TestDataDirCheck(t *testing.T) {
	me := currentAccount()
	t.Run("0700 and the daemon's", func(t *testing.T) {
		in := newInstall(t, "")
		dataDir := filepath.Join(in.dir, "data")
		if err := os.MkdirAll(filepath.Join(dataDir, "runs"), 0o700); err != nil {
			t.Fatal(err)
		}
		expect(t, checkDataDir(loadConfig(t, in.config), me), StatusOK, []string{dataDir, "writable", me.user}, nil)
		if left, _ := os.ReadDir(dataDir); len(left) != 1 {
			t.Errorf("the probe left files in data_dir: %v", left)
		}
	})
	t.Run("not there yet", func(t *testing.T) {
		in := newInstall(t, "")
		dataDir := filepath.Join(in.dir, "data")
		os.RemoveAll(dataDir)
		expect(t, checkDataDir(loadConfig(t, in.config), me), StatusOK, []string{"does not exist yet", "can create it"}, nil)
		if _, err := os.Stat(dataDir); err == nil {
			t.Error("the check left data_dir created")
		}
	})
	t.Run("under a file", func(t *testing.T) {
		in := newInstall(t, "")
		blocker := filepath.Join(in.dir, "blocker")
		writeFile(t, blocker, "", 0o644)
		writeFile(t, in.config, strings.Replace(mustRead(t, in.config), `data_dir = "data"`, `data_dir = "blocker/data"`, 1), 0o644)
		dataDir := filepath.Join(blocker, "data")
		expect(t, checkDataDir(loadConfig(t, in.config), me), StatusFail, []string{dataDir, "a part of its path is a file"},
			[]string{"point [daemon] data_dir at a directory of its own"})
	})
	t.Run("cannot be created", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root creates directories anywhere")
		}
		in := newInstall(t, "")
		dataDir := filepath.Join(in.dir, "data")
		os.RemoveAll(dataDir)
		if err := os.Chmod(in.dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(in.dir, 0o700) })
		expect(t, checkDataDir(loadConfig(t, in.config), me), StatusFail, []string{dataDir, "cannot create it"},
			[]string{"install -d -o " + me.user + " -g " + me.group + " -m 0750 " + dataDir})
	})
	t.Run("a file", func(t *testing.T) {
		in := newInstall(t, "")
		dataDir := filepath.Join(in.dir, "data")
		os.RemoveAll(dataDir)
		writeFile(t, dataDir, "", 0o600)
		expect(t, checkDataDir(loadConfig(t, in.config), me), StatusFail, []string{dataDir, "not a directory"}, []string{"[daemon] data_dir", "/var/lib/aicr"})
	})
	t.Run("another account's", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("chown to another account needs root")
		}
		nobody := lookupNobody(t)
		in := newInstall(t, "")
		dataDir := filepath.Join(in.dir, "data")
		if err := os.Chown(dataDir, int(nobody.uid), int(nobody.gid)); err != nil {
			t.Fatal(err)
		}
		expect(t, checkDataDir(loadConfig(t, in.config), me), StatusFail, []string{dataDir, "belongs to nobody", "refuses to start as " + me.who()},
			[]string{"chown " + me.user + " " + dataDir})
	})
}

func lookupNobody(t *testing.T) account {
	t.Helper()
	a, err := lookupUser("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	return a
}

// Every *_file the daemon reads: there, empty, missing, a symlink, a
// directory.
func TestDaemonFileChecks(t *testing.T) {
	in := newInstall(t, "")
	me := currentAccount()
	cfgWith := func(t *testing.T, secret string) Check {
		t.Helper()
		writeFile(t, in.config, strings.Replace(mustRead(t, in.config), `secret_file = "`+filepath.Base(in.secret)+`"`, `secret_file = "`+secret+`"`, 1), 0o644)
		in.secret = filepath.Join(in.dir, secret)
		return findCheck(t, checkDaemonFiles(loadConfig(t, in.config), "", me), CheckFile)
	}
	expect(t, cfgWith(t, "secret"), StatusOK, []string{"[daemon] secret_file " + in.secret + " is readable by " + me.who()}, nil)

	writeFile(t, filepath.Join(in.dir, "empty"), "", 0o600)
	expect(t, cfgWith(t, "empty"), StatusFail, []string{"[daemon] secret_file", "is empty"}, []string{"write the value into " + filepath.Join(in.dir, "empty")})

	missing := filepath.Join(in.dir, "missing")
	expect(t, cfgWith(t, "missing"), StatusFail, []string{missing, "does not exist"},
		[]string{"install -m 0640 -g " + me.group + " VALUE_FILE " + missing})

	// A symlink is read through, as the daemon reads it.
	if err := os.Symlink(filepath.Join(in.dir, "secret"), filepath.Join(in.dir, "linked")); err != nil {
		t.Fatal(err)
	}
	expect(t, cfgWith(t, "linked"), StatusOK, []string{filepath.Join(in.dir, "linked"), "readable"}, nil)
	if err := os.Symlink(filepath.Join(in.dir, "nowhere"), filepath.Join(in.dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	expect(t, cfgWith(t, "dangling"), StatusFail, []string{filepath.Join(in.dir, "dangling"), "does not exist"}, []string{"install -m 0640"})

	if err := os.Mkdir(filepath.Join(in.dir, "adir"), 0o700); err != nil {
		t.Fatal(err)
	}
	expect(t, cfgWith(t, "adir"), StatusFail, []string{filepath.Join(in.dir, "adir")}, []string{"not a file", filepath.Join(in.dir, "adir")})
}

// As root, doctor checks the daemon's side as the daemon's account in a
// copy of itself switched to it: the kernel says what that account reads.
func TestDaemonSideAsTheDaemonsAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching to the daemon's account needs root")
	}
	nobody := lookupNobody(t)
	in := newInstall(t, "")
	for _, dir := range []string{filepath.Dir(in.dir), in.dir} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dataDir := filepath.Join(in.dir, "data")
	if err := os.Chown(dataDir, int(nobody.uid), int(nobody.gid)); err != nil {
		t.Fatal(err)
	}
	opts := Options{Config: loadConfig(t, in.config), Exe: aicrExe(t)}
	checks := checkDaemonSide(context.Background(), opts)
	expect(t, findCheck(t, checks, CheckDaemonAccount), StatusOK, []string{"checked as " + nobody.who(), "it owns data_dir " + dataDir, "service's environment"}, nil)
	expect(t, findCheck(t, checks, CheckDataDir), StatusOK, []string{dataDir, "nobody's and writable"}, nil)
	expect(t, findCheck(t, checks, CheckFile), StatusFail, []string{in.secret, "not readable by " + nobody.who()},
		[]string{"setfacl -m u:nobody:r " + in.secret})
	// The repository (root's, 0755) is readable by anyone.
	expect(t, findCheck(t, checks, CheckRepoAccess), StatusOK, []string{"head revision 0"}, nil)

	// A config the account cannot read at all is the finding itself.
	if err := os.Chmod(in.config, 0o600); err != nil {
		t.Fatal(err)
	}
	checks = checkDaemonSide(context.Background(), opts)
	expect(t, findCheck(t, checks, CheckConfig), StatusFail, []string{"the daemon's account nobody", "cannot load " + in.config},
		[]string{"setfacl -m u:nobody:r " + in.config})

	opts.AsUser = "no-such-user-aicr"
	expect(t, findCheck(t, checkDaemonSide(context.Background(), opts), CheckDaemonAccount), StatusFail,
		[]string{"--as-user no-such-user-aicr"}, []string{"User= in aicr.service", "--as-user aicr"})
}

// startSvnserve serves a repository on loopback with password auth only
// (user aicr, password right-password) and returns its URL.
func startSvnserve(t *testing.T) string {
	t.Helper()
	requireTool(t, "svnserve")
	root := t.TempDir()
	repo := svnRepo(t, filepath.Join(root, "served"))
	writeFile(t, filepath.Join(repo, "conf", "svnserve.conf"), "[general]\nanon-access = none\nauth-access = read\npassword-db = passwd\nrealm = aicr-doctor\n", 0o644)
	writeFile(t, filepath.Join(repo, "conf", "passwd"), "[users]\naicr = right-password\n", 0o644)
	addr := freeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("svnserve", "-d", "--foreground", "--listen-host", host, "--listen-port", port, "-r", root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; i < 200; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "svn://" + addr + "/served"
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("svnserve did not listen")
	return ""
}

// repoAccess is the repo-access check of the [[repo]] "r" body describes.
func repoAccess(t *testing.T, body string) Check {
	t.Helper()
	in := newInstall(t, "\n[[repo]]\nname = \"r\"\nkind = \"svn\"\nreconcile_every = \"off\"\n"+body)
	writeFile(t, filepath.Join(in.dir, "svn-password"), "wrong-password\n", 0o600)
	cfg := loadConfig(t, in.config)
	r, ok := cfg.Repo("r")
	if !ok {
		t.Fatal("no repo r")
	}
	return checkRepoAccess(context.Background(), *r)
}

func TestSvnRepoAccess(t *testing.T) {
	requireTool(t, "svn")
	t.Run("file://", func(t *testing.T) {
		repos := svnRepo(t, filepath.Join(t.TempDir(), "repos"))
		expect(t, repoAccess(t, fmt.Sprintf("url = \"file://%s\"\n", repos)), StatusOK, []string{"the repository answers: head revision 0"}, nil)
	})
	t.Run("no such repository", func(t *testing.T) {
		gone := filepath.Join(t.TempDir(), "gone")
		expect(t, repoAccess(t, fmt.Sprintf("url = \"file://%s\"\n", gone)), StatusFail, nil,
			[]string{"file://" + gone + " does not exist", "fix url", "[[repo]] r"})
	})
	url := startSvnserve(t)
	t.Run("svnserve, right password", func(t *testing.T) {
		in := t.TempDir()
		writeFile(t, filepath.Join(in, "pw"), "right-password\n", 0o600)
		expect(t, repoAccess(t, fmt.Sprintf("url = %q\nusername = \"aicr\"\npassword_file = %q\n", url, filepath.Join(in, "pw"))), StatusOK,
			[]string{"head revision 0", "as user aicr"}, nil)
	})
	t.Run("svnserve, wrong password", func(t *testing.T) {
		c := repoAccess(t, fmt.Sprintf("url = %q\nusername = \"aicr\"\npassword_file = \"svn-password\"\n", url))
		expect(t, c, StatusFail, []string{"E170001"}, []string{"refuses user aicr", "svn-password", "svn info --non-interactive --username aicr --password-from-stdin " + url})
		if strings.Contains(c.Detail+c.Fix, "wrong-password") {
			t.Errorf("the check shows the password: %+v", c)
		}
	})
	t.Run("svnserve, no credentials", func(t *testing.T) {
		expect(t, repoAccess(t, fmt.Sprintf("url = %q\n", url)), StatusFail, nil,
			[]string{"set username and password_file in [[repo]] r"})
	})
	t.Run("svnserve not running", func(t *testing.T) {
		down := "svn://" + freeAddr(t) + "/served"
		expect(t, repoAccess(t, fmt.Sprintf("url = %q\n", down)), StatusFail, nil,
			[]string{"the server at " + down + " does not answer", "firewall"})
	})
}

// p4 through the emulator, started by the adapter under the name p4.
func TestP4RepoAccess(t *testing.T) {
	dir := t.TempDir()
	// The test binary is the emulator when it runs under the name p4.
	emu := filepath.Join(dir, "emu", "p4")
	if err := os.MkdirAll(filepath.Dir(emu), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(aicrExe(t), emu); err != nil {
		t.Fatal(err)
	}
	d := p4emu.Fixture()
	depot := filepath.Join(dir, "depot.json")
	if err := d.Save(depot); err != nil {
		t.Fatal(err)
	}
	p4Bin, err := p4emu.WriteWrapper(filepath.Join(dir, "bin"), emu, depot, "")
	if err != nil {
		t.Fatal(err)
	}
	tickets := filepath.Join(dir, "p4tickets")
	t.Setenv(p4emu.EnvDepot, depot)
	setDepot := func(ticket string, expired bool, inFile string) {
		d.Ticket, d.TicketExpired = ticket, expired
		if err := d.Save(depot); err != nil {
			t.Fatal(err)
		}
		writeFile(t, tickets, "p4.example.com:1666="+p4emu.FixtureUser+":"+inFile+"\n", 0o600)
	}
	check := func(t *testing.T, depotPaths string) Check {
		t.Helper()
		in := newInstall(t, fmt.Sprintf(`
[[repo]]
name = "depot"
kind = "p4"
port = "p4.example.com:1666"
user = %q
p4_path = %q
ticket_file = %q
depot_paths = [%s]
`, p4emu.FixtureUser, p4Bin, tickets, depotPaths))
		cfg := loadConfig(t, in.config)
		r, _ := cfg.Repo("depot")
		return checkRepoAccess(context.Background(), *r)
	}
	me := currentAccount()
	setDepot("T0KEN", false, "T0KEN")
	expect(t, check(t, `"//depot/main/..."`), StatusOK, []string{"p4 login -s", "every depot path shows files"}, nil)
	expect(t, check(t, `"//depot/main/...", "//depot/typo/..."`), StatusFail, []string{"sees no file in //depot/typo/..."},
		[]string{"fix depot_paths in [[repo]] depot", "p4 protect"})
	setDepot("T0KEN", true, "T0KEN")
	expect(t, check(t, `"//depot/main/..."`), StatusFail, []string{"Your session has expired"},
		[]string{"runuser -u " + me.user + " -- env P4TICKETS=" + tickets + " p4 -p p4.example.com:1666 -u " + p4emu.FixtureUser + " login -a"})
	setDepot("T0KEN", false, "OTHER")
	expect(t, check(t, `"//depot/main/..."`), StatusFail, []string{"P4PASSWD"}, []string{"login -a", "password_file"})
}

// fakeClient writes a script that prints version when asked.
func fakeClient(t *testing.T, dir, name, version string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	writeFile(t, p, "#!/bin/sh\necho '"+version+"'\n", 0o755)
	return p
}

// An svn client older than the minimum, found on PATH or at svn_path.
func TestClientMinimumVersions(t *testing.T) {
	bin := t.TempDir()
	fakeClient(t, bin, "svn", "svn, version 1.9.7 (r1800392)")
	fakeClient(t, bin, "svnlook", "svnlook, version 1.9.7 (r1800392)")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	in := newInstall(t, "")
	checks := checkTools(context.Background(), loadConfig(t, in.config), "", "")
	expect(t, findCheck(t, checks, CheckSvn), StatusFail, []string{"svn 1.9.7 at " + filepath.Join(bin, "svn") + " is older than 1.10.0"},
		[]string{"install svn 1.10.0 or newer", "svn_path in the [[repo]]"})
	expect(t, findCheck(t, checks, CheckSvnlook), StatusOK, []string{"svnlook, version 1.9.7"}, nil)

	newer := fakeClient(t, t.TempDir(), "svn-1.14", "svn, version 1.14.2 (r1899510)")
	in.writeConfig(t, fmt.Sprintf("svn_path = %q\n", newer))
	expect(t, findCheck(t, checkTools(context.Background(), loadConfig(t, in.config), "", ""), CheckSvn), StatusOK, []string{"svn 1.14.2", "minimum 1.10.0"}, nil)

	in.writeConfig(t, "svn_path = \"/nonexistent/svn\"\n")
	expect(t, findCheck(t, checkTools(context.Background(), loadConfig(t, in.config), "", ""), CheckSvn), StatusFail, []string{"/nonexistent/svn"},
		[]string{"install Subversion", "svn_path"})
	// On another host than the daemon's, a missing client is not this host's fault.
	expect(t, findCheck(t, checkTools(context.Background(), loadConfig(t, in.config), "", "daemon.example.com"), CheckSvn), StatusWarn,
		[]string{"the daemon runs on daemon.example.com"}, nil)
}

func TestPodmanMinimumVersion(t *testing.T) {
	old := fakeClient(t, t.TempDir(), "podman", "podman version 3.4.4")
	expect(t, checkPodman(context.Background(), old, ""), StatusFail, []string{"podman 3.4.4", "older than 4.0.0"}, []string{"[sandbox.podman] binary"})
	cur := fakeClient(t, t.TempDir(), "podman", "podman version 4.3.1")
	expect(t, checkPodman(context.Background(), cur, ""), StatusOK, []string{"podman 4.3.1"}, nil)
	expect(t, checkPodman(context.Background(), "/nonexistent/podman", ""), StatusFail, []string{"every review would fail"}, []string{"install Podman"})
}

// The agent CLI: installed at a proven version, and runnable natively
// ([sandbox] kind = "none").
func TestAgentCLIChecks(t *testing.T) {
	installDir := t.TempDir()
	in := newInstall(t, "")
	writeFile(t, in.config, strings.Replace(mustRead(t, in.config), "[notify]\n", fmt.Sprintf(`[agent]
kind = %q
[agent.llm]
api = "anthropic"
model = "claude-test"
[agent.cli]
install_dir = %q
[sandbox]
kind = "none"

[notify]
`, cli.KindClaudeCode, installDir), 1), 0o644)
	cfg := loadConfig(t, in.config)
	expect(t, checkNamedAgent(t, cfg, CheckAgentCLI), StatusFail, []string{"is not installed at"},
		[]string{"aicr agent install " + cli.KindClaudeCode + " --config " + in.config})

	a, _ := cli.Lookup(cli.KindClaudeCode)
	spec := a.Spec()
	prefix := cli.Prefix(installDir, spec.Kind, spec.Version)
	if err := os.MkdirAll(filepath.Join(prefix, filepath.Dir(spec.Bin)), 0o755); err != nil {
		t.Fatal(err)
	}
	marker, _ := json.Marshal(cli.Marker{Kind: spec.Kind, Package: spec.Package, Version: spec.Version})
	writeFile(t, filepath.Join(prefix, cli.MarkerName), string(marker), 0o644)
	bin := filepath.Join(prefix, filepath.FromSlash(spec.Bin))
	writeFile(t, bin, "#!/bin/sh\necho '"+spec.Version+" (Claude Code)'\n", 0o755)
	expect(t, checkNamedAgent(t, cfg, CheckAgentCLI), StatusOK, []string{spec.Package + " " + spec.Version, prefix}, nil)
	expect(t, checkNamedAgent(t, cfg, CheckAgentCLIRuns), StatusOK, []string{"runs natively", spec.Version + " (Claude Code)"}, nil)

	writeFile(t, bin, "#!/bin/sh\necho 'node: not found' >&2\nexit 127\n", 0o755)
	expect(t, checkNamedAgent(t, cfg, CheckAgentCLIRuns), StatusFail, []string{"--version", "node: not found"},
		[]string{"install Node.js 20 or later", "aicr agent install " + spec.Kind + " --force"})
}

func checkNamedAgent(t *testing.T, cfg *config.Config, name string) Check {
	t.Helper()
	return findCheck(t, checkAgentCLI(context.Background(), cfg, ""), name)
}
