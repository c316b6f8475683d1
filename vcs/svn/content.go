package svn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aicr-dev/aicr/vcs"
)

// fetchContents decides, per file, whether its content is fetched and
// fetches the chosen ones in path order, FetchParallelism at a time. It
// returns the files whose line maps it took from their content (see
// linesFromContent), in path order, for appendAdded.
//
// Files in dumped (svnlook access with svnadmin) already have their
// content and size from the revision's dump; the others take one cat each.
// Dumped texts of files that end up not reviewed are removed.
func (a *Adapter) fetchContents(ctx context.Context, info *repoInfo, rev int64, c *vcs.Change, diffs map[string]vcs.FileDiff, dumped map[string]*dumpedFile, dst vcs.Dest) (added []*addedFile, err error) {
	defer func() {
		kept := map[string]bool{}
		if err == nil {
			for _, f := range c.Files {
				if f.Skipped == "" {
					kept[f.Path] = true
				}
			}
		}
		if rerr := removeDumped(dst, dumped, func(rel string) bool { return kept[rel] }); err == nil && rerr != nil {
			added, err = nil, rerr
		}
	}()
	cl := a.classifyFiles(c, diffs, dumped)
	if err := a.resolveMimeTypes(ctx, info, rev, cl, dumped); err != nil {
		return nil, err
	}
	wanted := a.scopeBeforeFetch(cl.candidates)
	fetched, err := a.fetchWanted(ctx, info, rev, wanted, dumped, dst)
	if err != nil {
		return nil, err
	}
	if err := a.applyByteCaps(wanted, fetched, dst); err != nil {
		return nil, err
	}
	// Every line of an added file is added. One whose content is not
	// here (too large, over a cap) gets no line map: nothing anchors to
	// it, and learning its length would mean reading it whole.
	for i, f := range wanted {
		if cl.byPath[f.Path] != nil && f.Skipped == "" && fetched.lines[i] > 0 {
			f.Added = []vcs.LineRange{{Start: 1, End: fetched.lines[i]}}
			f.Hunks = []vcs.LineRange{{Start: 1, End: fetched.lines[i]}}
		}
	}
	return cl.added, nil
}

// classified is the first step of fetchContents: the files whose content
// may be fetched, those whose line maps come from their content, and
// those whose mime type is still to learn.
type classified struct {
	candidates []*vcs.FileChange
	added      []*addedFile
	byPath     map[string]*addedFile
	needMime   []*vcs.FileChange
}

// classifyFiles skips what has no content to review (out of the filter,
// directories, deletions), takes each file's line maps from the diff and
// its binary flag from the diff, the dump or svnlook's property section,
// and lists the files only a mime type can tell.
func (a *Adapter) classifyFiles(c *vcs.Change, diffs map[string]vcs.FileDiff, dumped map[string]*dumpedFile) classified {
	cl := classified{byPath: map[string]*addedFile{}}
	for i := range c.Files {
		f := &c.Files[i]
		d, inDiff := diffs[f.Path]
		f.Binary = d.Binary
		switch {
		case !a.filter.Match(f.Path):
			f.Skipped = vcs.SkipExcluded
			continue
		case f.NodeKind == vcs.NodeDir:
			f.Skipped = vcs.SkipDirectory
			continue
		case f.Action == vcs.ActionDelete:
			f.Skipped = vcs.SkipDeleted
			continue
		}
		f.Added, f.Hunks = d.Added, d.Hunks
		var af *addedFile
		if linesFromContent(*f, diffs) {
			af = &addedFile{f: f}
			cl.added = append(cl.added, af)
			cl.byPath[f.Path] = af
		}
		dd := dumped[f.Path]
		switch {
		case f.Binary:
		case (af != nil || !inDiff || len(d.Hunks) == 0) && dd != nil && dd.propsKnown:
			// The dump listed the file's properties at rev.
			if af != nil {
				af.mime = dd.mime
			}
			f.Binary = dd.mime != "" && MimeTypeIsBinary(dd.mime)
		case af != nil && a.access == AccessSvnlook && f.Action == vcs.ActionAdd && f.CopyFromPath == "":
			// svnlook prints the property section of a file added
			// without history even with --no-diff-added, listing all its
			// properties: no svn:mime-type there means none.
			af.mime = strings.TrimSpace(d.PropMimeType)
			f.Binary = af.mime != "" && MimeTypeIsBinary(af.mime)
		case af != nil || !inDiff || len(d.Hunks) == 0:
			// No content in the diff (added, property-only change, empty
			// file): the diff cannot tell a binary file, the mime type can.
			cl.needMime = append(cl.needMime, f)
		}
		cl.candidates = append(cl.candidates, f)
	}
	return cl
}

