package svn

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aicr-dev/aicr/vcs"
)

// Adapter fetches revisions of one Subversion URL. It is safe for
// concurrent use.
type Adapter struct {
	cfg    Config
	svn    string
	filter vcs.Filter

	mu   sync.Mutex
	repo *repoInfo // cached after the first successful svn info
}

var _ vcs.Adapter = (*Adapter)(nil)

// repoInfo is what svn info says about the configured URL.
type repoInfo struct {
	url  string // canonical, escaped URL of the reviewed directory
	root string // repository root URL
	path string // the URL's path inside the repository: "/trunk", or "" for the root
}

// New validates cfg and finds the svn client. It does not contact the
// repository; the first Fetch does.
func New(cfg Config) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("svn config: %w", err)
	}
	if cfg.SvnPath == "" {
		cfg.SvnPath = "svn"
	}
	if cfg.MaxFileBytes == 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	bin, err := exec.LookPath(cfg.SvnPath)
	if err != nil {
		return nil, fmt.Errorf("%w: svn client %q not found: install it with apt-get install subversion, or set svn_path: %v",
			vcs.ErrToolMissing, cfg.SvnPath, err)
	}
	return &Adapter{cfg: cfg, svn: bin, filter: cfg.filter()}, nil
}

// Fetch reads revision rev of the configured URL into dir (see
// vcs.Adapter). Paths in the returned Change are relative to the URL.
// Change.Repo is left empty for the caller, which knows the repo's name.
//
// Files are the paths svn log lists under the URL. Files that svn diff
// shows only because a parent directory was copied (a branch, a tag) are
// not listed and their sections are dropped from diff.patch, as are the
// sections of files outside Include/Exclude.
func (a *Adapter) Fetch(ctx context.Context, rev string, dir string) (*vcs.Change, error) {
	r, err := parseRev(rev)
	if err != nil {
		return nil, err
	}
	info, err := a.info(ctx)
	if err != nil {
		return nil, err
	}
	change, err := a.log(ctx, info, r)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	diffs, err := a.diff(ctx, info, r, change, filepath.Join(dir, "diff.patch"))
	if err != nil {
		return nil, err
	}
	for i := range change.Files {
		if err := a.fill(ctx, info, r, &change.Files[i], diffs, dir); err != nil {
			return nil, err
		}
	}
	return change, nil
}

// fill decides whether f is fetched, copies its diff facts in and fetches
// its content to dir/src/<path>.
func (a *Adapter) fill(ctx context.Context, info *repoInfo, rev int64, f *vcs.FileChange, diffs map[string]vcs.FileDiff, dir string) error {
	d, inDiff := diffs[f.Path]
	f.Binary = d.Binary
	switch {
	case !a.filter.Match(f.Path):
		f.Skipped = vcs.SkipExcluded
		return nil
	case f.NodeKind == vcs.NodeDir:
		f.Skipped = vcs.SkipDirectory
		return nil
	case f.Action == vcs.ActionDelete:
		f.Skipped = vcs.SkipDeleted
		return nil
	}
	f.Added, f.Hunks = d.Added, d.Hunks
	if !f.Binary && (!inDiff || len(d.Hunks) == 0) {
		// No content in the diff (property-only change, empty file): the
		// diff cannot tell a binary file, the mime type can.
		bin, err := a.isBinary(ctx, info, f.Path, rev)
		if err != nil {
			return err
		}
		f.Binary = bin
	}
	if f.Binary {
		f.Skipped = vcs.SkipBinary
		return nil
	}
	dst, err := srcPath(dir, f.Path)
	if err != nil {
		return err
	}
	skipped, err := a.fetchFile(ctx, info, f.Path, rev, dst)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", f.Path, err)
	}
	f.Skipped = skipped
	return nil
}

// fetchFile streams the file into dst, returning a Skipped reason when the
// content is not kept.
func (a *Adapter) fetchFile(ctx context.Context, info *repoInfo, rel string, rev int64, dst string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("create dir: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return "", fmt.Errorf("create file: %w", err)
	}
	err = a.cat(ctx, info, rel, rev, out)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write file: %w", cerr)
	}
	if err == nil {
		return "", nil
	}
	if rmErr := os.Remove(dst); rmErr != nil {
		return "", fmt.Errorf("remove partial file: %w", rmErr)
	}
	switch {
	case errors.Is(err, vcs.ErrTooLarge):
		return vcs.SkipTooLarge, nil
	case errors.Is(err, errIsDir):
		// Old servers log paths without their kind.
		return vcs.SkipDirectory, nil
	}
	return "", err
}

