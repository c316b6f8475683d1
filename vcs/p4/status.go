package p4

import (
	"context"
	"strings"
)

// LoginStatus is `p4 login -s`: the server's own line about the service
// user's session ("User aicr ticket expires in 11 hours 59 minutes.").
// An expired, missing or wrong ticket or password is ErrAuth (with the
// cure), an unreachable server vcs.ErrUnavailable, as for every command.
// aicr doctor runs it as the daemon's account, with the repo's settings.
func (a *Adapter) LoginStatus(ctx context.Context) (string, error) {
	out, err := a.runText(ctx, nil, "login", "-s")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// InvisibleDepotPaths returns the configured depot paths (include lines)
// in which the service user sees no file: a path that does not exist, or
// one the protections table hides, so its changes could never be read.
// One `p4 files -m1 PATH` each: cheap whatever the depot's size.
func (a *Adapter) InvisibleDepotPaths(ctx context.Context) ([]string, error) {
	var out []string
	for _, p := range a.scope.includes() {
		recs, warns, err := a.runG(ctx, nil, "files", "-m1", p)
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 || len(warns) > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}