// resolveMimeTypes learns the mime types classifyFiles could not, the
// ones the dump did not list in one batch, and marks binaries.
func (a *Adapter) resolveMimeTypes(ctx context.Context, info *repoInfo, rev int64, cl classified, dumped map[string]*dumpedFile) error {
	var unknownMime []*vcs.FileChange
	for _, f := range cl.needMime {
		if d := dumped[f.Path]; d == nil || !d.propsKnown {
			unknownMime = append(unknownMime, f)
		}
	}
	mimes, err := a.mimeTypes(ctx, info, rev, unknownMime)
	if err != nil {
		return err
	}
	for _, f := range cl.needMime {
		m := mimes[f.Path]
		if d := dumped[f.Path]; d != nil && d.propsKnown {
			m = d.mime
		}
		f.Binary = m != "" && MimeTypeIsBinary(m)
		if af := cl.byPath[f.Path]; af != nil {
			af.mime = m
		}
	}
	return nil
}

// scopeBeforeFetch skips binaries and applies the part of the scope that
// needs no size (path filter, max_files): sizes are learnt by fetching,
// so the byte caps come after (applyByteCaps). It returns the files to
// fetch, in path order.
func (a *Adapter) scopeBeforeFetch(candidates []*vcs.FileChange) []*vcs.FileChange {
	var wanted []*vcs.FileChange
	for _, f := range candidates {
		if f.Binary {
			f.Skipped = vcs.SkipBinary
			continue
		}
		wanted = append(wanted, f)
	}
	a.cfg.Scope.Apply(wanted, func(*vcs.FileChange) int64 { return vcs.SizeUnknown })
	kept := wanted[:0:0]
	for _, f := range wanted {
		if f.Skipped == "" {
			kept = append(kept, f)
		}
	}
	return kept
}

// fetchedContents is what fetchWanted learnt, by index into wanted.
type fetchedContents struct {
	sizes   []int64
	lines   []int
	started []bool
}

// fetchWanted fetches wanted, FetchParallelism at a time, and stops
// starting fetches once what is fetched passes max_review_bytes: every
// later file falls past the cap anyway.
func (a *Adapter) fetchWanted(ctx context.Context, info *repoInfo, rev int64, wanted []*vcs.FileChange, dumped map[string]*dumpedFile, dst vcs.Dest) (fetchedContents, error) {
	out := fetchedContents{sizes: make([]int64, len(wanted)), lines: make([]int, len(wanted)), started: make([]bool, len(wanted))}
	errs := make([]error, len(wanted))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		fetched int64
	)
	sem := make(chan struct{}, a.cfg.FetchParallelism)
	for i, f := range wanted {
		mu.Lock()
		over := a.cfg.MaxReviewBytes > 0 && fetched > a.cfg.MaxReviewBytes
		mu.Unlock()
		if over || ctx.Err() != nil {
			// What is fetched already exceeds the review cap, so this file
			// and every later one fall past it; don't fetch them.
			break
		}
		sem <- struct{}{}
		out.started[i] = true
		wg.Add(1)
		go func(i int, f *vcs.FileChange) {
			defer func() { <-sem; wg.Done() }()
			n, nl, skipped, err := a.fetchFile(ctx, info, f.Path, rev, dumped[f.Path], dst)
			if err != nil {
				errs[i] = fmt.Errorf("fetch %s: %w", f.Path, err)
				return
			}
			f.Skipped = skipped
			out.sizes[i], out.lines[i] = n, nl
			mu.Lock()
			fetched += n
			mu.Unlock()
		}(i, f)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	return out, ctx.Err()
}

// applyByteCaps applies the scope's byte caps in path order, whatever
// order the fetches finished in, and removes the content of the files
// past max_review_bytes. A file never started sits after the ones that
// passed the cap.
func (a *Adapter) applyByteCaps(wanted []*vcs.FileChange, fetched fetchedContents, dst vcs.Dest) error {
	index := make(map[*vcs.FileChange]int, len(wanted))
	for i, f := range wanted {
		index[f] = i
	}
	a.cfg.Scope.Apply(wanted, func(f *vcs.FileChange) int64 { return fetched.sizes[index[f]] })
	for i, f := range wanted {
		if f.Skipped != vcs.SkipReviewBytesCap || !fetched.started[i] {
			continue
		}
		p, _ := srcPath(dst, f.Path)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s over max_review_bytes: %w", f.Path, err)
		}
	}
	return nil
}

