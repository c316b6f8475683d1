package agent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// Repository instructions and skills, read at the reviewed revision
// through the adapter (never a working copy): .aicr/instructions.md,
// AGENTS.md at the root and in every ancestor directory of a changed
// path, and .agents/skills/<name>/SKILL.md. They land in the run's repo/
// (rundir.RepoIndex lists them) for the runtime bundle, and the
// instructions also in repo-rules.md, the repo layer of aicr's own prompt.

const (
	agentsFile    = "AGENTS.md"
	repoSkillsDir = ".agents/skills"
	repoSkillFile = "SKILL.md"
)

type repoReader struct {
	ctx   context.Context
	tgt   Target
	tree  vcs.TreeReader // nil: the adapter cannot list or tell symlinks
	log   *slog.Logger
	index rundir.RepoIndex
	files map[string][]byte
}

// readRepoFiles fetches what the repository says about reviewing it. A
// repository without any is the common case and is not logged; a failure
// to read a file is logged and the review goes on without it. It reports
// whether any instructions were found. Nothing is read for an agent that
// ignores them.
func (l *Ladder) readRepoFiles(ctx context.Context, run rundir.Layout, tgt Target, log *slog.Logger) bool {
	if tgt.Replayer == nil {
		return false
	}
	if i, ok := l.Agent.(RepoFilesIgnorer); ok && i.IgnoresRepoFiles() {
		return false
	}
	r := &repoReader{ctx: ctx, tgt: tgt, log: log, files: map[string][]byte{}}
	r.tree, _ = tgt.Replayer.(vcs.TreeReader)
	roots := []string{""}
	if rt, ok := tgt.Replayer.(vcs.Rooter); ok && len(rt.RepoRoots()) > 0 {
		roots = rt.RepoRoots()
	}
	var changed []string
	if c, err := run.ReadChange(); err == nil {
		for _, f := range c.Files {
			changed = append(changed, f.Path)
		}
	}
	// The first root that has a file decides for the repo-wide names
	// (.aicr/instructions.md, each skill); AGENTS.md keeps its full path.
	for _, root := range roots {
		if _, ok := r.files[RepoRulesFile]; !ok {
			r.read(path.Join(root, RepoRulesFile), RepoRulesFile, maxRepoRulesBytes)
		}
	}
	// Without symlink detection an AGENTS.md or skill could be a link the
	// bundle must refuse; only the rules file is read then, as before.
	if r.tree != nil {
		for _, dir := range agentsDirs(roots, changed, log) {
			p := path.Join(dir, agentsFile)
			r.read(p, p, maxRepoFileBytes)
		}
		for _, root := range roots {
			r.readSkills(root)
		}
	}
	if err := r.write(run); err != nil {
		log.Warn("keep the repository's instructions in the run dir; reviewing without them", "err", err)
		return false
	}
	return r.instructions() != ""
}

