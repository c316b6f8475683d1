package session

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// svnTimeout bounds each svn command of a working copy read.
const svnTimeout = 5 * time.Minute

// fetchWorkingCopy reads the local modifications of the working copy at
// root into layout: `svn diff` for versioned changes, and every
// unversioned (not ignored) file as an added file, so a new file the
// developer has not `svn add`ed yet is reviewed too.
func fetchWorkingCopy(ctx context.Context, root string, layout rundir.Layout) (*vcs.Change, error) {
	statusXML, err := svnIn(ctx, root, "status", "--xml", ".")
	if err != nil {
		return nil, err
	}
	var st svnStatus
	if err := xml.Unmarshal(statusXML, &st); err != nil {
		return nil, fmt.Errorf("svn status --xml in %s: %w", root, err)
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
					return nil, err
				}
				unversioned = append(unversioned, files...)
			}
		}
	}
	diff, err := svnIn(ctx, root, "diff", "--internal-diff", ".")
	if err != nil {
		return nil, err
	}
	var patch bytes.Buffer
	patch.Write(diff)
	sort.Strings(unversioned)
	for _, p := range unversioned {
		if err := writeAddedDiff(&patch, root, p); err != nil {
			return nil, err
		}
		actions[p] = vcs.ActionAdd
	}
	if err := os.WriteFile(layout.DiffPath(), patch.Bytes(), 0o640); err != nil {
		return nil, fmt.Errorf("write diff: %w", err)
	}
	parsed, err := vcs.ParseDiff(patch.Bytes())
	if err != nil {
		return nil, fmt.Errorf("parse the working copy's diff: %w", err)
	}
	rev := ""
	if out, err := svnIn(ctx, root, "info", "--show-item", "revision", "."); err == nil {
		rev = strings.TrimSpace(string(out))
	}
	// "r12+local" in reports: the base revision, and that this is not it.
	change := &vcs.Change{VCS: vcs.KindSVN, Revision: rev + "+local", Date: time.Now().UTC(),
		Description: fmt.Sprintf("Local modifications of the working copy %s (not committed; based on r%s).", root, rev)}
	if u := os.Getenv("USER"); u != "" {
		change.Author = u
	}
	files := filesOf(actions, parsed)
	readFromDisk(files, root, layout)
	for _, f := range files {
		change.Files = append(change.Files, *f)
	}
	return change, nil
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

// readFromDisk copies each reviewed file's current content from root to
// the run directory under the default scope (size caps), skipping
// symlinks (they may point anywhere) and non-text files.
func readFromDisk(files []*vcs.FileChange, root string, layout rundir.Layout) {
	scope := vcs.Scope{}.WithDefaults(0)
	scope.Apply(files, func(f *vcs.FileChange) int64 {
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
		dst, err := layout.SrcPath(f.Path)
		if err != nil {
			f.Skipped = err.Error()
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o750); err == nil {
			err = os.WriteFile(dst, data, 0o640)
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

type svnStatus struct {
	Targets []struct {
		Entries []struct {
			Path   string `xml:"path,attr"`
			Status struct {
				Item string `xml:"item,attr"`
			} `xml:"wc-status"`
		} `xml:"entry"`
	} `xml:"target"`
}

// svnIn runs svn in dir with the allowlisted environment and a deadline.
func svnIn(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cctx, cancel := vcs.WithTimeout(ctx, svnTimeout)
	defer cancel()
	cmd := vcs.Command(cctx, "svn", append([]string{"--non-interactive"}, args...), vcs.ChildEnv())
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if cerr := vcs.CommandError(ctx, cctx, "svn "+args[0], svnTimeout); cerr != nil {
			return nil, cerr
		}
		return nil, fmt.Errorf("svn %s in %s: %w: %s", args[0], dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// workingCopyFiles answers the agent's context requests from the
// working copy on disk (what the developer has now), never outside it.
type workingCopyFiles struct{ root string }

func (w workingCopyFiles) Cat(_ context.Context, path, _ string, out io.Writer) error {
	clean := filepath.Clean(filepath.FromSlash(path))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return vcs.ErrPathOutOfScope
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
	_, err = io.Copy(out, io.LimitReader(f, vcs.DefaultMaxFileBytes))
	return err
}

func (w workingCopyFiles) Blame(context.Context, string, string, int, int) (vcs.BlameResult, error) {
	return vcs.BlameResult{}, fmt.Errorf("blame is not available for local modifications of a working copy")
}
