package svn

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aicr-dev/aicr/vcs"
)

// FetchWorkingCopy reads the local modifications of the working copy at
// root into dst, as Fetch reads a committed revision: `svn status` for
// what changed, `svn diff` for versioned changes, and every unversioned
// (not ignored) file as an added file, so a new file the developer has
// not `svn add`ed yet is reviewed too. The repo's scope decides which
// contents are copied from disk to src/; paths are relative to root,
// which the scope's patterns match as they match paths under url when the
// working copy is a checkout of it. Review sessions (svn-wc:<path>) use
// it.
//
// svn runs with the adapter's client (svn_path), deadline and child
// environment, but without its --config-dir and credentials: these
// commands never reach the server, and the working copy's ignore rules
// (global-ignores) are the developer's, in the developer's svn config.
func (a *Adapter) FetchWorkingCopy(ctx context.Context, root string, dst vcs.Dest) (*vcs.Change, error) {
	actions, unversioned, err := a.workingCopyStatus(ctx, root)
	if err != nil {
		return nil, err
	}
	patch, err := a.workingCopyDiff(ctx, root, unversioned)
	if err != nil {
		return nil, err
	}
	for _, p := range unversioned {
		actions[p] = vcs.ActionAdd
	}
	if err := os.WriteFile(dst.DiffPath(), patch, 0o640); err != nil {
		return nil, fmt.Errorf("write diff: %w", err)
	}
	parsed, err := vcs.ParseDiff(patch)
	if err != nil {
		return nil, fmt.Errorf("parse the working copy's diff: %w", err)
	}
	rev := ""
	if out, err := a.inWorkingCopy(ctx, root, "info", "--show-item", "revision", "."); err == nil {
		rev = strings.TrimSpace(string(out))
	}
	// "r12+local" in reports: the base revision, and that this is not it.
	change := &vcs.Change{VCS: vcs.KindSVN, Revision: rev + "+local", Date: time.Now().UTC(),
		Description: fmt.Sprintf("Local modifications of the working copy %s (not committed; based on r%s).", root, rev)}
	if u := os.Getenv("USER"); u != "" {
		change.Author = u
	}
	files := filesOf(actions, parsed)
	a.copyFromDisk(files, root, dst)
	for _, f := range files {
		change.Files = append(change.Files, *f)
	}
	change.Scope = a.filter.Recorded()
	return change, nil
}

