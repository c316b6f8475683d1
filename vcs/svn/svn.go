package svn

import (
	"context"
	"errors"
	"fmt"
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
	cfg     Config
	access  string // AccessSVN or AccessSvnlook
	svn     string // svn binary; may be empty in svnlook mode (no blame, no listing)
	svnlook string
	// svnadmin dumps a revision of the local repository in one process
	// (svnlook access); empty when it is not installed, and contents are
	// then fetched one svnlook cat per file.
	svnadmin string
	// svnrdump does the same over a URL (svn access).
	svnrdump  string
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
			return nil, fmt.Errorf("%w: svnlook %q not found: install it with apt-get install subversion, or set svnlook_path: %w",
				vcs.ErrToolMissing, cfg.SvnlookPath, err)
		}
		a.svnlook = bin
		if cfg.SvnadminPath == "" {
			cfg.SvnadminPath = "svnadmin"
		}
		if bin, err := exec.LookPath(cfg.SvnadminPath); err == nil {
			a.svnadmin = bin
		}
		root := (&url.URL{Scheme: "file", Path: filepath.ToSlash(cfg.LocalPath)}).String()
		a.repo = &repoInfo{url: root + escapePath(scope), root: root, path: scope}
	}
	if a.access == AccessSVN {
		if cfg.SvnrdumpPath == "" {
			cfg.SvnrdumpPath = "svnrdump"
		}
		if bin, err := exec.LookPath(cfg.SvnrdumpPath); err == nil {
			a.svnrdump = bin
		}
	}
	bin, err := exec.LookPath(cfg.SvnPath)
	switch {
	case err == nil:
		a.svn = bin
	case a.access == AccessSVN:
		return nil, fmt.Errorf("%w: svn client %q not found: install it with apt-get install subversion, or set svn_path: %w",
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
// The cost in child processes does not grow with the number of files:
// metadata (svn log, or svnlook proplist and changed), one dump of the
// revision, one diff, and through svn one batched cat. With svnlook
// access, `svnadmin dump -r N --incremental` carries every changed file's
// properties and full text, streamed to src/ as it is parsed (dump.go);
// through svn, `svnrdump dump` gives sizes, MD5s and properties and one
// `svn cat URL@N...` the texts (catBatch). Copies and property-only
// changes carry no text in a dump and take one cat each; without svnadmin
// or svnrdump every file does, FetchParallelism at a time.
//
// Sizes come from the dump before anything is diffed: a file over
// MaxFileBytes is listed "too large" unread, and when a revision has one
// the other files are diffed by name, so it never reaches Subversion's
// diff (see diffTargets).
//
// The diff leaves added files out (--no-diff-added): Subversion takes
// minutes to diff a text file of tens of megabytes against nothing. Their
// line maps (every line added) are counted while their content streams to
// src/, and their sections are appended to diff.patch from that copy, in
// path order. An added file over MaxFileBytes is listed "too large" with
// no line map and a one-line note in diff.patch.
//
// Telling binaries takes the svn:mime-type of files whose diff shows no
// content: from the dump when it lists the file's properties, else
// through svn one batched `svn proplist` per few hundred files, through
// svnlook one `svnlook propget` each.
//
// Known limit: a modified file under MaxFileBytes is still diffed by
// Subversion; rewriting much of a file of many megabytes takes long.
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
	var dumped map[string]*dumpedFile
	if a.canDump() {
		dumped, err = a.dumpRevision(ctx, info, r, change, dst)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, vcs.ErrTimeout), errors.Is(err, vcs.ErrUnavailable):
			return nil, err
		case err != nil:
			// A dump this host cannot take (an svnrdump refused by the
			// server, a repository svnadmin cannot open) costs speed,
			// not the review: every file is fetched on its own, and a
			// real problem shows there with the path that has it.
			dumped = nil
		}
	}
	// The batched cat needs only the dump, so it runs beside the diff; a
	// binary file it fetches for nothing is removed with the others not
	// reviewed.
	catDone := make(chan error, 1)
	go func() { catDone <- a.catBatch(ctx, info, r, change, dumped, dst) }()
	patch := dst.DiffPath()
	diffs, err := a.diff(ctx, info, r, change, dumped, patch)
	if cerr := <-catDone; err == nil {
		err = cerr
	}
	if err != nil {
		removeDumped(dst, dumped)
		return nil, err
	}
	added, err := a.fetchContents(ctx, info, r, change, diffs, dumped, dst)
	if err != nil {
		return nil, err
	}
	if err := appendAdded(patch, dst, r, added); err != nil {
		return nil, err
	}
	change.Scope = a.filter.Recorded()
	return change, nil
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
