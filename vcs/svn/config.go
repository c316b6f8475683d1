// Package svn is the vcs.Adapter for Subversion. It drives the svn
// command-line client (svn info, log, diff, cat) against one repository
// URL, so it works with file://, svn://, svn+ssh:// and http(s):// alike
// and needs no Subversion libraries.
package svn

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/aicr-dev/aicr/vcs"
)

// DefaultMaxFileBytes is the size above which a changed file's content is
// not fetched (it is listed with Skipped "too large").
const DefaultMaxFileBytes int64 = 1 << 20

// Config describes one Subversion repository to review.
type Config struct {
	// URL is the directory that is reviewed, e.g.
	// https://svn.example.com/repos/main/trunk. Changed paths are reported
	// relative to it; changes elsewhere in the repository are ignored.
	URL string `toml:"url"`
	// LocalPath is the repository's directory on this host, when the
	// daemon runs on the SVN server. It lets the hook find its [[repo]];
	// with no URL, file://LocalPath is used.
	LocalPath string `toml:"local_path"`
	// SvnPath is the svn client, a path or a name looked up in PATH.
	// Default "svn".
	SvnPath string `toml:"svn_path"`
	// ConfigDir, when set, is passed as --config-dir: where svn keeps its
	// servers file and cached credentials for this repository.
	// Credentials never go on the command line.
	ConfigDir string `toml:"config_dir"`
	// Include and Exclude are globs over URL-relative paths ("**" matches
	// any number of directories). An empty Include means every path.
	// Out-of-scope files are listed with Skipped "excluded by filter".
	Include []string `toml:"include"`
	Exclude []string `toml:"exclude"`
	// MaxFileBytes caps the content fetched per file. Zero means
	// DefaultMaxFileBytes.
	MaxFileBytes int64 `toml:"max_file_bytes"`
}

var (
	_ vcs.RepoSettings = (*Config)(nil)
	_ vcs.LocalPather  = (*Config)(nil)
	_ vcs.PathResolver = (*Config)(nil)
)

// NewAdapter implements vcs.RepoSettings.
func (c *Config) NewAdapter() (vcs.Adapter, error) { return New(c.withDefaults()) }

// LocalRepoPath implements vcs.LocalPather.
func (c *Config) LocalRepoPath() string { return c.LocalPath }

// ResolvePaths implements vcs.PathResolver.
func (c *Config) ResolvePaths(baseDir string) {
	for _, p := range []*string{&c.LocalPath, &c.ConfigDir} {
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
	if c.MaxFileBytes < 0 {
		errs = append(errs, fmt.Errorf("max_file_bytes %d: must not be negative (0 means %d)", c.MaxFileBytes, DefaultMaxFileBytes))
	}
	if err := c.filter().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c Config) filter() vcs.Filter {
	return vcs.Filter{Include: c.Include, Exclude: c.Exclude}
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
