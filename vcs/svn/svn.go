package svn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/aicr-dev/aicr/vcs"
)

// Adapter fetches revisions of one Subversion directory, through the svn
// client (any URL) or through svnlook (the repository on this host). Both
// produce the same vcs.Change. It is safe for concurrent use.
type Adapter struct {
	cfg       Config
	access    string // AccessSVN or AccessSvnlook
	svn       string // svn binary; may be empty in svnlook mode (no blame, no listing)
	svnlook   string
	configDir string
	filter    vcs.Filter

	mu   sync.Mutex
	repo *repoInfo // cached after the first successful lookup

	countMu sync.Mutex
	counts  map[string]int
}

var (
	_ vcs.Adapter = (*Adapter)(nil)
	_ vcs.Lister  = (*Adapter)(nil)
)

// repoInfo says where the reviewed directory sits in its repository.
type repoInfo struct {
	url  string // canonical, escaped URL of the reviewed directory
	root string // repository root URL
	path string // the directory's path inside the repository: "/trunk", or "" for the root
}

// New validates cfg, chooses the access mode and finds the clients. It does
// not contact the repository; the first Fetch does.
func New(cfg Config) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("svn config: %w", err)
	}
	cfg = cfg.withDefaults()
	if cfg.SvnPath == "" {
		cfg.SvnPath = "svn"
	}
	if cfg.SvnlookPath == "" {
		cfg.SvnlookPath = "svnlook"
	}
	cfg.Scope = cfg.Scope.WithDefaults(0)
	if cfg.FetchParallelism == 0 {
		cfg.FetchParallelism = DefaultFetchParallelism
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	a := &Adapter{cfg: cfg, filter: cfg.Scope.Filter(), counts: map[string]int{}}

	scope, canLook := cfg.svnlookScope()
	a.access = cfg.Access
	if a.access == "" {
		a.access = AccessSVN
		if canLook && readableRepo(cfg.LocalPath) {
			a.access = AccessSvnlook
		}
	}
	if a.access == AccessSvnlook {
		if !canLook {
			return nil, fmt.Errorf("svn config: access = \"svnlook\" cannot tell which directory of %s url %s is: set repo_path (e.g. /trunk)", cfg.LocalPath, cfg.URL)
		}
		if !readableRepo(cfg.LocalPath) {
			return nil, fmt.Errorf("svn config: local_path %s is not a readable Subversion repository (no db/ or format): fix the path or permissions, or use access = \"svn\"", cfg.LocalPath)
		}
		bin, err := exec.LookPath(cfg.SvnlookPath)
		if err != nil {
			return nil, fmt.Errorf("%w: svnlook %q not found: install it with apt-get install subversion, or set svnlook_path: %v",
				vcs.ErrToolMissing, cfg.SvnlookPath, err)
		}
		a.svnlook = bin
		root := (&url.URL{Scheme: "file", Path: filepath.ToSlash(cfg.LocalPath)}).String()
		a.repo = &repoInfo{url: root + escapePath(scope), root: root, path: scope}
	}
	bin, err := exec.LookPath(cfg.SvnPath)
	switch {
	case err == nil:
		a.svn = bin
	case a.access == AccessSVN:
		return nil, fmt.Errorf("%w: svn client %q not found: install it with apt-get install subversion, or set svn_path: %v",
			vcs.ErrToolMissing, cfg.SvnPath, err)
	}
	if a.configDir, err = prepareConfigDir(cfg); err != nil {
		return nil, err
	}
	return a, nil
}

// Access reports the mode the adapter chose: AccessSVN or AccessSvnlook.
func (a *Adapter) Access() string { return a.access }