var errIsDir = errors.New("is a directory")

// cat writes path@rev to w, at most MaxFileBytes of it.
func (a *Adapter) cat(ctx context.Context, info *repoInfo, rel string, rev int64, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lw := &limitWriter{w: w, left: a.cfg.MaxFileBytes, cancel: cancel}
	err := a.run(ctx, lw, "cat", fileURL(info.url, rel, rev))
	switch {
	case lw.exceeded:
		return fmt.Errorf("%s: %w (over %d bytes)", rel, vcs.ErrTooLarge, a.cfg.MaxFileBytes)
	case svnSays(err, "W195007"):
		return fmt.Errorf("%s: %w", rel, errIsDir)
	case svnSays(err, "W160013"), svnSays(err, "E160013"):
		return fmt.Errorf("%s at r%d: %w", rel, rev, vcs.ErrNoSuchPath)
	}
	return err
}

// Cat writes the content of path (relative to the URL) at revision rev
// to w, for context requests after the review started. It fails with
// vcs.ErrNoSuchPath for paths that are not files at rev and with
// vcs.ErrTooLarge, after writing MaxFileBytes, for bigger files.
func (a *Adapter) Cat(ctx context.Context, path string, rev string, w io.Writer) error {
	r, err := parseRev(rev)
	if err != nil {
		return err
	}
	if err := checkRelPath(path); err != nil {
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

// Youngest returns the newest revision of the repository.
func (a *Adapter) Youngest(ctx context.Context) (int64, error) {
	out, err := a.output(ctx, "info", "--show-item", "revision", headURL(a.cfg.URL))
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("svn info: unexpected revision %q", strings.TrimSpace(string(out)))
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

// checkRelPath rejects paths that could name something outside the URL
// or outside dir/src once joined.
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

// srcPath is dir/src/<rel>, refusing anything that would land elsewhere.
func srcPath(dir, rel string) (string, error) {
	if err := checkRelPath(rel); err != nil {
		return "", err
	}
	src := filepath.Join(dir, "src")
	p := filepath.Join(src, filepath.FromSlash(rel))
	if !strings.HasPrefix(p, src+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q: resolves outside the run directory", rel)
	}
	return p, nil
}

// fileURL is base/rel@rev with rel escaped segment by segment, so spaces,
// '#', '%', '?' and non-ASCII survive; '@' inside rel is harmless because
// svn takes the last '@' as the peg revision.
func fileURL(base, rel string, rev int64) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return base + "/" + strings.Join(segs, "/") + "@" + strconv.FormatInt(rev, 10)
}

// headURL appends an empty peg revision (HEAD) so an '@' inside the URL
// is not taken for one.
func headURL(u string) string { return u + "@" }

func pegURL(base string, rev int64) string {
	return base + "@" + strconv.FormatInt(rev, 10)
}

type infoXML struct {
	Entry struct {
		Kind        string `xml:"kind,attr"`
		URL         string `xml:"url"`
		RelativeURL string `xml:"relative-url"`
		Root        string `xml:"repository>root"`
	} `xml:"entry"`
}

// info learns where the URL sits in its repository; cached because it
// cannot change while the daemon runs.
func (a *Adapter) info(ctx context.Context) (*repoInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.repo != nil {
		return a.repo, nil
	}
	out, err := a.output(ctx, "info", "--xml", headURL(a.cfg.URL))
	if err != nil {
		return nil, err
	}
	var x infoXML
	if err := xml.Unmarshal(out, &x); err != nil {
		return nil, fmt.Errorf("svn info: parse xml: %w", err)
	}
	e := x.Entry
	if e.URL == "" || e.Root == "" || !strings.HasPrefix(e.URL, e.Root) {
		return nil, fmt.Errorf("svn info: no url/root for %s", a.cfg.URL)
	}
	if e.Kind != "dir" {
		return nil, fmt.Errorf("svn info: %s is a %s: point url at a directory such as trunk", a.cfg.URL, e.Kind)
	}
	rel := strings.TrimPrefix(e.RelativeURL, "^")
	if rel == "" {
		rel = strings.TrimPrefix(e.URL, e.Root)
	}
	p, err := url.PathUnescape(rel)
	if err != nil {
		return nil, fmt.Errorf("svn info: bad relative url %q: %w", e.RelativeURL, err)
	}
	a.repo = &repoInfo{url: strings.TrimRight(e.URL, "/"), root: e.Root, path: strings.TrimRight(p, "/")}
	return a.repo, nil
}

type logXML struct {
	Entries []struct {
		Author string `xml:"author"`
		Date   string `xml:"date"`
		Msg    string `xml:"msg"`
		Paths  []struct {
			Action       string `xml:"action,attr"`
			Kind         string `xml:"kind,attr"`
			CopyFromPath string `xml:"copyfrom-path,attr"`
			CopyFromRev  string `xml:"copyfrom-rev,attr"`
			Path         string `xml:",chardata"`
		} `xml:"paths>path"`
	} `xml:"logentry"`
}

// log reads the revision's metadata and the paths it changed under the URL.
func (a *Adapter) log(ctx context.Context, info *repoInfo, rev int64) (*vcs.Change, error) {
	revStr := strconv.FormatInt(rev, 10)
	c := &vcs.Change{VCS: vcs.KindSVN, Revision: revStr}
	out, err := a.output(ctx, "log", "--xml", "-v", "-r", revStr, pegURL(info.url, rev))
	switch {
	case svnSays(err, "E160006"):
		return nil, a.noSuchRevision(ctx, rev)
	case svnSays(err, "E160013"), svnSays(err, "E195012"):
		// The URL did not exist at rev, so nothing under it changed.
		return c, a.revProps(ctx, info, rev, c)
	case err != nil:
		return nil, err
	}
	var x logXML
	if err := xml.Unmarshal(out, &x); err != nil {
		return nil, fmt.Errorf("svn log: parse xml: %w", err)
	}
	if len(x.Entries) == 0 {
		// svn log on a directory lists only revisions that touched it.
		return c, a.revProps(ctx, info, rev, c)
	}
	e := x.Entries[0]
	if err := setMeta(c, e.Author, e.Date, e.Msg); err != nil {
		return nil, err
	}
	for _, p := range e.Paths {
		rel, ok := info.relPath(p.Path)
		if !ok {
			continue
		}
		if err := checkRelPath(rel); err != nil {
			return nil, fmt.Errorf("svn log: %w", err)
		}
		f := vcs.FileChange{Path: rel, Action: action(p.Action), NodeKind: vcs.NodeFile}
		if p.Kind == "dir" {
			f.NodeKind = vcs.NodeDir
		}
		if p.CopyFromPath != "" {
			f.CopyFromPath = p.CopyFromPath
			if from, ok := info.relPath(p.CopyFromPath); ok {
				f.CopyFromPath = from
			}
			f.CopyFromRev = p.CopyFromRev
		}
		c.Files = append(c.Files, f)
	}
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	return c, nil
}

// relPath turns a repository path ("/trunk/a.c") into one relative to the
// URL ("a.c"); ok is false for paths outside the URL and the URL itself.
func (r *repoInfo) relPath(p string) (string, bool) {
	rel, ok := strings.CutPrefix(p, r.path+"/")
	return rel, ok && rel != ""
}

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

func setMeta(c *vcs.Change, author, date, msg string) error {
	c.Author = author
	c.Description = msg
	if date == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, date)
	if err != nil {
		return fmt.Errorf("svn log: bad date %q: %w", date, err)
	}
	c.Date = t
	return nil
}

type revpropsXML struct {
	Props []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:",chardata"`
	} `xml:"revprops>property"`
}

// revProps fills author, date and message for a revision that svn log on
// the URL does not show.
func (a *Adapter) revProps(ctx context.Context, info *repoInfo, rev int64, c *vcs.Change) error {
	out, err := a.output(ctx, "proplist", "--revprop", "--xml", "-v", "-r", strconv.FormatInt(rev, 10), info.root)
	if svnSays(err, "E160006") {
		return a.noSuchRevision(ctx, rev)
	}
	if err != nil {
		return err
	}
	var x revpropsXML
	if err := xml.Unmarshal(out, &x); err != nil {
		return fmt.Errorf("svn proplist: parse xml: %w", err)
	}
	var author, date, msg string
	for _, p := range x.Props {
		switch p.Name {
		case "svn:author":
			author = p.Value
		case "svn:date":
			date = p.Value
		case "svn:log":
			msg = p.Value
		}
	}
	return setMeta(c, author, date, msg)
}

func (a *Adapter) noSuchRevision(ctx context.Context, rev int64) error {
	if y, err := a.Youngest(ctx); err == nil {
		return fmt.Errorf("%w: r%d (youngest is r%d)", vcs.ErrNoSuchRevision, rev, y)
	}
	return fmt.Errorf("%w: r%d", vcs.ErrNoSuchRevision, rev)
}

// diff writes the revision's diff under the URL to path, keeping only the
// sections of listed, in-scope files, and returns the parsed diff.
func (a *Adapter) diff(ctx context.Context, info *repoInfo, rev int64, c *vcs.Change, path string) (map[string]vcs.FileDiff, error) {
	if len(c.Files) == 0 {
		// Nothing under the URL changed; svn diff could even fail if the
		// URL did not exist before rev.
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			return nil, fmt.Errorf("write diff: %w", err)
		}
		return map[string]vcs.FileDiff{}, nil
	}
	out, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("write diff: %w", err)
	}
	// --internal-diff: a diff-cmd in the user's svn config must not change
	// the format we parse.
	err = a.run(ctx, out, "diff", "--internal-diff", "-c", strconv.FormatInt(rev, 10), pegURL(info.url, rev))
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write diff: %w", cerr)
	}
	if err != nil {
		return nil, err
	}
	patch, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read diff: %w", err)
	}
	diffs, err := vcs.ParseDiff(patch)
	if err != nil {
		return nil, fmt.Errorf("parse diff: %w", err)
	}
	kept := keepSections(patch, diffs, c, a.filter)
	if len(kept) != len(patch) {
		if err := os.WriteFile(path, kept, 0o644); err != nil {
			return nil, fmt.Errorf("write diff: %w", err)
		}
	}
	return diffs, nil
}

// keepSections returns patch without the sections of files that are out
// of scope or not listed in the change. Files under a listed deleted
// directory stay, so reviewers can see what went away.
func keepSections(patch []byte, diffs map[string]vcs.FileDiff, c *vcs.Change, filter vcs.Filter) []byte {
	listed := map[string]bool{}
	var deletedDirs []string
	for _, f := range c.Files {
		listed[f.Path] = true
		if f.Action == vcs.ActionDelete || f.Action == vcs.ActionReplace {
			deletedDirs = append(deletedDirs, f.Path+"/")
		}
	}
	keep := func(p string) bool {
		if !filter.Match(p) {
			return false
		}
		if listed[p] {
			return true
		}
		for _, d := range deletedDirs {
			if strings.HasPrefix(p, d) && diffs[p].Deleted {
				return true
			}
		}
		return false
	}
	var sections []vcs.FileDiff
	for _, d := range diffs {
		sections = append(sections, d)
	}
	sort.Slice(sections, func(i, j int) bool { return sections[i].Start < sections[j].Start })
	out := make([]byte, 0, len(patch))
	prev := 0
	for _, d := range sections {
		if d.Start < prev {
			// Overlapping sections only come from odd diffs; keep it all
			// rather than cut one in half.
			return patch
		}
		prev = d.End
	}
	for _, d := range sections {
		if keep(d.Path) {
			out = append(out, patch[d.Start:d.End]...)
		}
	}
	return out
}

// isBinary applies Subversion's rule (svn_mime_type_is_binary) to the
// file's svn:mime-type at rev.
func (a *Adapter) isBinary(ctx context.Context, info *repoInfo, rel string, rev int64) (bool, error) {
	out, err := a.output(ctx, "proplist", "--xml", "-v", fileURL(info.url, rel, rev))
	if err != nil {
		return false, err
	}
	var x struct {
		Props []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:",chardata"`
		} `xml:"target>property"`
	}
	if err := xml.Unmarshal(out, &x); err != nil {
		return false, fmt.Errorf("svn proplist: parse xml: %w", err)
	}
	for _, p := range x.Props {
		if p.Name == "svn:mime-type" {
			return MimeTypeIsBinary(p.Value), nil
		}
	}
	return false, nil
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
