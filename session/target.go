package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/vcs/svn"
)

// TargetKind is what a session reviews.
type TargetKind string

const (
	// TargetSVNWorkingCopy: the local modifications of an svn working
	// copy, unversioned files included (svn-wc:<path>).
	TargetSVNWorkingCopy TargetKind = "svn-wc"
	// TargetP4Shelf: a shelved Perforce changelist (p4-shelf:<change>).
	TargetP4Shelf TargetKind = "p4-shelf"
	// TargetSVNRevision: a committed svn revision (svn-rev:<n>).
	TargetSVNRevision TargetKind = "svn-rev"
	// TargetP4Change: a submitted Perforce changelist (p4-change:<n>).
	TargetP4Change TargetKind = "p4-change"
	// TargetPatch: a unified diff file (patch:<file>).
	TargetPatch TargetKind = "patch"
)

// Target is a parsed review_begin target.
type Target struct {
	Kind TargetKind
	// Arg is the path (absolute once resolved) or the change number.
	Arg string
}

func (t Target) String() string { return string(t.Kind) + ":" + t.Arg }

const targetForms = "svn-wc:<path>, p4-shelf:<change>, svn-rev:<n>, p4-change:<n> or patch:<file>"

// ParseTarget reads "kind:arg"; paths are made absolute against the
// current directory so every round (possibly run by another process)
// reads the same files.
func ParseTarget(s string) (Target, error) {
	kind, arg, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || arg == "" {
		return Target{}, mcperr.New(mcperr.InvalidInput, "give target as "+targetForms, "target %q is not kind:value", s)
	}
	t := Target{Kind: TargetKind(kind), Arg: arg}
	switch t.Kind {
	case TargetSVNWorkingCopy, TargetPatch:
		abs, err := filepath.Abs(arg)
		if err != nil {
			return Target{}, mcperr.New(mcperr.InvalidInput, "give an absolute path", "target %q: %v", s, err)
		}
		t.Arg = abs
		fi, err := os.Stat(abs)
		switch {
		case err != nil:
			return Target{}, mcperr.New(mcperr.InvalidInput, "check the path: it must exist and be readable by this process", "target %q: %v", s, err)
		case t.Kind == TargetSVNWorkingCopy && !fi.IsDir():
			return Target{}, mcperr.New(mcperr.InvalidInput, "give the working copy's directory", "target %q: %s is not a directory", s, abs)
		case t.Kind == TargetPatch && fi.IsDir():
			return Target{}, mcperr.New(mcperr.InvalidInput, "give the patch file, not a directory", "target %q: %s is a directory", s, abs)
		}
	case TargetP4Shelf, TargetSVNRevision, TargetP4Change:
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || n < 1 {
			return Target{}, mcperr.New(mcperr.InvalidInput, "give a positive number, e.g. "+kind+":42", "target %q: %q is not a positive number", s, arg)
		}
		t.Arg = strconv.FormatInt(n, 10)
	default:
		return Target{}, mcperr.New(mcperr.InvalidInput, "use one of "+targetForms, "target %q: unknown kind %q", s, kind)
	}
	return t, nil
}

// repoKind is the kind of [[repo]] a target needs; "" when any or none.
func (t Target) repoKind() vcs.Kind {
	switch t.Kind {
	case TargetSVNWorkingCopy, TargetSVNRevision:
		return vcs.KindSVN
	case TargetP4Shelf, TargetP4Change:
		return vcs.KindP4
	}
	return ""
}

// needsRepo: the target is read through a configured repo's adapter.
func (t Target) needsRepo() bool {
	switch t.Kind {
	case TargetP4Shelf, TargetSVNRevision, TargetP4Change:
		return true
	}
	return false
}

// resolveRepo picks the [[repo]] a target is reviewed as: the named one
// (checked against the target's kind), else the only repo of that kind
// when the target needs one.
func resolveRepo(cfg *config.Config, t Target, name string) (string, error) {
	want := t.repoKind()
	if name != "" {
		r, ok := cfg.Repo(name)
		if !ok {
			return "", mcperr.New(mcperr.NotFound, "name a [[repo]] of "+cfg.Path, "repo %q is not in %s", name, cfg.Path)
		}
		if want != "" && r.Kind != want {
			return "", mcperr.New(mcperr.InvalidInput, "name a "+string(want)+" repo", "repo %q is a %s repo; target %s needs a %s repo", name, r.Kind, t, want)
		}
		return name, nil
	}
	if !t.needsRepo() {
		return "", nil
	}
	var names []string
	for _, r := range cfg.Repos {
		if r.Kind == want {
			names = append(names, r.Name)
		}
	}
	switch len(names) {
	case 1:
		return names[0], nil
	case 0:
		return "", mcperr.New(mcperr.ConfigInvalid, "add a [[repo]] of kind "+string(want)+" to "+cfg.Path, "target %s needs a %s repo and %s has none", t, want, cfg.Path)
	}
	return "", mcperr.New(mcperr.InvalidInput, "pass repo: one of "+strings.Join(names, ", "), "target %s: %d %s repos are configured", t, len(names), want)
}

