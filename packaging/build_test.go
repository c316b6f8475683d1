package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPackageVersionOrdersUntaggedBuildsByCommitTime(t *testing.T) {
	for _, tc := range []struct {
		describe, commit, version, prerelease string
	}{
		{"v1.4.2", "", "1.4.2", ""},
		{"1.4.2", "20261201054900", "1.4.2", ""},
		{"1ac83e1", "20261201054900", "0.0.0", "git20261201054900.1ac83e1"},
		{"1ac83e1-dirty", "20261201054900", "0.0.0", "git20261201054900.1ac83e1.dirty"},
		{"v1.4.2-3-g1ac83e1", "20261201054900", "0.0.0", "git20261201054900.1.4.2.3.g1ac83e1"},
	} {
		v, pre, err := packageVersion(tc.describe, tc.commit)
		if err != nil || v != tc.version || pre != tc.prerelease {
			t.Errorf("packageVersion(%q, %q) = %q, %q, %v; want %q, %q", tc.describe, tc.commit, v, pre, err, tc.version, tc.prerelease)
		}
	}
	if _, _, err := packageVersion("1ac83e1", ""); err == nil || !strings.Contains(err.Error(), "-date") {
		t.Errorf("an untagged build without a commit time: err = %v, want one naming -date", err)
	}
}

// buildPackages packages two stand-in binaries with the checkout's real
// unit, config, scripts and licence.
func buildPackages(t *testing.T, formats ...string) map[string]string {
	t.Helper()
	bin := t.TempDir()
	for _, name := range []string{"aicr", "aicr-notify"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho "+name+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	paths, err := Build(Options{Root: "..", BinDir: bin, OutDir: t.TempDir(), Describe: "1ac83e1", CommitTime: "20261201054900", Arch: "amd64", Formats: formats})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, f := range formats {
		out[f] = paths[i]
	}
	return out
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestDebHoldsBinariesUnitConffileAndScripts(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb not installed")
	}
	deb := buildPackages(t, "deb")["deb"]
	if want := "aicr_0.0.0~git20261201054900.1ac83e1_amd64.deb"; filepath.Base(deb) != want {
		t.Errorf("file name %s, want %s", filepath.Base(deb), want)
	}
	listing := run(t, "dpkg-deb", "-c", deb)
	for _, want := range []string{
		"-rwxr-xr-x root/root",
		"./usr/bin/aicr\n",
		"./usr/bin/aicr-notify\n",
		"./usr/lib/systemd/system/aicr.service\n",
		"-rw-r----- root/root", // the config, before postinst gives it group aicr
		"./etc/aicr/aicr.toml\n",
		"./usr/share/doc/aicr/copyright\n",
	} {
		if !strings.Contains(listing, want) {
			t.Errorf("deb listing lacks %q:\n%s", want, listing)
		}
	}
	dir := t.TempDir()
	run(t, "dpkg-deb", "-e", deb, dir)
	conffiles, _ := os.ReadFile(filepath.Join(dir, "conffiles"))
	if strings.TrimSpace(string(conffiles)) != "/etc/aicr/aicr.toml" {
		t.Errorf("conffiles = %q, want the config alone (an upgrade keeps the admin's edits)", conffiles)
	}
	for script, source := range map[string]string{"postinst": "postinstall.sh", "prerm": "preremove.sh", "postrm": "postremove.sh"} {
		got, err := os.ReadFile(filepath.Join(dir, script))
		want, _ := os.ReadFile(filepath.Join("scripts", source))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s is not scripts/%s (err %v)", script, source, err)
		}
	}
	version := run(t, "dpkg-deb", "-f", deb, "Version")
	if strings.TrimSpace(version) != "0.0.0~git20261201054900.1ac83e1" {
		t.Errorf("Version: %q", version)
	}
}

func TestRPMMarksTheConfigNoReplace(t *testing.T) {
	if _, err := exec.LookPath("rpm"); err != nil {
		t.Skip("rpm not installed (make test-install installs it)")
	}
	path := buildPackages(t, "rpm")["rpm"]
	files := run(t, "rpm", "-qp", "--qf", `[%{FILEMODES:perms} %{FILEFLAGS:fflags} %{FILENAMES}\n]`, path)
	for _, want := range []string{
		"-rw-r----- cn /etc/aicr/aicr.toml",
		"-rwxr-xr-x  /usr/bin/aicr\n",
		"-rwxr-xr-x  /usr/bin/aicr-notify\n",
		"-rw-r--r--  /usr/lib/systemd/system/aicr.service\n",
		"l /usr/share/licenses/aicr/LICENSE",
	} {
		if !strings.Contains(files, want) {
			t.Errorf("rpm files lack %q:\n%s", want, files)
		}
	}
	scripts := run(t, "rpm", "-qp", "--scripts", path)
	for _, want := range []string{"postinstall scriptlet", "useradd --system", "preuninstall scriptlet", "postuninstall scriptlet"} {
		if !strings.Contains(scripts, want) {
			t.Errorf("rpm scripts lack %q:\n%s", want, scripts)
		}
	}
	if license := run(t, "rpm", "-qp", "--qf", "%{LICENSE}", path); license != "Apache-2.0" {
		t.Errorf("License: %q", license)
	}
}

// The unit is what the issue asks of a hardened daemon; a directive lost
// in an edit fails here, not on an admin's machine.
func TestUnitIsHardenedAndReloadsOnHUP(t *testing.T) {
	f, err := os.Open("aicr.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			got[k] = append(got[k], v)
		}
	}
	for k, v := range map[string]string{
		"User":                  "aicr",
		"Group":                 "aicr",
		"ExecStart":             "/usr/bin/aicr daemon --config /etc/aicr/aicr.toml",
		"ExecReload":            "/bin/kill -HUP $MAINPID",
		"Restart":               "on-failure",
		"StateDirectory":        "aicr",
		"ProtectSystem":         "strict",
		"ReadWritePaths":        "-/var/spool/aicr",
		"NoNewPrivileges":       "yes",
		"PrivateTmp":            "yes",
		"WantedBy":              "multi-user.target",
		"EnvironmentFile":       "-/etc/aicr/environment",
		"CapabilityBoundingSet": "",
	} {
		if !slices.Contains(got[k], v) {
			t.Errorf("%s=%q missing (have %q)", k, v, got[k])
		}
	}
}
