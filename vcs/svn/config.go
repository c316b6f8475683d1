// Package svn is the vcs.Adapter for Subversion. It drives the svn
// command-line tools (svn info, log, diff, cat, svnrdump; or svnlook and
// svnadmin on the repository's host) against one repository URL, so it
// works with file://, svn://, svn+ssh:// and http(s):// alike and needs no
// Subversion libraries.
package svn

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/vcs"
)

// DefaultMaxFileBytes is vcs.DefaultMaxFileBytes, the size above which a
// changed file's content is not fetched.
const DefaultMaxFileBytes = vcs.DefaultMaxFileBytes

// DefaultFetchParallelism is how many file contents are fetched at once.
const DefaultFetchParallelism = 4

// Access modes: how the adapter reads the repository.
const (
	// AccessSVN reads through the svn client and url (any scheme).
	AccessSVN = "svn"
	// AccessSvnlook reads the repository directory local_path with
	// svnlook: no network, no credentials, for daemons on the SVN server.
	AccessSvnlook = "svnlook"
)

// trustFailures are the values svn accepts for --trust-server-cert-failures.
var trustFailures = map[string]bool{"unknown-ca": true, "cn-mismatch": true, "expired": true, "not-yet-valid": true, "other": true}

// Config describes one Subversion repository to review.
type Config struct {
	// URL is the directory that is reviewed, e.g.
	// https://svn.example.com/repos/main/trunk. Changed paths are reported
	// relative to it; changes elsewhere in the repository are ignored.
	URL string `toml:"url"`
	// LocalPath is the repository's directory on this host, when the
	// daemon runs on the SVN server. It lets the hook find its [[repo]],
	// and makes the adapter read with svnlook (see Access); with no URL,
	// file://LocalPath is used.
	LocalPath string `toml:"local_path"`
	// RepoPath is the reviewed directory inside the repository ("/trunk")
	// for svnlook access. Default: the part of a file:// url below
	// local_path, else the repository root when url is empty.
	RepoPath string `toml:"repo_path"`
	// Access is "svn", "svnlook" or empty for automatic: svnlook when
	// local_path is a readable repository and the reviewed directory is
	// known without the network (no url, a file:// url under local_path,
	// or repo_path set); svn otherwise.
	Access string `toml:"access"`
	// SvnPath and SvnlookPath are the clients, paths or names looked up in
	// PATH. Default "svn" and "svnlook".
	SvnPath     string `toml:"svn_path"`
	SvnlookPath string `toml:"svnlook_path"`
	// SvnadminPath is svnadmin, used with svnlook access to read a
	// revision's changed files in one `svnadmin dump` instead of one
	// svnlook cat per file. Default "svnadmin"; when it is not found,
	// files are fetched one by one.
	SvnadminPath string `toml:"svnadmin_path"`
	// SvnrdumpPath is svnrdump, used with svn access to learn a
	// revision's file sizes, checksums and mime types in one `svnrdump
	// dump`, so the contents come in one batched svn cat. Default
	// "svnrdump"; when it is not found, files are fetched one by one.
	SvnrdumpPath string `toml:"svnrdump_path"`
	// ConfigDir, when set, is passed as --config-dir. By default each repo
	// gets its own directory under the daemon's data_dir (repos/<name>/
	// svn-config), so the service user's ~/.subversion is never read or
	// written.
	ConfigDir string `toml:"config_dir"`
	// Username and the password from PasswordEnv or PasswordFile
	// authenticate svn access. The password reaches svn on stdin
	// (--password-from-stdin), never on its command line, and is never
	// cached on disk.
	Username     string `toml:"username"`
	PasswordEnv  string `toml:"password_env"`
	PasswordFile string `toml:"password_file"`
	// TrustServerCertFailures is passed as --trust-server-cert-failures:
	// a comma-separated subset of unknown-ca, cn-mismatch, expired,
	// not-yet-valid, other.
	TrustServerCertFailures string `toml:"trust_server_cert_failures"`
	// Scope holds include, exclude, max_file_bytes, max_files and
	// max_review_bytes; paths are relative to URL. max_files has no
	// default cap for svn.
	vcs.Scope
	// FetchParallelism is how many contents are fetched at once. Zero
	// means DefaultFetchParallelism.
	FetchParallelism int `toml:"fetch_parallelism"`
	// CommandTimeout bounds every svn/svnlook invocation; a command past
	// it is killed with its children (ssh...) and the fetch fails with
	// vcs.ErrTimeout, which the daemon retries. Zero means
	// vcs.DefaultCommandTimeout.
	CommandTimeout time.Duration `toml:"command_timeout"`

	// stateDir is the daemon-provided per-repo directory (SetStateDir).
	stateDir string
}

