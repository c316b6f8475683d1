package doctor

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/vcs/svn"
)

// checkTools runs each configured VCS client's version query once.
func checkTools(ctx context.Context, cfg *config.Config, only, remoteHost string) []Check {
	var out []Check
	seen := map[string]bool{}
	tool := func(name, bin string) {
		if seen[name+"\x00"+bin] {
			return
		}
		seen[name+"\x00"+bin] = true
		c := Check{Name: name}
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		path, err := exec.LookPath(bin)
		var ver []byte
		if err == nil {
			ver, err = exec.CommandContext(tctx, path, "--version", "--quiet").Output()
		}
		switch {
		case err == nil && minVersions[name] != "":
			c = versionCheck(name, versionRE.FindString(string(ver)), path, minVersions[name])
		case err == nil:
			c.Status, c.Detail = StatusOK, fmt.Sprintf("%s %s (%s)", name, strings.TrimSpace(string(ver)), path)
		case remoteHost != "":
			c.Status = StatusWarn
			c.Detail = fmt.Sprintf("%s: %v; not needed on this host, the daemon runs on %s", bin, err, remoteHost)
		default:
			c.Detail = fmt.Sprintf("%s: %v; the daemon cannot read revisions without it", bin, err)
			c.Fix = fmt.Sprintf("install Subversion (apt-get install subversion), or set %s_path in the [[repo]]", name)
		}
		out = append(out, c)
	}
	if cfg.Sandbox.Kind == "podman" {
		out = append(out, checkPodman(ctx, cfg.Sandbox.Podman.Binary, remoteHost))
	}
	for _, r := range cfg.Repos {
		if only != "" && r.Name != only {
			continue
		}
		switch r.Kind {
		case vcs.KindSVN:
			sc, _ := r.Settings.(*svn.Config)
			svnBin, lookBin, local := "svn", "svnlook", ""
			if sc != nil {
				if sc.SvnPath != "" {
					svnBin = sc.SvnPath
				}
				if sc.SvnlookPath != "" {
					lookBin = sc.SvnlookPath
				}
				local = sc.LocalPath
			}
			tool(CheckSvn, svnBin)
			if local != "" {
				tool(CheckSvnlook, lookBin)
			}
		case vcs.KindP4:
			c := checkP4(ctx, r)
			if c.Failed() && remoteHost != "" {
				c.Status, c.Fix = StatusWarn, ""
				c.Detail += "; not needed on this host, the daemon runs on " + remoteHost
			}
			out = append(out, c)
		}
	}
	return out
}

// versionChecker is the p4 adapter's `p4 -V` check, asserted here so
// doctor needs no p4 import.
type versionChecker interface {
	CheckVersion(ctx context.Context) (string, error)
}

func checkP4(ctx context.Context, r config.Repo) Check {
	c := Check{Repo: r.Name, Name: CheckP4}
	a, err := r.Settings.NewAdapter()
	if err != nil {
		c.Detail = oneLine(err.Error())
		c.Fix = "install the p4 client (2017.1 or newer) on the daemon host, or set p4_path"
		return c
	}
	vc, ok := a.(versionChecker)
	if !ok {
		c.Status, c.Detail = StatusWarn, "this p4 adapter has no version check"
		return c
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rel, err := vc.CheckVersion(tctx)
	if err != nil {
		c.Detail = oneLine(err.Error())
		c.Fix = "install a current p4 client, or set p4_path"
		return c
	}
	c.Status, c.Detail = StatusOK, "p4 "+rel
	return c
}

// CheckPodman: podman present and new enough for the sandbox.
const CheckPodman = "podman"

// minVersions are the oldest clients aicr works with. svn: 1.10 is the
// first with --password-from-stdin, which keeps the repo's password off
// the command line. podman: the sandbox runner was written and tested
// against podman 4 (4.3 here); older majors are untested.
var minVersions = map[string]string{
	CheckSvn:    "1.10.0",
	CheckPodman: "4.0.0",
}

// versionCheck compares a client's version with its minimum.
func versionCheck(name, version, path, minimum string) Check {
	c := Check{Name: name}
	v, err := semver.NewVersion(version)
	if err != nil {
		c.Status, c.Detail = StatusWarn, fmt.Sprintf("%s at %s reports version %q, which doctor cannot compare with the minimum %s", name, path, version, minimum)
		return c
	}
	if v.LessThan(semver.MustParse(minimum)) {
		c.Status = StatusFail
		c.Detail = fmt.Sprintf("%s %s at %s is older than %s, the oldest aicr works with", name, v, path, minimum)
		c.Fix = fmt.Sprintf("install %s %s or newer (the distribution's current package, or a backport), or point aicr at a newer binary (%s)", name, minimum, pathKey(name))
		return c
	}
	c.Status, c.Detail = StatusOK, fmt.Sprintf("%s %s (%s; minimum %s)", name, v, path, minimum)
	return c
}

func pathKey(name string) string {
	if name == CheckPodman {
		return "[sandbox.podman] binary"
	}
	return name + "_path in the [[repo]]"
}

var versionRE = regexp.MustCompile(`(\d+\.\d+(?:\.\d+)?)`)

// checkPodman runs `podman --version` ("podman version 4.3.1").
func checkPodman(ctx context.Context, bin, remoteHost string) Check {
	if bin == "" {
		bin = "podman"
	}
	c := Check{Name: CheckPodman}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	path, err := exec.LookPath(bin)
	var out []byte
	if err == nil {
		out, err = exec.CommandContext(tctx, path, "--version").Output()
	}
	switch {
	case err != nil && remoteHost != "":
		c.Status, c.Detail = StatusWarn, fmt.Sprintf("%s: %v; not needed on this host, the daemon runs on %s", bin, err, remoteHost)
		return c
	case err != nil:
		c.Detail = fmt.Sprintf("%s: %v; [sandbox] kind = \"podman\" runs every review in it, so every review would fail", bin, err)
		c.Fix = "install Podman (scripts/install-deps.sh podman, or apt-get install podman), or set [sandbox.podman] binary"
		return c
	}
	m := versionRE.FindString(string(out))
	return versionCheck(CheckPodman, m, path, minVersions[CheckPodman])
}
