package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/aicr-dev/aicr/config"
)

// Per-repository outcomes of `aicr install svn-hook --all`.
const (
	hookInstalled = "installed"
	hookPaste     = "paste"   // a foreign hook must call the helper: the line is in the report
	hookSkipped   = "skipped" // not a repository, or no [[repo]] for it
	hookFailed    = "failed"
)

// installAllOutput is `aicr install svn-hook --all --format json`.
type installAllOutput struct {
	Parent string           `json:"parent"`
	Config string           `json:"config"`
	Repos  []installAllRepo `json:"repos"`
}

type installAllRepo struct {
	Path   string `json:"path"`
	Status string `json:"status"`
	// Detail says why a repository was skipped or failed.
	Detail string `json:"detail,omitempty"`
	installSVNHookOutput
}

// installSVNHooksRun installs the hook into every repository directly
// under opts.Parent (Apache's SVNParentPath layout), each under the
// [[repo]] whose local_path it is. One repository's failure does not stop
// the others; the report says what happened to each.
func installSVNHooksRun(_ context.Context, opts *InstallSVNHookOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	parent, err := filepath.Abs(opts.Parent)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return usageErrorf("--parent %s: %v", opts.Parent, err)
	}
	aicrPath, err := hookBinary(f, opts.AicrPath)
	if err != nil {
		return err
	}
	out := installAllOutput{Parent: parent, Config: cfg.Path, Repos: []installAllRepo{}}
	failed := false
	for _, e := range entries {
		dir := filepath.Join(parent, e.Name())
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		r := installAllRepo{Path: dir}
		r.installSVNHookOutput, r.Status, r.Detail = installUnderParent(cfg, opts, dir, aicrPath)
		failed = failed || r.Status == hookFailed
		out.Repos = append(out.Repos, r)
	}
	sort.Slice(out.Repos, func(i, j int) bool { return out.Repos[i].Path < out.Repos[j].Path })
	if len(out.Repos) == 0 {
		return fmt.Errorf("no directories under %s: --parent names the directory that holds the repositories (SVNParentPath)", parent)
	}
	err = newExporter(f.IOStreams, opts.Format).Write(out, func(w io.Writer) error {
		return printInstallAll(w, out)
	})
	if err != nil {
		return err
	}
	if failed {
		return errSilentFailure
	}
	return nil
}

// installUnderParent installs one directory's hook and classifies the
// outcome; warnings stay in the result rather than on stderr, once per
// repository.
func installUnderParent(cfg *config.Config, opts *InstallSVNHookOptions, dir, aicrPath string) (installSVNHookOutput, string, string) {
	res := installSVNHookOutput{Warnings: []string{}}
	if !isSVNRepository(dir) {
		return res, hookSkipped, "not a Subversion repository (no format file or hooks directory)"
	}
	repo, ok := cfg.RepoForPath(dir)
	if !ok {
		return res, hookSkipped, fmt.Sprintf("no [[repo]] in %s has local_path = %q; add one to review it", cfg.Path, dir)
	}
	res, err := installOneSVNHook(cfg, opts, dir, repo.Name, aicrPath, io.Discard)
	switch {
	case err != nil:
		return res, hookFailed, err.Error()
	case res.PasteInto != "" && !res.AlreadyCalled:
		return res, hookPaste, fmt.Sprintf("%s is a %s hook: add the line below to it", res.PasteInto, res.Language)
	}
	return res, hookInstalled, ""
}

func isSVNRepository(dir string) bool {
	f, errF := os.Stat(filepath.Join(dir, "format"))
	h, errH := os.Stat(filepath.Join(dir, "hooks"))
	return errF == nil && f.Mode().IsRegular() && errH == nil && h.IsDir()
}

func printInstallAll(w io.Writer, out installAllOutput) error {
	counts := map[string]int{}
	for _, r := range out.Repos {
		counts[r.Status]++
		name := filepath.Base(r.Path)
		switch r.Status {
		case hookInstalled:
			fmt.Fprintf(w, "%-9s %s (repo %q): %s\n", r.Status, name, r.Repo, r.Hook)
		case hookPaste:
			fmt.Fprintf(w, "%-9s %s (repo %q): wrote %s; %s\n          %s\n", r.Status, name, r.Repo, r.Hook, r.Detail, r.PasteLine)
		default:
			fmt.Fprintf(w, "%-9s %s: %s\n", r.Status, name, r.Detail)
		}
		for _, warning := range r.Warnings {
			fmt.Fprintf(w, "          warning: %s\n", warning)
		}
	}
	_, err := fmt.Fprintf(w, "%d installed, %d need a line pasted, %d skipped, %d failed under %s\n",
		counts[hookInstalled], counts[hookPaste], counts[hookSkipped], counts[hookFailed], out.Parent)
	return err
}