// agentsDirs are the directories whose AGENTS.md applies: each root and
// every ancestor of a changed path below it, the shallowest first.
func agentsDirs(roots, changed []string, log *slog.Logger) []string {
	seen := map[string]bool{}
	var dirs []string
	add := func(d string) {
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for _, root := range roots {
		add(root)
	}
	for _, c := range changed {
		for _, root := range roots {
			if root != "" && !strings.HasPrefix(c, root+"/") {
				continue
			}
			for d := path.Dir(c); d != "." && d != root && d != "/"; d = path.Dir(d) {
				add(d)
			}
		}
	}
	sort.SliceStable(dirs, func(i, j int) bool {
		return strings.Count(dirs[i], "/") < strings.Count(dirs[j], "/") || (strings.Count(dirs[i], "/") == strings.Count(dirs[j], "/") && dirs[i] < dirs[j])
	})
	if len(dirs) > maxAgentsDirs {
		log.Warn("too many directories to look for AGENTS.md in; the deepest are left out", "dirs", len(dirs), "limit", maxAgentsDirs)
		dirs = dirs[:maxAgentsDirs]
	}
	return dirs
}

// read fetches repoPath into files[key], capped; a symlink is listed, not
// read.
func (r *repoReader) read(repoPath, key string, limit int) {
	w := &cappedBuffer{limit: limit}
	err := r.tgt.Replayer.Cat(r.ctx, repoPath, r.tgt.Revision, w)
	switch {
	case errors.Is(err, vcs.ErrNoSuchPath) || errors.Is(err, vcs.ErrPathOutOfScope):
		return
	case err != nil && !errors.Is(err, errCapped) && !errors.Is(err, vcs.ErrTooLarge):
		r.log.Warn("repository instruction file unreadable; reviewing without it", "file", repoPath, "err", err)
		return
	}
	if r.tree != nil {
		link, err := r.tree.IsSymlink(r.ctx, repoPath, r.tgt.Revision)
		if err != nil {
			r.log.Warn("cannot tell whether a repository instruction file is a symlink; leaving it out", "file", repoPath, "err", err)
			return
		}
		if link {
			r.index.Symlinks = append(r.index.Symlinks, key)
			return
		}
	}
	if w.capped {
		r.log.Warn("repository instruction file truncated", "file", repoPath, "limit_bytes", limit)
	}
	r.files[key] = w.buf
}

// readSkills reads root/.agents/skills/<name>/SKILL.md for each skill
// directory; entries that are not directories (a symlinked skill dir is a
// file to the VCS) are not skills.
func (r *repoReader) readSkills(root string) {
	dir := path.Join(root, repoSkillsDir)
	names, err := r.tree.List(r.ctx, dir, r.tgt.Revision)
	switch {
	case errors.Is(err, vcs.ErrNoSuchPath) || errors.Is(err, vcs.ErrPathOutOfScope):
		return
	case err != nil:
		r.log.Warn("repository skills unreadable; reviewing without them", "dir", dir, "err", err)
		return
	}
	n := 0
	for _, name := range names {
		skill, isDir := strings.CutSuffix(name, "/")
		if !isDir {
			if link, err := r.tree.IsSymlink(r.ctx, path.Join(dir, name), r.tgt.Revision); err == nil && link {
				r.index.Symlinks = append(r.index.Symlinks, path.Join(repoSkillsDir, name))
			}
			continue
		}
		key := path.Join(repoSkillsDir, skill, repoSkillFile)
		if _, taken := r.files[key]; taken {
			continue
		}
		if n == maxRepoSkills {
			r.log.Warn("too many repository skills; the rest are left out", "dir", dir, "limit", maxRepoSkills)
			return
		}
		n++
		r.read(path.Join(dir, skill, repoSkillFile), key, maxRepoFileBytes)
	}
}

// instructions is repo-rules.md: .aicr/instructions.md as it is, then each
// AGENTS.md under its path, the most specific last.
func (r *repoReader) instructions() string {
	var s strings.Builder
	s.Write(r.files[RepoRulesFile])
	for _, key := range r.agentsKeys() {
		if strings.TrimSpace(string(r.files[key])) == "" {
			continue
		}
		if s.Len() > 0 {
			s.WriteString("\n\n")
		}
		s.WriteString("# From " + key + "\n\n")
		s.Write(r.files[key])
	}
	return s.String()
}

func (r *repoReader) agentsKeys() []string {
	var keys []string
	for k := range r.files {
		if path.Base(k) == agentsFile {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		di, dj := strings.Count(keys[i], "/"), strings.Count(keys[j], "/")
		return di < dj || (di == dj && keys[i] < keys[j])
	})
	return keys
}

func (r *repoReader) write(run rundir.Layout) error {
	if len(r.files) == 0 && len(r.index.Symlinks) == 0 {
		return nil
	}
	for key, b := range r.files {
		p, err := run.RepoFilePath(key)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o640); err != nil {
			return err
		}
		r.index.Files = append(r.index.Files, key)
	}
	sort.Strings(r.index.Files)
	sort.Strings(r.index.Symlinks)
	if err := run.WriteRepoIndex(r.index); err != nil {
		return err
	}
	rules := r.instructions()
	if rules == "" {
		return nil
	}
	if len(rules) > maxRepoRulesBytes {
		// The prompt clips the layer again, with a note; this only bounds
		// the file, so a rune cut in half is dropped.
		rules = strings.ToValidUTF8(rules[:maxRepoRulesBytes], "")
	}
	return os.WriteFile(run.RepoRulesPath(), []byte(rules), 0o640)
}