var (
	_ vcs.RepoSettings = (*Config)(nil)
	_ vcs.LocalPather  = (*Config)(nil)
	_ vcs.PathResolver = (*Config)(nil)
	_ vcs.StateDirUser = (*Config)(nil)
)

// SetStateDir implements vcs.StateDirUser.
func (c *Config) SetStateDir(dir string) { c.stateDir = dir }

// NewAdapter implements vcs.RepoSettings.
func (c *Config) NewAdapter() (vcs.Adapter, error) { return New(c.withDefaults()) }

// LocalRepoPath implements vcs.LocalPather.
func (c *Config) LocalRepoPath() string { return c.LocalPath }

// ResolvePaths implements vcs.PathResolver.
func (c *Config) ResolvePaths(baseDir string) {
	for _, p := range []*string{&c.LocalPath, &c.ConfigDir, &c.PasswordFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(baseDir, *p)
		}
	}
}

// withDefaults fills URL from LocalPath.
func (c Config) withDefaults() Config {
	if c.URL == "" && c.LocalPath != "" {
		c.URL = "file://" + filepath.ToSlash(c.LocalPath)
	}
	return c
}

// Validate checks the config without touching the network or PATH.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("url (or local_path) is required: the repository directory to review, e.g. https://svn.example.com/repos/main/trunk"))
	} else if err := checkURL(c.URL); err != nil {
		errs = append(errs, fmt.Errorf("url %q: %w", c.URL, err))
	}
	for _, n := range []struct {
		key string
		v   int64
	}{{"fetch_parallelism", int64(c.FetchParallelism)}} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("%s %d: must not be negative (0 means the default)", n.key, n.v))
		}
	}
	if c.CommandTimeout < 0 {
		errs = append(errs, fmt.Errorf("command_timeout %s: must not be negative (0 means %s)", c.CommandTimeout, vcs.DefaultCommandTimeout))
	}
	if c.FetchParallelism > 64 {
		errs = append(errs, fmt.Errorf("fetch_parallelism %d: at most 64", c.FetchParallelism))
	}
	switch c.Access {
	case "", AccessSVN:
	case AccessSvnlook:
		if c.LocalPath == "" {
			errs = append(errs, errors.New(`access = "svnlook" needs local_path, the repository's directory on this host`))
		}
	default:
		errs = append(errs, fmt.Errorf(`access %q: must be "svn", "svnlook" or unset (automatic)`, c.Access))
	}
	if c.RepoPath != "" && !strings.HasPrefix(c.RepoPath, "/") {
		errs = append(errs, fmt.Errorf("repo_path %q: must start with / (e.g. /trunk)", c.RepoPath))
	}
	if c.PasswordEnv != "" && c.PasswordFile != "" {
		errs = append(errs, errors.New("password_env and password_file: set one, not both"))
	}
	if (c.PasswordEnv != "" || c.PasswordFile != "") && c.Username == "" {
		errs = append(errs, errors.New("password_env/password_file need username"))
	}
	if c.TrustServerCertFailures != "" {
		for _, f := range strings.Split(c.TrustServerCertFailures, ",") {
			if !trustFailures[strings.TrimSpace(f)] {
				errs = append(errs, fmt.Errorf("trust_server_cert_failures %q: unknown failure %q (use unknown-ca, cn-mismatch, expired, not-yet-valid, other)", c.TrustServerCertFailures, f))
			}
		}
	}
	if err := c.Scope.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch {
	case u.Scheme == "file":
		if u.Path == "" {
			return errors.New("file URL has no path")
		}
	case u.Scheme == "svn", strings.HasPrefix(u.Scheme, "svn+"), u.Scheme == "http", u.Scheme == "https":
		if u.Host == "" {
			return errors.New("URL has no host")
		}
	default:
		return errors.New("scheme must be file, svn, svn+ssh, http or https")
	}
	if u.User != nil {
		// svn would see them on argv, visible to every local user.
		return errors.New("URL must not contain credentials: store them in svn's auth cache (see config_dir) instead")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("URL must not have a query or fragment")
	}
	return nil
}
