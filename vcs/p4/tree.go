package p4

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/vcs"
)

var (
	_ vcs.TreeReader = (*Adapter)(nil)
	_ vcs.Rooter     = (*Adapter)(nil)
)

// List implements vcs.TreeReader for dir (a vcs path) as of changelist
// rev: `p4 files -e DIR/*@rev` for the files that exist there and `p4 dirs
// DIR/*@rev` for the subdirectories. Perforce has no empty directories, so
// a directory with neither is vcs.ErrNoSuchPath. Files outside depot_paths
// or include/exclude are left out.
func (a *Adapter) List(ctx context.Context, dir, rev string) ([]string, error) {
	n, err := parseChange(rev)
	if err != nil {
		return nil, err
	}
	if err := checkFileName(dir); err != nil {
		return nil, fmt.Errorf("%w: %w", vcs.ErrPathOutOfScope, err)
	}
	df := depotFile(dir)
	if !a.scope.contains(df + "/...") {
		return nil, fmt.Errorf("%w: %s is outside the configured depot_paths", vcs.ErrPathOutOfScope, dir)
	}
	spec := df + "/*@" + strconv.Itoa(n)
	files, _, err := a.runG(ctx, nil, "files", "-e", spec)
	if err != nil {
		return nil, err
	}
	dirs, _, err := a.runG(ctx, nil, "dirs", spec)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, r := range files {
		p := vcsPath(r.Get("depotFile"))
		if p == "" || isDeletedAction(r.Get("action")) || !a.scope.contains(r.Get("depotFile")) || !a.filter.Match(p) {
			continue
		}
		names = append(names, path.Base(p))
	}
	for _, r := range dirs {
		if d := vcsPath(r.Get("dir")); d != "" {
			names = append(names, path.Base(d)+"/")
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s@%d: no files: %w", dir, n, vcs.ErrNoSuchPath)
	}
	sort.Strings(names)
	return names, nil
}

// IsSymlink implements vcs.TreeReader: the file's type at changelist rev
// (`p4 files path@rev`) is symlink.
func (a *Adapter) IsSymlink(ctx context.Context, p, rev string) (bool, error) {
	n, err := parseChange(rev)
	if err != nil {
		return false, err
	}
	df, err := a.scopedDepotFile(p)
	if err != nil {
		return false, err
	}
	recs, warns, err := a.runG(ctx, nil, "files", df+"@"+strconv.Itoa(n))
	if err != nil {
		return false, err
	}
	if len(warns) > 0 || len(recs) == 0 || isDeletedAction(recs[0].Get("action")) {
		return false, fmt.Errorf("%s@%d: %w", p, n, vcs.ErrNoSuchPath)
	}
	return baseType(recs[0].Get("type")) == "symlink", nil
}

// RepoRoots implements vcs.Rooter: the fixed part of every included
// depot path ("//depot/main/..." is "depot/main"), where a tree keeps its
// .aicr/instructions.md, AGENTS.md and .agents/skills.
func (a *Adapter) RepoRoots() []string {
	var roots []string
	seen := map[string]bool{}
	for _, p := range a.scope.includes() {
		p = strings.TrimPrefix(p, "//")
		if i := firstWildcard(p); i >= 0 {
			// A wildcard inside a name ("main/foo*.c") roots at its directory.
			p = p[:strings.LastIndex(p[:i+1], "/")+1]
		}
		p = strings.TrimSuffix(UnescapePath(p), "/")
		if p != "" && !seen[p] {
			seen[p] = true
			roots = append(roots, p)
		}
	}
	return roots
}

func firstWildcard(p string) int {
	i, j := strings.Index(p, "*"), strings.Index(p, "...")
	if i < 0 || (j >= 0 && j < i) {
		return j
	}
	return i
}