// svnlookScope returns the reviewed directory's path inside the
// repository when it is known without the network.
func (c Config) svnlookScope() (string, bool) {
	if c.LocalPath == "" {
		return "", false
	}
	if c.RepoPath != "" {
		return strings.TrimRight(c.RepoPath, "/"), true
	}
	u, err := url.Parse(c.URL)
	if err != nil || u.Scheme != "file" {
		return "", false
	}
	root := strings.TrimRight(filepath.ToSlash(filepath.Clean(c.LocalPath)), "/")
	p := strings.TrimRight(u.Path, "/")
	if p == root {
		return "", true
	}
	if rest, ok := strings.CutPrefix(p, root+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

func readableRepo(dir string) bool {
	if dir == "" {
		return false
	}
	f, err := os.Open(filepath.Join(dir, "format"))
	if err != nil {
		return false
	}
	f.Close()
	d, err := os.Open(filepath.Join(dir, "db"))
	if err != nil {
		return false
	}
	d.Close()
	return true
}

// svnConfigFiles make a config dir in which svn keeps no credentials and
// asks no keyring: the password comes from aicr's config on every call.
var svnConfigFiles = map[string]string{
	"config": "# Written by aicr; this directory belongs to one [[repo]].\n[auth]\npassword-stores =\n\n[miscellany]\nenable-auto-props = no\n",
	"servers": "# Written by aicr; this directory belongs to one [[repo]].\n[global]\nstore-auth-creds = no\nstore-passwords = no\nstore-plaintext-passwords = no\n" +
		"store-ssl-client-cert-pp = no\nstore-ssl-client-cert-pp-plaintext = no\n",
}

// prepareConfigDir returns the --config-dir: config_dir as given (the
// admin owns it), else a directory aicr owns under the daemon's state
// dir, else a private temporary one.
func prepareConfigDir(cfg Config) (string, error) {
	if cfg.ConfigDir != "" {
		return cfg.ConfigDir, nil
	}
	var dir string
	if cfg.stateDir != "" {
		dir = filepath.Join(cfg.stateDir, "svn-config")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("create svn config dir %s: %w (make the daemon's data_dir writable, or set config_dir)", dir, err)
		}
	} else {
		d, err := os.MkdirTemp("", "aicr-svn-config-")
		if err != nil {
			return "", fmt.Errorf("create svn config dir: %w", err)
		}
		dir = d
	}
	for name, content := range svnConfigFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return "", fmt.Errorf("write svn config %s: %w", name, err)
		}
	}
	return dir, nil
}

// Fetch reads revision rev of the configured directory into dst (see
// vcs.Adapter). Paths in the returned Change are relative to that
// directory. Change.Repo is left empty for the caller.
//
// The cost in child processes does not grow with the number of files for
// metadata and diff: one log (or svnlook info + changed) and one diff per
// revision. Contents are fetched one process per file, FetchParallelism at
// a time, streamed to disk.
//
// The diff leaves added files out (--no-diff-added): Subversion takes
// minutes to diff a text file of tens of megabytes against nothing. Their
// line maps (every line added) are counted while their content streams to
// src/, and their sections are appended to diff.patch from that copy, in
// path order. An added file over MaxFileBytes is cut off by cat after
// MaxFileBytes bytes, costing no extra process to size, and is listed "too
// large" with no line map and a one-line note in diff.patch.
//
// Telling binaries takes the svn:mime-type of files whose diff shows no
// content: through svn one batched `svn proplist` per few hundred files;
// through svnlook its diff lists the properties of files added without
// history, and other such files (copies, property-only changes) take one
// `svnlook propget` each.
//
// Known limit: a modified file is still diffed by Subversion, whatever its
// size. A one-line edit of a 50 MB file takes under a second (svn skips
// the common prefix and suffix), but rewriting much of such a file takes
// minutes, and neither `svnlook diff` (no path arguments) nor one
// `svn diff -c` over the directory can leave one file out; exclude such
// files.
//
// Files that svn diff shows only because a parent directory was copied
// (a branch, a tag) are not listed and their sections are dropped from
// diff.patch, as are the sections of files outside Include/Exclude.
func (a *Adapter) Fetch(ctx context.Context, rev string, dst vcs.Dest) (*vcs.Change, error) {
	r, err := parseRev(rev)
	if err != nil {
		return nil, err
	}
	info, err := a.info(ctx)
	if err != nil {
		return nil, err
	}
	var change *vcs.Change
	if a.access == AccessSvnlook {
		change, err = a.lookMeta(ctx, info, r)
	} else {
		change, err = a.log(ctx, info, r)
	}
	if err != nil {
		return nil, err
	}
	patch := dst.DiffPath()
	diffs, err := a.diff(ctx, info, r, change, patch)
	if err != nil {
		return nil, err
	}
	added, err := a.fetchContents(ctx, info, r, change, diffs, dst)
	if err != nil {
		return nil, err
	}
	if err := appendAdded(patch, dst, r, added); err != nil {
		return nil, err
	}
	return change, nil
}

