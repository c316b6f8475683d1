package triggers

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/aicr-dev/aicr/secret"
)

// Defaults the hook falls back on. The daemon's config takes its
// defaults from here too (the hook is the lowest floor that needs them),
// so a hook and a daemon sharing an unreadable or minimal config still
// meet at the same address and spool.
const (
	// DefaultListen is where the daemon listens and the notify client
	// sends when the config does not say otherwise. Loopback only: the
	// intake is authenticated, but exposing it is an operator's decision.
	DefaultListen  = "127.0.0.1:8731"
	DefaultDataDir = "/var/lib/aicr"
	// DefaultConfigPath is the config every command and hook reads when
	// neither --config nor $AICR_CONFIG names another.
	DefaultConfigPath = "/etc/aicr/aicr.toml"
	// ConfigPathEnv names the environment variable that overrides
	// DefaultConfigPath.
	ConfigPathEnv = "AICR_CONFIG"
)

// ConfigPath is where a command looks without --config: $AICR_CONFIG,
// else DefaultConfigPath.
func ConfigPath() string {
	if p := os.Getenv(ConfigPathEnv); p != "" {
		return p
	}
	return DefaultConfigPath
}

// DefaultSpoolDir is where the hook spools when the config names none or
// cannot be read at all.
var DefaultSpoolDir = filepath.Join(DefaultDataDir, "spool")

// HookConfig is the part of aicr.toml the hook client needs. It is read
// leniently (see LoadHookConfig): the hook must hand over or spool every
// event, even when the daemon's own sections are wrong or newer than this
// binary.
type HookConfig struct {
	Path             string // the config file, absolute
	URL              string
	SecretEnv        string
	SecretFile       string
	SpoolDir         string
	Timeout          time.Duration
	ResendMax        int
	UnknownRepoRetry time.Duration
	Repos            []HookRepo
}

// HookRepo is what the hook knows of a [[repo]].
type HookRepo struct {
	Name      string
	Kind      string
	LocalPath string // absolute; empty for repos without one (p4, remote svn)
}

type hookFile struct {
	Daemon struct {
		Listen     string `toml:"listen"`
		DataDir    string `toml:"data_dir"`
		SecretEnv  string `toml:"secret_env"`
		SecretFile string `toml:"secret_file"`
	} `toml:"daemon"`
	Notify struct {
		URL              string `toml:"url"`
		SecretEnv        string `toml:"secret_env"`
		SecretFile       string `toml:"secret_file"`
		SpoolDir         string `toml:"spool_dir"`
		Timeout          any    `toml:"timeout"`
		ResendMax        int64  `toml:"resend_max"`
		UnknownRepoRetry any    `toml:"unknown_repo_retry"`
	} `toml:"notify"`
	Repo []struct {
		Name      string `toml:"name"`
		Kind      string `toml:"kind"`
		LocalPath string `toml:"local_path"`
	} `toml:"repo"`
}

// LoadHookConfig reads the hook's settings from the config at path. Keys
// and tables the hook does not use are ignored, and values it cannot use
// fall back to defaults with a warning, so a config the daemon would
// refuse still lets the hook deliver or spool.
//
// When the file cannot be parsed, the returned config still carries the
// best spool dir it can find (spool_dir or data_dir lines found by a line
// scan, else DefaultSpoolDir) together with the error, so the caller can
// spool the event and say why. When it cannot be read at all, the spool
// dir is DefaultSpoolDir if that exists, else empty (nowhere to spool).
func LoadHookConfig(path string) (*HookConfig, []string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	cfg := &HookConfig{Path: abs}
	data, err := os.ReadFile(abs)
	if err != nil {
		cfg.fillDefaults(hookFile{}, filepath.Dir(abs))
		// Only a spool an installation already made: a hook pointed at a
		// wrong path must not create /var/lib/aicr on a host without aicr.
		if st, serr := os.Stat(cfg.SpoolDir); serr != nil || !st.IsDir() {
			cfg.SpoolDir = ""
		}
		return cfg, nil, fmt.Errorf("read config %s: %w", abs, err)
	}
	var f hookFile
	var warnings []string
	if _, err := toml.Decode(string(data), &f); err != nil {
		// A syntax error anywhere stops the decoder; salvage where to
		// spool so the event survives until the file is fixed.
		f = scanHookFile(data)
		cfg.fillDefaults(f, filepath.Dir(abs))
		return cfg, nil, fmt.Errorf("config %s: %w", abs, err)
	}
	warnings = cfg.fillDefaults(f, filepath.Dir(abs))
	return cfg, warnings, nil
}

