// Package p4 is the vcs.Adapter for Perforce. It drives the `p4`
// command-line client with structured output (-G Python-marshalled
// dictionaries, which keep the raw bytes of non-unicode servers), so it
// needs no Perforce libraries: github.com/perforce/p4go needs Perforce's
// proprietary C++ API and cannot be built here.
//
// Paths: a file's vcs path is its depot path without the leading "//",
// with Perforce's %40 %23 %2A %25 escapes decoded ("//depot/main/a@b.c"
// → "depot/main/a@b.c"). That is unique across every configured depot
// path and reads the way Perforce users write names.
package p4

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/secret"
	"github.com/aicr-dev/aicr/vcs"
)

// Defaults of Config.
const (
	DefaultMaxFileBytes = vcs.DefaultMaxFileBytes
	DefaultMaxFiles     = 5000
	// DefaultBatchSize is how many files one `p4 print` fetches. It is
	// far above normal changelists so they take one process; -x keeps the
	// command line short whatever the count.
	DefaultBatchSize = 10000
)

// Config describes one Perforce server and the depot paths to review.
type Config struct {
	// Port is P4PORT: "ssl:p4.example.com:1666", "tcp:host:1666".
	Port string `toml:"port"`
	// User is the service user (P4USER) the daemon runs p4 as.
	User string `toml:"user"`
	// PasswordEnv / PasswordFile give the password (or a ticket value);
	// it reaches p4 as P4PASSWD in the child's environment, never argv.
	PasswordEnv  string `toml:"password_env"`
	PasswordFile string `toml:"password_file"`
	// TicketFile is P4TICKETS: a tickets file written by `p4 login` run
	// as the service user. Usual for security level 3 servers.
	TicketFile string `toml:"ticket_file"`
	// P4TrustFile is P4TRUST: the fingerprints of the ssl: servers the
	// service user trusts (written by `p4 trust`). Empty: p4's default,
	// ~/.p4trust of the user the daemon runs as.
	P4TrustFile string `toml:"p4trust_file"`
	// SSLFingerprint pins an ssl: server's key ("AB:CD:..."): while the
	// trust file does not know the server, aicr installs exactly this
	// fingerprint (`p4 trust -i`) and goes on; a server presenting any
	// other key is refused as p4 refuses it.
	SSLFingerprint string `toml:"ssl_fingerprint"`
	// Client is P4CLIENT; optional, nothing here needs a workspace.
	Client string `toml:"client"`
	// Charset: "auto" (ask `p4 -ztag info` once, then use -C utf8 on
	// unicode servers), "utf8" or "none". Default auto.
	Charset string `toml:"charset"`
	// DepotPaths are the depot trees reviewed, in p4 view syntax:
	// "//depot/main/..." includes, "-//depot/main/vendor/..." excludes;
	// later lines win, as in a client view.
	DepotPaths []string `toml:"depot_paths"`
	// Scope holds include, exclude (globs over vcs paths such as
	// "depot/main/**/*.c"), max_file_bytes, max_files (default
	// DefaultMaxFiles) and max_review_bytes. Sizes come from describe, so
	// nothing over a cap is printed.
	vcs.Scope
	// P4Path is the p4 client binary, a path or a name looked up in PATH.
	P4Path string `toml:"p4_path"`
	// BatchSize is how many files one p4 print fetches.
	BatchSize int `toml:"batch_size"`
	// CommandTimeout bounds every p4 invocation; a command past it is
	// killed with its children and the fetch fails with vcs.ErrTimeout,
	// which the daemon retries. Zero means vcs.DefaultCommandTimeout.
	CommandTimeout time.Duration `toml:"command_timeout"`
}

var (
	_ vcs.RepoSettings = (*Config)(nil)
	_ vcs.PathResolver = (*Config)(nil)
)

// NewAdapter implements vcs.RepoSettings.
func (c *Config) NewAdapter() (vcs.Adapter, error) { return New(*c) }

// ResolvePaths implements vcs.PathResolver.
func (c *Config) ResolvePaths(baseDir string) {
	for _, p := range []*string{&c.PasswordFile, &c.TicketFile, &c.P4TrustFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(baseDir, *p)
		}
	}
	if c.P4Path != "" && strings.Contains(c.P4Path, "/") && !filepath.IsAbs(c.P4Path) {
		c.P4Path = filepath.Join(baseDir, c.P4Path)
	}
}

func (c Config) withDefaults() Config {
	if c.Charset == "" {
		c.Charset = "auto"
	}
	c.Scope = c.Scope.WithDefaults(DefaultMaxFiles)
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.P4Path == "" {
		c.P4Path = "p4"
	}
	return c
}

// Validate checks the config without touching the network or PATH.
func (c Config) Validate() error {
	var errs []error
	if c.Port == "" {
		errs = append(errs, errors.New("port is required: the P4PORT of the server, e.g. ssl:p4.example.com:1666"))
	} else if strings.ContainsAny(c.Port, " \t\n") {
		errs = append(errs, fmt.Errorf("port %q: must not contain spaces", c.Port))
	}
	if c.User == "" {
		errs = append(errs, errors.New("user is required: the Perforce service user the daemon runs p4 as"))
	}
	if c.PasswordEnv != "" && c.PasswordFile != "" {
		errs = append(errs, errors.New("password_env and password_file: set one, not both"))
	}
	if err := checkFingerprint(c.SSLFingerprint, c.Port); err != nil {
		errs = append(errs, err)
	}
	switch c.Charset {
	case "", "auto", "utf8", "none":
	default:
		errs = append(errs, fmt.Errorf("charset %q: must be auto, utf8 or none", c.Charset))
	}
	if len(c.DepotPaths) == 0 {
		errs = append(errs, errors.New(`depot_paths is required: the depot trees to review, e.g. ["//depot/main/..."]`))
	}
	included := false
	for _, p := range c.DepotPaths {
		if err := checkDepotPattern(p); err != nil {
			errs = append(errs, fmt.Errorf("depot_paths %q: %w", p, err))
		}
		if !strings.HasPrefix(p, "-") {
			included = true
		}
	}
	if len(c.DepotPaths) > 0 && !included {
		errs = append(errs, errors.New("depot_paths: needs at least one path that is not a - exclusion"))
	}
	if c.CommandTimeout < 0 {
		errs = append(errs, fmt.Errorf("command_timeout %s: must not be negative (0 means %s)", c.CommandTimeout, vcs.DefaultCommandTimeout))
	}
	if c.BatchSize < 0 {
		errs = append(errs, fmt.Errorf("batch_size %d: must not be negative (0 means %d)", c.BatchSize, DefaultBatchSize))
	}
	if err := c.Scope.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func checkDepotPattern(p string) error {
	p = strings.TrimPrefix(p, "-")
	switch {
	case !strings.HasPrefix(p, "//"):
		return errors.New(`must start with "//" (a depot path), e.g. //depot/main/...`)
	case strings.ContainsAny(p, "@#\n"):
		return errors.New("must not contain a revision (@ or #); escape such characters in names as %40 and %23")
	case strings.Contains(p, "%%"):
		return errors.New("positional %%n wildcards are not supported; use ... or *")
	}
	return nil
}

// password reads the configured secret; "" when none is configured.
func (c Config) password() (string, error) {
	ref := secret.Ref{Env: c.PasswordEnv, File: c.PasswordFile}
	if ref.IsZero() {
		return "", nil
	}
	// An empty file is an error, not "no password": p4 would then fail
	// later with a less helpful login message.
	v, err := ref.Read()
	if err != nil {
		return "", fmt.Errorf("password: %w", err)
	}
	return v.Reveal(), nil
}