// fetchContents decides, per file, whether its content is fetched and
// fetches the chosen ones in path order, FetchParallelism at a time. It
// returns the files whose line maps it took from their content (see
// linesFromContent), in path order, for appendAdded.
func (a *Adapter) fetchContents(ctx context.Context, info *repoInfo, rev int64, c *vcs.Change, diffs map[string]vcs.FileDiff, dst vcs.Dest) ([]*addedFile, error) {
	var (
		candidates []*vcs.FileChange
		added      []*addedFile
		byPath     = map[string]*addedFile{}
		needMime   []*vcs.FileChange
	)
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
			added = append(added, af)
			byPath[f.Path] = af
		}
		switch {
		case f.Binary:
		case af != nil && a.access == AccessSvnlook && f.Action == vcs.ActionAdd && f.CopyFromPath == "":
			// svnlook prints the property section of a file added
			// without history even with --no-diff-added, listing all its
			// properties: no svn:mime-type there means none.
			af.mime = strings.TrimSpace(d.PropMimeType)
			f.Binary = af.mime != "" && MimeTypeIsBinary(af.mime)
		case af != nil || !inDiff || len(d.Hunks) == 0:
			// No content in the diff (added, property-only change, empty
			// file): the diff cannot tell a binary file, the mime type can.
			needMime = append(needMime, f)
		}
		candidates = append(candidates, f)
	}
	mimes, err := a.mimeTypes(ctx, info, rev, needMime)
	if err != nil {
		return nil, err
	}
	for _, f := range needMime {
		m := mimes[f.Path]
		f.Binary = m != "" && MimeTypeIsBinary(m)
		if af := byPath[f.Path]; af != nil {
			af.mime = m
		}
	}
	var wanted []*vcs.FileChange
	for _, f := range candidates {
		if f.Binary {
			f.Skipped = vcs.SkipBinary
			continue
		}
		wanted = append(wanted, f)
	}
	// Sizes are learnt by fetching: the scope's path filter and
	// max_files now, its byte caps once the contents are here.
	a.cfg.Scope.Apply(wanted, func(*vcs.FileChange) int64 { return vcs.SizeUnknown })
	kept := wanted[:0:0]
	for _, f := range wanted {
		if f.Skipped == "" {
			kept = append(kept, f)
		}
	}
	wanted = kept

	sizes := make([]int64, len(wanted))
	lines := make([]int, len(wanted))
	started := make([]bool, len(wanted))
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
		started[i] = true
		wg.Add(1)
		go func(i int, f *vcs.FileChange) {
			defer func() { <-sem; wg.Done() }()
			n, nl, skipped, err := a.fetchFile(ctx, info, f.Path, rev, dst)
			if err != nil {
				errs[i] = fmt.Errorf("fetch %s: %w", f.Path, err)
				return
			}
			f.Skipped = skipped
			sizes[i], lines[i] = n, nl
			mu.Lock()
			fetched += n
			mu.Unlock()
		}(i, f)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The byte caps in path order, whatever order the fetches finished
	// in. A file never started sits after the ones that passed the cap.
	index := make(map[*vcs.FileChange]int, len(wanted))
	for i, f := range wanted {
		index[f] = i
	}
	a.cfg.Scope.Apply(wanted, func(f *vcs.FileChange) int64 { return sizes[index[f]] })
	for i, f := range wanted {
		if f.Skipped != vcs.SkipReviewBytesCap {
			continue
		}
		if started[i] {
			p, _ := srcPath(dst, f.Path)
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("remove %s over max_review_bytes: %w", f.Path, err)
			}
		}
	}
	// Every line of an added file is added. One whose content is not
	// here (too large, over a cap) gets no line map: nothing anchors to
	// it, and learning its length would mean reading it whole.
	for i, f := range wanted {
		if byPath[f.Path] != nil && f.Skipped == "" && lines[i] > 0 {
			f.Added = []vcs.LineRange{{Start: 1, End: lines[i]}}
			f.Hunks = []vcs.LineRange{{Start: 1, End: lines[i]}}
		}
	}
	return added, nil
}