func (c *HookConfig) fillDefaults(f hookFile, base string) (warnings []string) {
	absPath := func(p string) string {
		if p != "" && !filepath.IsAbs(p) {
			return filepath.Join(base, p)
		}
		return p
	}
	listen := f.Daemon.Listen
	if listen == "" {
		listen = DefaultListen
	}
	dataDir := absPath(f.Daemon.DataDir)
	if dataDir == "" {
		dataDir = DefaultDataDir
	}
	n := f.Notify
	c.URL = n.URL
	if c.URL == "" {
		c.URL = "http://" + listen
	}
	ref := secret.Ref{Env: n.SecretEnv, File: n.SecretFile}
	if ref.IsZero() {
		ref = secret.Ref{Env: f.Daemon.SecretEnv, File: f.Daemon.SecretFile}
	}
	ref = ref.InDir(base)
	c.SecretEnv, c.SecretFile = ref.Env, ref.File
	c.SpoolDir = absPath(n.SpoolDir)
	if c.SpoolDir == "" {
		c.SpoolDir = filepath.Join(dataDir, "spool")
	}
	var err error
	if c.Timeout, err = durationValue(n.Timeout, DefaultTimeout); err != nil {
		warnings = append(warnings, "[notify] timeout: "+err.Error()+"; using "+DefaultTimeout.String())
	}
	if c.UnknownRepoRetry, err = durationValue(n.UnknownRepoRetry, DefaultUnknownRepoRetry); err != nil {
		warnings = append(warnings, "[notify] unknown_repo_retry: "+err.Error()+"; using "+DefaultUnknownRepoRetry.String())
	}
	c.ResendMax = int(n.ResendMax)
	if c.ResendMax <= 0 {
		c.ResendMax = DefaultResendMax
	}
	for _, r := range f.Repo {
		c.Repos = append(c.Repos, HookRepo{Name: r.Name, Kind: r.Kind, LocalPath: absPath(r.LocalPath)})
	}
	return warnings
}

// durationValue accepts what the daemon's config accepts for a duration:
// a Go duration string ("2s") or integer nanoseconds.
func durationValue(v any, def time.Duration) (time.Duration, error) {
	switch x := v.(type) {
	case nil:
		return def, nil
	case string:
		d, err := time.ParseDuration(x)
		if err != nil || d <= 0 {
			return def, fmt.Errorf("%q is not a positive duration like \"2s\"", x)
		}
		return d, nil
	case int64:
		if x <= 0 {
			return def, fmt.Errorf("%d is not positive", x)
		}
		return time.Duration(x), nil
	}
	return def, fmt.Errorf("%v is not a duration", v)
}

// scanHookFile finds where to spool and the secret to sign the spool file
// with ([notify] spool_dir and secret_*, [daemon] data_dir and secret_*)
// line by line, for a file the TOML decoder refused: a signed spool file
// is delivered once the file is fixed, an unsigned one is not.
func scanHookFile(data []byte) hookFile {
	var f hookFile
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			table = strings.Trim(line, "[] \t")
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key = strings.TrimSpace(key)
		s, err := strconv.Unquote(strings.TrimSpace(val))
		if err != nil {
			v := strings.TrimSpace(val)
			if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
				s = v[1 : len(v)-1]
			} else {
				continue
			}
		}
		switch table + "." + key {
		case "notify.spool_dir":
			f.Notify.SpoolDir = s
		case "notify.secret_file":
			f.Notify.SecretFile = s
		case "notify.secret_env":
			f.Notify.SecretEnv = s
		case "daemon.data_dir":
			f.Daemon.DataDir = s
		case "daemon.secret_file":
			f.Daemon.SecretFile = s
		case "daemon.secret_env":
			f.Daemon.SecretEnv = s
		}
	}
	return f
}

// Secret reads the signing secret from the env var or file the config
// names, through package secret (bounded and non-blocking: a FIFO or a
// device named here must not hang the hook, and with it the commit).
// The errors keep the hook's own wording: they land in notify.log, read
// by whoever installed the hook.
func (c *HookConfig) Secret() ([]byte, error) {
	v, err := c.secretRef().Read()
	switch {
	case err == nil:
		return []byte(v.Reveal()), nil
	case errors.Is(err, secret.ErrNotConfigured):
		return nil, fmt.Errorf("[notify]: %w: set secret_file (or secret_env)", ErrNoSecret)
	case errors.Is(err, secret.ErrUnset):
		return nil, fmt.Errorf("[notify] secret_env: environment variable %s is empty or unset (svn runs hooks with an empty environment: use secret_file)", c.SecretEnv)
	case errors.Is(err, secret.ErrEmpty):
		return nil, fmt.Errorf("[notify] secret_file: %s is empty", c.SecretFile)
	}
	return nil, fmt.Errorf("[notify] secret_file: %w", err)
}

// secretRef is where the secret lives. The hook is lenient where the
// daemon's validation is not: when a config names both, the variable
// wins rather than the hook failing the event.
func (c *HookConfig) secretRef() secret.Ref {
	if c.SecretEnv != "" {
		return secret.Ref{Env: c.SecretEnv}
	}
	return secret.Ref{File: c.SecretFile}
}

// Repo returns the [[repo]] named name.
func (c *HookConfig) Repo(name string) (HookRepo, bool) {
	for _, r := range c.Repos {
		if r.Name == name {
			return r, true
		}
	}
	return HookRepo{}, false
}

// RepoForPath returns the [[repo]] whose local_path is dir.
func (c *HookConfig) RepoForPath(dir string) (HookRepo, bool) {
	clean := filepath.Clean(dir)
	for _, r := range c.Repos {
		if r.LocalPath != "" && filepath.Clean(r.LocalPath) == clean {
			return r, true
		}
	}
	return HookRepo{}, false
}

// ClientConfig is the notify client's configuration; the secret error, if
// any, is returned too so the caller can say why events are spooled.
func (c *HookConfig) ClientConfig() (ClientConfig, error) {
	secret, err := c.Secret()
	return ClientConfig{
		URL:              c.URL,
		Secret:           secret,
		SpoolDir:         c.SpoolDir,
		Timeout:          c.Timeout,
		ResendMax:        c.ResendMax,
		UnknownRepoRetry: c.UnknownRepoRetry,
	}, err
}

// SameRepoPath reports whether two repository paths name the same
// directory, following symlinks where they resolve.
func SameRepoPath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}
