package doctor

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/vcs/svn"
)

// checkTools runs each configured VCS client's version query once.
func checkTools(ctx context.Context, cfg *daemon.Config, only, remoteHost string) []Check {
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

func checkP4(ctx context.Context, r daemon.RepoConfig) Check {
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