// fetchFile streams the file to dst.SrcPath(rel), returning its size and
// line count, or a Skipped reason when the content is not kept. A file
// over MaxFileBytes costs no extra process to size: cat stops it after
// MaxFileBytes bytes, and it is listed "too large".
func (a *Adapter) fetchFile(ctx context.Context, info *repoInfo, rel string, rev int64, run vcs.Dest) (int64, int, string, error) {
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
// that leave the directory (absolute, "..") fail with
// vcs.ErrPathOutOfScope; paths that are not files at rev with
// vcs.ErrNoSuchPath; files over MaxFileBytes with vcs.ErrTooLarge after
// MaxFileBytes were written.
func (a *Adapter) Cat(ctx context.Context, path string, rev string, w io.Writer) error {
	r, err := parseRev(rev)
	if err != nil {
		return err
	}
	if err := checkScopedPath(path); err != nil {
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

// checkScopedPath is checkRelPath for paths an agent chose.
func checkScopedPath(p string) error {
	if err := checkRelPath(p); err != nil {
		return fmt.Errorf("%w: %v", vcs.ErrPathOutOfScope, err)
	}
	return nil
}

// Youngest returns the newest revision of the repository.
func (a *Adapter) Youngest(ctx context.Context) (int64, error) {
	var out []byte
	var err error
	if a.access == AccessSvnlook {
		var buf strings.Builder
		err = a.look(ctx, &buf, "youngest", 0)
		out = []byte(buf.String())
	} else {
		out, err = a.output(ctx, "info", "--show-item", "revision", headURL(a.cfg.URL))
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("youngest: unexpected revision %q", strings.TrimSpace(string(out)))
	}
	return n, nil
}

func parseRev(rev string) (int64, error) {
	n, err := strconv.ParseInt(rev, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %q is not a positive svn revision number", vcs.ErrBadRevision, rev)
	}
	return n, nil
}

// checkRelPath rejects paths that could name something outside the
// reviewed directory or outside dir/src once joined.
func checkRelPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("path %q: must be a non-empty path relative to the repository URL", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("path %q: must not contain empty, . or .. segments", p)
		}
	}
	return nil
}

// srcPath is where rel's content goes, after the svn-specific name
// checks; the run directory's own escape check follows in SrcPath.
func srcPath(dst vcs.Dest, rel string) (string, error) {
	if err := checkRelPath(rel); err != nil {
		return "", err
	}
	return dst.SrcPath(rel)
}

// escapePath escapes a slash-separated path segment by segment, so
// spaces, '#', '%', '?' and non-ASCII survive in a URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// fileURL is base/rel@rev. The peg revision is always given, so a file
// deleted after rev is still found, and an '@' inside rel is harmless
// because svn takes the last '@' as the peg revision.
func fileURL(base, rel string, rev int64) string {
	return base + "/" + escapePath(rel) + "@" + strconv.FormatInt(rev, 10)
}

// headURL appends an empty peg revision (HEAD) so an '@' inside the URL
// is not taken for one.
func headURL(u string) string { return u + "@" }

func pegURL(base string, rev int64) string {
	return base + "@" + strconv.FormatInt(rev, 10)
}

// relPath turns a repository path ("/trunk/a.c") into one relative to the
// reviewed directory ("a.c"); ok is false for paths outside it and the
// directory itself.
func (r *repoInfo) relPath(p string) (string, bool) {
	rel, ok := strings.CutPrefix(p, r.path+"/")
	return rel, ok && rel != ""
}

// repoPath is rel as a path inside the repository, for svnlook.
func (r *repoInfo) repoPath(rel string) string { return r.path + "/" + rel }

func action(a string) vcs.Action {
	switch a {
	case "A":
		return vcs.ActionAdd
	case "D":
		return vcs.ActionDelete
	case "R":
		return vcs.ActionReplace
	}
	return vcs.ActionModify
}

// MimeTypeIsBinary reports whether Subversion treats a file with this
// svn:mime-type as binary: anything but text/*, except two X bitmap
// types it knows to be text.
func MimeTypeIsBinary(mime string) bool {
	mime = strings.TrimSpace(mime)
	base, _, _ := strings.Cut(mime, ";")
	base, _, _ = strings.Cut(base, " ")
	return !strings.HasPrefix(base, "text/") && base != "image/x-xbitmap" && base != "image/x-xpixmap"
}