// fetched is a target read into a round's run directory.
type fetched struct {
	change *vcs.Change
	// revision and replayer answer the agent's context and blame
	// requests; a nil replayer answers them with an error.
	revision string
	replayer agent.Replayer
}

// shelfFetcher is the Perforce adapter's shelved-change reader.
type shelfFetcher interface {
	FetchShelf(ctx context.Context, change string, dst vcs.Dest) (*vcs.Change, error)
}

// fetch reads the target into layout.
func (t Target) fetch(ctx context.Context, adapters map[string]vcs.Adapter, repo string, layout rundir.Layout) (fetched, error) {
	switch t.Kind {
	case TargetSVNWorkingCopy:
		wc, err := workingCopyReader(adapters, repo)
		if err != nil {
			return fetched{}, err
		}
		c, err := wc.FetchWorkingCopy(ctx, t.Arg, layout)
		if err != nil {
			return fetched{}, err
		}
		return fetched{change: c, revision: c.Revision, replayer: wc.WorkingCopyFiles(t.Arg)}, nil
	case TargetPatch:
		c, err := fetchPatch(t.Arg, layout)
		return fetched{change: c}, err
	}
	ad, ok := adapters[repo]
	if !ok {
		return fetched{}, fmt.Errorf("repo %q has no adapter", repo)
	}
	var (
		c   *vcs.Change
		err error
	)
	if t.Kind == TargetP4Shelf {
		sf, ok := ad.(shelfFetcher)
		if !ok {
			return fetched{}, fmt.Errorf("repo %q cannot read shelved changes", repo)
		}
		c, err = sf.FetchShelf(ctx, t.Arg, layout)
	} else {
		c, err = ad.Fetch(ctx, t.Arg, layout)
	}
	if err != nil {
		return fetched{}, fmt.Errorf("fetch %s: %w", t, err)
	}
	c.Repo = repo
	f := fetched{change: c, revision: t.Arg}
	if r, ok := ad.(agent.Replayer); ok {
		f.replayer = r
	}
	// For a shelf, context requests read the depot as of the shelf's
	// change number; the shelved files themselves are in src/.
	return f, nil
}

// workingCopyReader is the svn adapter a working copy is read through:
// its repo's, so the repo's svn_path and scope apply, else one with svn
// from PATH and the default scope.
func workingCopyReader(adapters map[string]vcs.Adapter, repo string) (*svn.Adapter, error) {
	if repo == "" {
		return svn.NewWorkingCopyReader("")
	}
	ad, ok := adapters[repo].(*svn.Adapter)
	if !ok {
		return nil, fmt.Errorf("repo %q is not an svn repo, so it cannot read a working copy", repo)
	}
	return ad, nil
}

// workingCopyRepo is the svn [[repo]] whose url the working copy at root
// was checked out from (at it or below it), so a session begun without
// repo can still publish; "" when none matches or svn cannot tell. The
// url is read with the first svn repo's client (svn_path).
func workingCopyRepo(ctx context.Context, cfg *config.Config, root string) string {
	var repos []*svn.Config
	var names []string
	for _, r := range cfg.Repos {
		if sc, ok := r.Settings.(*svn.Config); ok && r.Kind == vcs.KindSVN {
			repos, names = append(repos, sc), append(names, r.Name)
		}
	}
	if len(repos) == 0 {
		return ""
	}
	reader, err := svn.NewWorkingCopyReader(repos[0].SvnPath)
	if err != nil {
		return ""
	}
	url, err := reader.WorkingCopyURL(ctx, root)
	if err != nil {
		return ""
	}
	wc := strings.TrimRight(url, "/")
	best, bestLen := "", 0
	for i, sc := range repos {
		u := strings.TrimRight(sc.URL, "/")
		if u != "" && (wc == u || strings.HasPrefix(wc, u+"/")) && len(u) > bestLen {
			best, bestLen = names[i], len(u)
		}
	}
	return best
}
