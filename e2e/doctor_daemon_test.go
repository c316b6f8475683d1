package e2e

// aicr doctor's daemon side, checked as the daemon's account on real
// parts: svnserve refusing a wrong password, the p4 emulator with an
// expired or wrong ticket, a data_dir and a secret the account cannot use.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/doctor"
	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/internal/svntest"
)

// repoCheck is the named check of one repo.
func repoCheck(t *testing.T, rep doctor.Report, name, repo string) doctor.Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name && c.Repo == repo {
			return c
		}
	}
	t.Fatalf("no %q check of repo %q in %+v", name, repo, rep.Checks)
	return doctor.Check{}
}

// startSvnserve serves root on a loopback port with password auth only
// (user aicr, password right-password) and returns the port.
func startSvnserve(t *testing.T, root string) int {
	t.Helper()
	repo := filepath.Join(root, "served")
	svntest.Run(t, root, "svnadmin", "create", repo)
	conf := "[general]\nanon-access = none\nauth-access = read\npassword-db = passwd\nrealm = aicr-doctor\n"
	if err := os.WriteFile(filepath.Join(repo, "conf", "svnserve.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "conf", "passwd"), []byte("[users]\naicr = right-password\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("svnserve", "-d", "--foreground", "--listen-host", "127.0.0.1", "--listen-port", fmt.Sprint(port), "-r", root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return port
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("svnserve did not listen")
	return 0
}

// The wrong svn password is caught by svn info at HEAD with the repo's
// credentials, and the right one passes.
func TestDoctorCatchesWrongSvnPassword(t *testing.T) {
	e := newEnv(t, 1)
	port := startSvnserve(t, filepath.Join(e.dir, "repos"))
	pw := filepath.Join(e.dir, "svn-password")
	if err := os.WriteFile(pw, []byte("wrong-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	remote := fmt.Sprintf("\n[[repo]]\nname = \"served\"\nkind = \"svn\"\nurl = \"svn://127.0.0.1:%d/served\"\nusername = \"aicr\"\npassword_file = \"svn-password\"\nchannels = [\"reports\"]\nreconcile_every = \"off\"\n", port)
	if err := os.WriteFile(e.config, append(b, remote...), 0o600); err != nil {
		t.Fatal(err)
	}
	e.startDaemon()

	rep, out, code := runDoctor(t, e)
	if code != 1 || rep.OK {
		t.Fatalf("exit %d, want 1; report:\n%s", code, out)
	}
	if got := failedChecks(rep); len(got) != 1 || got[0] != doctor.CheckRepoAccess {
		t.Fatalf("failed checks %v, want only repo-access; report:\n%s", got, out)
	}
	c := repoCheck(t, rep, doctor.CheckRepoAccess, "served")
	if !strings.Contains(c.Detail, "E170001") || !strings.Contains(c.Fix, "refuses user aicr") || !strings.Contains(c.Fix, pw) {
		t.Errorf("repo-access: %+v", c)
	}
	if strings.Contains(out, "wrong-password") {
		t.Error("the report shows the password")
	}

	if err := os.WriteFile(pw, []byte("right-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, out, _ = runDoctor(t, e)
	if c := repoCheck(t, rep, doctor.CheckRepoAccess, "served"); c.Status != doctor.StatusOK || !strings.Contains(c.Detail, "as user aicr") {
		t.Errorf("with the right password: %+v\n%s", c, out)
	}
}

// p4 login -s, as the daemon runs p4, tells an expired ticket and a wrong
// one from a good one.
func TestDoctorCatchesP4Tickets(t *testing.T) {
	e := newP4Env(t)
	depot := os.Getenv(p4emu.EnvDepot)
	tickets := filepath.Join(e.dir, "p4tickets")
	b, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	withTickets := strings.Replace(string(b), `user = "aicr"`, `user = "aicr"`+"\nticket_file = \"p4tickets\"", 1)
	if err := os.WriteFile(e.config, []byte(withTickets), 0o600); err != nil {
		t.Fatal(err)
	}
	setDepot := func(ticket string, expired bool, inFile string) {
		d, err := p4emu.Load(depot)
		if err != nil {
			t.Fatal(err)
		}
		d.Ticket, d.TicketExpired = ticket, expired
		if err := d.Save(depot); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(tickets, []byte("p4.example.com:1666=aicr:"+inFile+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name           string
		ticket, inFile string
		expired        bool
		status         doctor.Status
		detail, fix    string
	}{
		{"good ticket", "T0KEN", "T0KEN", false, doctor.StatusOK, "ticket expires in", ""},
		{"expired ticket", "T0KEN", "T0KEN", true, doctor.StatusFail, "Your session has expired", "P4TICKETS=" + tickets},
		{"wrong ticket", "T0KEN", "OTHER", false, doctor.StatusFail, "Perforce password (P4PASSWD) invalid or unset.", "login -a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setDepot(tc.ticket, tc.expired, tc.inFile)
			rep, out, _ := runDoctor(t, e)
			c := repoCheck(t, rep, doctor.CheckRepoAccess, "depot")
			if c.Status != tc.status || !strings.Contains(c.Detail, tc.detail) || !strings.Contains(c.Fix, tc.fix) {
				t.Errorf("repo-access: %+v; want %s with %q and fix %q\n%s", c, tc.status, tc.detail, tc.fix, out)
			}
		})
	}
}

// A depot path the service user sees nothing in is caught.
func TestDoctorCatchesInvisibleDepotPath(t *testing.T) {
	e := newP4Env(t)
	b, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.config, []byte(strings.Replace(string(b), `"//depot/main/...",`, `"//depot/main/...", "//depot/typo/...",`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, out, _ := runDoctor(t, e)
	c := repoCheck(t, rep, doctor.CheckRepoAccess, "depot")
	if c.Status != doctor.StatusFail || !strings.Contains(c.Detail, "//depot/typo/...") || strings.Contains(c.Detail, "//depot/main/...,") || !strings.Contains(c.Fix, "p4 protect") {
		t.Errorf("repo-access: %+v\n%s", c, out)
	}
}

// openForNobody lets nobody reach the test's files: the directories on
// the way, the binary, and the config.
func openForNobody(t *testing.T, e *env) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to check as another account")
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

// Checked as the daemon's account (nobody here), a secret only root can
// read and a data_dir the account cannot write or does not own are
// caught, each with a fix that takes nothing from anyone.
func TestDoctorChecksAsTheDaemonsAccount(t *testing.T) {
	e := newEnv(t, 1)
	openForNobody(t, e)
	data := filepath.Join(e.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	// The secret stays root's, 0600, group root.
	rep, out, _ := runDoctor(t, e, "--as-user", "nobody")
	if c := findCheck(t, rep, doctor.CheckDaemonAccount); c.Status != doctor.StatusOK || !strings.Contains(c.Detail, "nobody") {
		t.Fatalf("daemon-account: %+v\n%s", c, out)
	}
	dd := findCheck(t, rep, doctor.CheckDataDir)
	if dd.Status != doctor.StatusFail || !strings.Contains(dd.Detail, "belongs to root") || !strings.Contains(dd.Fix, "chown nobody "+data) {
		t.Errorf("data-dir owned by root: %+v", dd)
	}
	secret := filepath.Join(e.dir, "secret")
	f := findCheck(t, rep, doctor.CheckFile)
	if f.Status != doctor.StatusFail || !strings.Contains(f.Detail, "not readable by nobody") || !strings.Contains(f.Fix, "setfacl -m u:nobody:r "+secret) {
		t.Errorf("secret file: %+v", f)
	}
	if strings.Contains(f.Fix, "chgrp") || strings.Contains(f.Fix, "chown") || strings.Contains(f.Fix, "chmod") {
		t.Errorf("the fix takes the file from someone: %s", f.Fix)
	}

	// Owned by nobody but not writable.
	if err := os.Chown(data, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o500); err != nil {
		t.Fatal(err)
	}
	rep, _, _ = runDoctor(t, e, "--as-user", "nobody")
	if dd := findCheck(t, rep, doctor.CheckDataDir); dd.Status != doctor.StatusFail || !strings.Contains(dd.Detail, "cannot write") || !strings.Contains(dd.Fix, "chmod u+rwX") {
		t.Errorf("data-dir not writable: %+v", dd)
	}

	// Fixed: readable through the group nobody is given, writable.
	if err := os.Chmod(data, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(secret, 0, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(secret, 0o640); err != nil {
		t.Fatal(err)
	}
	rep, out, _ = runDoctor(t, e, "--as-user", "nobody")
	for _, name := range []string{doctor.CheckDataDir, doctor.CheckFile} {
		if c := findCheck(t, rep, name); c.Status != doctor.StatusOK {
			t.Errorf("after the fix, %s: %+v\n%s", name, c, out)
		}
	}

	// A config only root reads: the daemon's account cannot even start.
	if err := os.Chmod(e.config, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, out, _ = runDoctor(t, e, "--as-user", "nobody")
	var cfgCheck *doctor.Check
	for i, c := range rep.Checks {
		if c.Name == doctor.CheckConfig && strings.Contains(c.Detail, "daemon's account") {
			cfgCheck = &rep.Checks[i]
		}
	}
	if cfgCheck == nil || cfgCheck.Status != doctor.StatusFail || !strings.Contains(cfgCheck.Detail, "nobody") || !strings.Contains(cfgCheck.Fix, "setfacl -m u:nobody:r "+e.config) {
		t.Errorf("config unreadable by the daemon's account: %+v\n%s", cfgCheck, out)
	}
}