// WorkingCopyURL is the url the working copy at root was checked out
// from, as svn info prints it.
func (a *Adapter) WorkingCopyURL(ctx context.Context, root string) (string, error) {
	out, err := a.inWorkingCopy(ctx, root, "info", "--show-item", "url", ".")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// NewWorkingCopyReader is an Adapter for working copies alone, for a
// review session begun with no [[repo]]: svnPath (default "svn" in PATH),
// the default scope. It knows no repository, so only the working-copy
// methods (FetchWorkingCopy, WorkingCopyURL, WorkingCopyFiles) work.
func NewWorkingCopyReader(svnPath string) (*Adapter, error) {
	if svnPath == "" {
		svnPath = "svn"
	}
	bin, err := exec.LookPath(svnPath)
	if err != nil {
		return nil, fmt.Errorf("%w: svn client %q not found: install it with apt-get install subversion, or set svn_path: %w",
			vcs.ErrToolMissing, svnPath, err)
	}
	cfg := Config{SvnPath: svnPath, Scope: vcs.Scope{}.WithDefaults(0), FetchParallelism: DefaultFetchParallelism}
	return &Adapter{cfg: cfg, access: AccessSVN, svn: bin, filter: cfg.Scope.Filter(), counts: map[string]int{}}, nil
}

// workingCopyStatus reads `svn status`: the action of each versioned
// change by path, and the unversioned files (the contents of an
// unversioned directory), sorted.
func (a *Adapter) workingCopyStatus(ctx context.Context, root string) (map[string]vcs.Action, []string, error) {
	statusXML, err := a.inWorkingCopy(ctx, root, "status", "--xml", ".")
	if err != nil {
		return nil, nil, err
	}
	var st wcStatus
	if err := xml.Unmarshal(statusXML, &st); err != nil {
		return nil, nil, fmt.Errorf("svn status --xml in %s: %w", root, err)
	}
	actions := map[string]vcs.Action{}
	var unversioned []string
	for _, t := range st.Targets {
		for _, e := range t.Entries {
			p := filepath.ToSlash(e.Path)
			switch e.Status.Item {
			case "modified", "conflicted":
				actions[p] = vcs.ActionModify
			case "added":
				actions[p] = vcs.ActionAdd
			case "deleted", "missing":
				actions[p] = vcs.ActionDelete
			case "replaced":
				actions[p] = vcs.ActionReplace
			case "unversioned":
				files, err := unversionedFiles(root, e.Path)
				if err != nil {
					return nil, nil, err
				}
				unversioned = append(unversioned, files...)
			}
		}
	}
	sort.Strings(unversioned)
	return actions, unversioned, nil
}

// workingCopyDiff is `svn diff` of the versioned changes followed by an
// addition section for each unversioned file, in svn's own format.
func (a *Adapter) workingCopyDiff(ctx context.Context, root string, unversioned []string) ([]byte, error) {
	diff, err := a.inWorkingCopy(ctx, root, "diff", "--internal-diff", ".")
	if err != nil {
		return nil, err
	}
	patch := bytes.NewBuffer(diff)
	for _, p := range unversioned {
		if err := writeAddedDiff(patch, root, p); err != nil {
			return nil, err
		}
	}
	return patch.Bytes(), nil
}

// filesOf is one FileChange per path svn status or the diff names, in
// path order, with the diff's changed-line map.
func filesOf(actions map[string]vcs.Action, parsed map[string]vcs.FileDiff) []*vcs.FileChange {
	for p := range parsed {
		if _, ok := actions[p]; !ok {
			actions[p] = vcs.ActionModify
		}
	}
	paths := make([]string, 0, len(actions))
	for p := range actions {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var files []*vcs.FileChange
	for _, p := range paths {
		f := &vcs.FileChange{Path: p, Action: actions[p], NodeKind: vcs.NodeFile}
		d, inDiff := parsed[p]
		switch {
		case f.Action == vcs.ActionDelete || d.Deleted:
			f.Action, f.Skipped = vcs.ActionDelete, vcs.SkipDeleted
		case d.Binary:
			f.Binary, f.Skipped = true, vcs.SkipBinary
		case !inDiff:
			// A directory added, or a property-only change: nothing to read.
			f.NodeKind, f.Skipped = vcs.NodeDir, vcs.SkipDirectory
		}
		f.Added, f.Hunks = d.Added, d.Hunks
		files = append(files, f)
	}
	return files
}

// copyFromDisk copies each reviewed file's current content from root to
// dst under the repo's scope (include/exclude, size caps), skipping
// symlinks (they may point anywhere) and non-text files.
func (a *Adapter) copyFromDisk(files []*vcs.FileChange, root string, dst vcs.Dest) {
	a.cfg.Scope.Apply(files, func(f *vcs.FileChange) int64 {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			return vcs.SizeUnknown
		}
		return fi.Size()
	})
	for _, f := range files {
		if f.Skipped != "" {
			continue
		}
		src := filepath.Join(root, filepath.FromSlash(f.Path))
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			f.Skipped = "not a regular file in the working copy"
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			f.Skipped = "unreadable: " + err.Error()
			continue
		}
		to, err := dst.SrcPath(f.Path)
		if err != nil {
			f.Skipped = err.Error()
			continue
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o750); err == nil {
			err = os.WriteFile(to, data, 0o640)
			if err != nil {
				f.Skipped = "copy: " + err.Error()
			}
		}
	}
}

// unversionedFiles lists the regular files under an unversioned path
// (itself when it is a file), relative to root, slash-separated.
func unversionedFiles(root, rel string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(filepath.Join(root, rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".svn" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			r, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(r))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list unversioned %s: %w", rel, err)
	}
	return out, nil
}