// fetchFile streams the file to dst.SrcPath(rel), returning its size and
// line count, or a Skipped reason when the content is not kept. A file
// over MaxFileBytes costs no extra process to size: cat stops it after
// MaxFileBytes bytes, and it is listed "too large".
func (a *Adapter) fetchFile(ctx context.Context, info *repoInfo, rel string, rev int64, dumped *dumpedFile, run vcs.Dest) (int64, int, string, error) {
	switch {
	case dumped.hasText() && dumped.tooLarge:
		return 0, 0, vcs.SkipTooLarge, nil
	case dumped.hasText():
		return dumped.size, dumped.lines, "", nil
	}
	dst, err := srcPath(run, rel)
	if err != nil {
		return 0, 0, "", err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, 0, "", fmt.Errorf("create dir: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, 0, "", fmt.Errorf("create file: %w", err)
	}
	cw := &countWriter{w: out}
	err = a.cat(ctx, info, rel, rev, cw)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write file: %w", cerr)
	}
	if err == nil {
		return cw.n, cw.lines.lines(), "", nil
	}
	if rmErr := os.Remove(dst); rmErr != nil {
		return 0, 0, "", fmt.Errorf("remove partial file: %w", rmErr)
	}
	switch {
	case errors.Is(err, vcs.ErrTooLarge):
		return 0, 0, vcs.SkipTooLarge, nil
	case errors.Is(err, errIsDir):
		// Old servers log paths without their kind.
		return 0, 0, vcs.SkipDirectory, nil
	}
	return 0, 0, "", err
}

// countWriter counts the bytes and lines that reach w, so an added file's
// line map costs no second read.
type countWriter struct {
	w     io.Writer
	n     int64
	lines lineCounter
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.lines.add(p[:n])
	return n, err
}

var errIsDir = errors.New("is a directory")

// cat writes rel@rev to w, at most MaxFileBytes of it.
func (a *Adapter) cat(ctx context.Context, info *repoInfo, rel string, rev int64, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lw := &limitWriter{w: w, left: a.cfg.MaxFileBytes, cancel: cancel}
	var err error
	if a.access == AccessSvnlook {
		err = a.look(ctx, lw, "cat", rev, info.repoPath(rel))
	} else {
		err = a.run(ctx, lw, "cat", fileURL(info.url, rel, rev))
	}
	switch {
	case lw.exceeded:
		return fmt.Errorf("%s: %w (over %d bytes)", rel, vcs.ErrTooLarge, a.cfg.MaxFileBytes)
	case svnSays(err, "W195007"), svnSays(err, "E160017"):
		return fmt.Errorf("%s: %w", rel, errIsDir)
	case svnSays(err, "W160013"), svnSays(err, "E160013"):
		return fmt.Errorf("%s at r%d: %w", rel, rev, vcs.ErrNoSuchPath)
	case svnSays(err, "E160006"):
		return fmt.Errorf("%w: r%d", vcs.ErrNoSuchRevision, rev)
	}
	return err
}

// Cat writes the content of path (relative to the reviewed directory) at
// revision rev to w, for context requests after the review started. Paths
// that leave the directory (absolute, "..") or lie outside the repo's
// include/exclude fail with vcs.ErrPathOutOfScope; paths that are not
// files at rev with
// vcs.ErrNoSuchPath; files over MaxFileBytes with vcs.ErrTooLarge after
// MaxFileBytes were written.
func (a *Adapter) Cat(ctx context.Context, path string, rev string, w io.Writer) error {
	r, err := parseRev(rev)
	if err != nil {
		return err
	}
	if err := a.scopedFile(path); err != nil {
		return err
	}
	info, err := a.info(ctx)
	if err != nil {
		return err
	}
	err = a.cat(ctx, info, path, r, w)
	if errors.Is(err, errIsDir) {
		return fmt.Errorf("%s is a directory: %w", path, vcs.ErrNoSuchPath)
	}
	return err
}

// scopedFile checks a file path an agent chose (fetch_more_context,
// try_blame): inside the reviewed directory and inside the repo's
// include/exclude, so a file the scope keeps out of the review (a
// secrets directory, an excluded vendor tree) never reaches the model.
func (a *Adapter) scopedFile(p string) error {
	if err := checkScopedPath(p); err != nil {
		return err
	}
	if !a.filter.Match(p) {
		return fmt.Errorf("%w: %s is outside the repository's include/exclude", vcs.ErrPathOutOfScope, p)
	}
	return nil
}

// checkScopedPath is checkRelPath for paths an agent chose.
func checkScopedPath(p string) error {
	if err := checkRelPath(p); err != nil {
		return fmt.Errorf("%w: %w", vcs.ErrPathOutOfScope, err)
	}
	return nil
}