// writeAddedDiff appends a file's whole content as an addition, in svn's
// own diff format, so one parser reads both.
func writeAddedDiff(w io.Writer, root, rel string) error {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Errorf("read unversioned %s: %w", rel, err)
	}
	fmt.Fprintf(w, "Index: %s\n===================================================================\n", rel)
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		fmt.Fprintf(w, "Cannot display: file marked as a binary type.\nsvn:mime-type = application/octet-stream\n")
		return nil
	}
	fmt.Fprintf(w, "--- %s\t(nonexistent)\n+++ %s\t(working copy)\n", rel, rel)
	if len(data) == 0 {
		return nil
	}
	text := string(data)
	noEOL := !strings.HasSuffix(text, "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	fmt.Fprintf(w, "@@ -0,0 +1,%d @@\n", len(lines))
	for _, l := range lines {
		fmt.Fprintf(w, "+%s\n", l)
	}
	if noEOL {
		fmt.Fprintf(w, "\\ No newline at end of file\n")
	}
	return nil
}

type wcStatus struct {
	Targets []struct {
		Entries []struct {
			Path   string `xml:"path,attr"`
			Status struct {
				Item string `xml:"item,attr"`
			} `xml:"wc-status"`
		} `xml:"entry"`
	} `xml:"target"`
}

// inWorkingCopy runs `svn sub args...` in the working copy root and
// returns its stdout (see FetchWorkingCopy for why without the adapter's
// config dir and credentials).
func (a *Adapter) inWorkingCopy(ctx context.Context, root, sub string, args ...string) ([]byte, error) {
	if a.svn == "" {
		return nil, fmt.Errorf("%w: svn client %q not found: a working copy is read with svn (set svn_path)", vcs.ErrToolMissing, a.cfg.SvnPath)
	}
	var out bytes.Buffer
	argv := append([]string{sub, "--non-interactive"}, args...)
	if err := a.execIn(ctx, root, a.svn, &out, nil, argv); err != nil {
		return nil, fmt.Errorf("in %s: %w", root, err)
	}
	return out.Bytes(), nil
}

// WorkingCopyFiles answers the agent's context requests from the working
// copy at root on disk (what the developer has now), never outside it nor
// outside the repo's include/exclude.
func (a *Adapter) WorkingCopyFiles(root string) WorkingCopyFiles {
	return WorkingCopyFiles{root: root, a: a}
}

// WorkingCopyFiles is what WorkingCopyFiles returns: an agent.Replayer of
// the working copy's files.
type WorkingCopyFiles struct {
	root string
	a    *Adapter
}

// Cat writes path's current content, at most max_file_bytes of it; rev
// is ignored (the working copy has one).
func (w WorkingCopyFiles) Cat(_ context.Context, path, _ string, out io.Writer) error {
	clean := filepath.Clean(filepath.FromSlash(path))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return vcs.ErrPathOutOfScope
	}
	if !w.a.filter.Match(filepath.ToSlash(clean)) {
		return fmt.Errorf("%w: %s is outside the repository's include/exclude", vcs.ErrPathOutOfScope, path)
	}
	p := filepath.Join(w.root, clean)
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return vcs.ErrNoSuchPath
	}
	rootReal, err := filepath.EvalSymlinks(w.root)
	if err != nil || (real != rootReal && !strings.HasPrefix(real, rootReal+string(filepath.Separator))) {
		return vcs.ErrPathOutOfScope
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return vcs.ErrNoSuchPath
	}
	f, err := os.Open(real)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(out, io.LimitReader(f, w.a.cfg.MaxFileBytes))
	return err
}

// Blame is refused: local modifications have no history to blame.
func (w WorkingCopyFiles) Blame(context.Context, string, string, int, int) (vcs.BlameResult, error) {
	return vcs.BlameResult{}, errors.New("blame is not available for local modifications of a working copy")
}
