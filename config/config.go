package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/hmacsig"
	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/channels"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/sandbox"
	"github.com/aicr-dev/aicr/secret"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/vcs/registry"
)

const defaultWorkers = 2

// DefaultKeepRunsFor is how long run directories are kept when
// [daemon] keep_runs_for is not set: 30 days.
const DefaultKeepRunsFor = 30 * 24 * time.Hour

// DefaultShutdownGrace is how long SIGTERM lets reviews in flight finish
// by default; keep the service manager's stop timeout above it.
const DefaultShutdownGrace = 60 * time.Second

// Config is the whole aicr.toml. One file serves the daemon and the hook
// client on the VCS server.
type Config struct {
	// Path is the file the config was loaded from; relative paths in it
	// were resolved against its directory.
	Path string `toml:"-"`
	// Digest is Digest of the bytes the config was parsed from.
	Digest string `toml:"-"`

	Daemon   Daemon       `toml:"daemon"`
	Notify   Notify       `toml:"notify"`
	Agent    agent.Config `toml:"agent"`
	Repos    []Repo       `toml:"-"`
	Channels []Channel    `toml:"-"`
	// Policy is the global default publishing policy (see PolicyFor).
	Policy Policy `toml:"policy"`
	// Dispatch tunes delivery retries.
	Dispatch delivery.Config `toml:"dispatch"`
	// Users map VCS users to chat identities for mentions.
	Users []im.Identity `toml:"user"`
	// Sandbox is where agent passes run; kind "none" when the table is absent.
	Sandbox sandbox.Config `toml:"sandbox"`
	// Retention says how long run dirs, audit rows and leftovers are kept.
	Retention Retention `toml:"retention"`

	// deprecations are warnings about keys still accepted under an old
	// name; Preflight reports them.
	deprecations []string
	// file and keys locate Preflight's problems as file:line.
	file string
	keys keyIndex

	// Store is the database of the queue and the audit trail (store.go).
	Store Store `toml:"store"`

	// Web is the daemon's web page of findings and runs (web.go); off
	// unless [web] listen is set.
	Web Web `toml:"web"`
	// Digests are the [[digest]] tables: periodic summaries to channels
	// (digest.go).
	Digests []DigestTable `toml:"digest"`
	// Budgets are the [[budget]] tables: what model reviews may cost per
	// day or month, and what happens once it is spent (budget.go).
	Budgets []BudgetTable `toml:"budget"`
	// Report is the [report] table: the reports' language (language.go).
	Report Report `toml:"report"`
}

// Daemon is the [daemon] table.
type Daemon struct {
	Listen  string `toml:"listen"`
	DataDir string `toml:"data_dir"`
	Workers int    `toml:"workers"`
	// SecretEnv / SecretFile name where the trigger-signing secret lives;
	// never the secret itself.
	SecretEnv  string `toml:"secret_env"`
	SecretFile string `toml:"secret_file"`
	// SpoolDirs are drained by the daemon; the notify spool_dir is always
	// included when it exists on this host.
	SpoolDirs []string `toml:"spool_dirs"`
	// SpoolDrainEvery is the cron spec of the spool drain.
	SpoolDrainEvery string `toml:"spool_drain_every"`
	// AicrBinary is the binary the agent spawns as its MCP server; default
	// is the running executable.
	AicrBinary string `toml:"aicr_binary"`
	// RetryFor is how long a run failing for a transient reason (server
	// down, agent crash) keeps being retried, from its first failure.
	RetryFor time.Duration `toml:"retry_for"`
	// MissingRevisionGrace is how long after an event "no such revision"
	// counts as transient: a replica or edge server may not have caught up.
	MissingRevisionGrace time.Duration `toml:"missing_revision_grace"`
	// KeepRunsFor is the deprecated name of [retention] run_dirs; after
	// loading it holds the effective run_dirs value.
	KeepRunsFor time.Duration `toml:"keep_runs_for"`
	// ShutdownGrace is how long SIGTERM waits for reviews in flight to
	// finish before it cuts them short and re-queues them (h-ops).
	ShutdownGrace time.Duration `toml:"shutdown_grace"`
}

// Notify is the [notify] table, read by `aicr notify` on the VCS host.
type Notify struct {
	URL        string        `toml:"url"`
	SecretEnv  string        `toml:"secret_env"`
	SecretFile string        `toml:"secret_file"`
	SpoolDir   string        `toml:"spool_dir"`
	Timeout    time.Duration `toml:"timeout"`
	ResendMax  int           `toml:"resend_max"`
	// UnknownRepoRetry is how long events for a repo the running daemon
	// does not know stay spooled and re-sent (h-intake; issue 10 item 4).
	UnknownRepoRetry time.Duration `toml:"unknown_repo_retry"`
}

// Repo is one [[repo]] table: the keys every kind shares, plus the
// kind's own settings (vcs/registry) decoded from the same table.
type Repo struct {
	Name     string   `toml:"name"`
	Kind     vcs.Kind `toml:"kind"`
	Channels []string `toml:"channels"`
	// ShelveChannels receive the reviews of shelved changes (p4
	// shelve-commit trigger); empty sends them to Channels.
	ShelveChannels []string `toml:"shelve_channels"`
	// ReconcileEvery is the cron spec of the job that finds changes whose
	// hook or trigger never fired; "off" disables it.
	ReconcileEvery string `toml:"reconcile_every"`
	// ReconcileMax bounds how many missed changes one tick enqueues.
	ReconcileMax int `toml:"reconcile_max"`
	// ReconcileBackfill makes the first tick after install enqueue history
	// (bounded by ReconcileMax per tick) instead of starting at the head.
	ReconcileBackfill bool `toml:"reconcile_backfill"`
	// NoProblems and MinSeverity override [policy] for this repo's
	// channels; ChannelPolicy overrides per channel (see PolicyFor).
	NoProblems    im.NoProblemsPolicy `toml:"no_problems"`
	MinSeverity   review.Severity     `toml:"min_severity"`
	ChannelPolicy map[string]Policy   `toml:"channel_policy"`
	// Routes send changes touching some paths to extra channels.
	Routes []Route `toml:"route"`
	// ChangeURL links reports to the change in a browser; {repo} and
	// {revision} are replaced.
	ChangeURL string `toml:"change_url"`

	Settings vcs.RepoSettings `toml:"-"`
}

// Channel is one [[channel]] table: the keys every kind shares plus
// the kind's own settings, decoded from the same table.
type Channel struct {
	im.ChannelConfig
	Settings im.KindConfig
}

// Error is one problem in a config file, located by line when the
// key can be found.
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// ErrNotFound is wrapped when the config file does not exist.
var ErrNotFound = errors.New("config file not found")

// Load reads, decodes strictly, resolves relative paths and
// validates. The error joins every problem found, each as file:line: msg.
func Load(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config path %s: %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w (create one from %s, or configs/aicr.example.toml in a checkout)", path, ErrNotFound, ExamplePath)
		}
		if errors.Is(err, os.ErrPermission) {
			// The README installs it root:aicr 0640: readable by the
			// daemon's group, which the operator's account may lack.
			return nil, fmt.Errorf("read config: %w: run as root, as the daemon's user (runuser -u aicr -- aicr ...), or from an account in the file's group (usermod -a -G aicr USER, then log in again)", err)
		}
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, abs, data)
}

// Parse is Load on bytes already read. name is used in error
// messages; abs anchors relative paths.
func Parse(name, abs string, data []byte) (*Config, error) {
	var raw struct {
		Config
		Channel []toml.Primitive `toml:"channel"`
		Repo    []toml.Primitive `toml:"repo"`
	}
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return nil, &Error{File: name, Line: perr.Position.Line, Msg: perr.Message}
		}
		return nil, &Error{File: name, Msg: err.Error()}
	}
	cfg := raw.Config
	cfg.Path = abs
	cfg.Digest = Digest(data)
	keys := indexKeys(data)
	cfg.file, cfg.keys = name, keys
	var errs []error
	fail := func(key, format string, args ...any) {
		errs = append(errs, &Error{File: name, Line: keys.line(key), Key: key, Msg: fmt.Sprintf(format, args...)})
	}

	cfg.Repos = decodeRepos(md, raw.Repo, fail)
	var declared map[string]bool
	cfg.Channels, declared = decodeChannels(md, raw.Channel, fail)
	unknownKeys(md, name, keys, func(err error) { errs = append(errs, err) })
	if !md.IsDefined("daemon", "workers") {
		cfg.Daemon.Workers = defaultWorkers
	}
	retentionWarnings, retentionProblems := cfg.applyRetentionDefaults(md)
	cfg.deprecations = append(cfg.deprecations, retentionWarnings...)
	for _, p := range retentionProblems {
		fail(p.key, "%s", p.msg)
	}
	// Only an absent [sandbox] means "none"; a table that forgets kind is
	// an error rather than agents silently running unconfined.
	if !md.IsDefined("sandbox") {
		cfg.Sandbox.Kind = "none"
	}
	cfg.applyDefaults()
	cfg.resolvePaths(filepath.Dir(abs))
	for _, e := range append(cfg.validate(declared), cfg.validateStore()...) {
		fail(e.key, "%s", e.msg)
	}
	errs = append(errs, cfg.validateRouting(name, keys, declared)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &cfg, nil
}

// failFunc records a problem under a key; Parse locates it by line.
type failFunc func(key, format string, args ...any)

// decodeRepos decodes each [[repo]] table: the shared keys, then the
// kind's own settings from the same table.
func decodeRepos(md toml.MetaData, prims []toml.Primitive, fail failFunc) []Repo {
	var repos []Repo
	repoKinds := registry.Kinds()
	for i, prim := range prims {
		key := fmt.Sprintf("repo[%d]", i)
		var r Repo
		if err := md.PrimitiveDecode(prim, &r); err != nil {
			fail(key, "%v", err)
			continue
		}
		newSettings, ok := repoKinds[r.Kind]
		switch {
		case r.Kind == "":
			fail(key+".kind", `missing; set kind = "svn"`)
		case !ok:
			fail(key+".kind", "unsupported repo kind %q (supported: %s)", r.Kind, strings.Join(sortedKeys(repoKinds), ", "))
		default:
			r.Settings = newSettings()
			if err := md.PrimitiveDecode(prim, r.Settings); err != nil {
				fail(key, "%v", err)
				continue
			}
		}
		repos = append(repos, r)
	}

	return repos
}

// decodeChannels decodes each [[channel]] table and returns, with them,
// the names of every table, even ones with errors, so a repo that routes
// to them is not reported a second time.
func decodeChannels(md toml.MetaData, prims []toml.Primitive, fail failFunc) (out []Channel, declared map[string]bool) {
	kinds := channels.Kinds()
	declared = map[string]bool{}
	for i, prim := range prims {
		key := fmt.Sprintf("channel[%d]", i)
		var ch Channel
		if err := md.PrimitiveDecode(prim, &ch.ChannelConfig); err != nil {
			fail(key, "%v", err)
			continue
		}
		declared[ch.Name] = true
		kind, ok := kinds[ch.Kind]
		if !ok {
			fail(key+".kind", "unknown channel kind %q (known: %s)", ch.Kind, strings.Join(sortedKeys(kinds), ", "))
			continue
		}
		ch.Settings = kind.NewConfig()
		if err := md.PrimitiveDecode(prim, ch.Settings); err != nil {
			fail(key, "%v", err)
			continue
		}
		out = append(out, ch)
	}
	return out, declared
}

// unknownKeys reports each key no struct decoded, with a did-you-mean,
// through add, in the order the decoder lists them.
func unknownKeys(md toml.MetaData, name string, keys keyIndex, add func(error)) {
	// Undecoded names a key of an array of tables once per table that
	// has it, and keys.lines has every line already: one error per line.
	var known map[string]bool
	reported := map[string]bool{}
	for _, k := range md.Undecoded() {
		ks := k.String()
		if reported[ks] {
			continue
		}
		reported[ks] = true
		if known == nil {
			known = knownKeys()
		}
		msg := "unknown key"
		if s := closestKey(ks, known); s != "" {
			msg += fmt.Sprintf(" (did you mean `%s`?)", s)
		} else {
			msg += " (check the spelling against " + ExamplePath + ", configs/aicr.example.toml in a checkout)"
		}
		lines := keys.lines[ks]
		if len(lines) == 0 {
			lines = []int{keys.line(ks)}
		}
		for _, l := range lines {
			add(&Error{File: name, Line: l, Key: ks, Msg: msg})
		}
	}
}

func (c *Config) applyDefaults() {
	d := &c.Daemon
	if d.Listen == "" {
		d.Listen = triggers.DefaultListen
	}
	if d.DataDir == "" {
		d.DataDir = triggers.DefaultDataDir
	}
	if d.SpoolDrainEvery == "" {
		d.SpoolDrainEvery = "@every 1m"
	}
	if d.RetryFor == 0 {
		d.RetryFor = 72 * time.Hour
	}
	if d.MissingRevisionGrace == 0 {
		d.MissingRevisionGrace = 30 * time.Minute
	}
	if d.ShutdownGrace <= 0 {
		d.ShutdownGrace = DefaultShutdownGrace
	}
	n := &c.Notify
	if n.URL == "" {
		n.URL = "http://" + d.Listen
	}
	if n.SecretEnv == "" && n.SecretFile == "" {
		n.SecretEnv, n.SecretFile = d.SecretEnv, d.SecretFile
	}
	if n.SpoolDir == "" {
		n.SpoolDir = filepath.Join(d.DataDir, "spool")
	}
	if n.Timeout == 0 {
		n.Timeout = 2 * time.Second
	}
	if n.ResendMax == 0 {
		n.ResendMax = 20
	}
	for i := range c.Repos {
		if c.Repos[i].ReconcileEvery == "" {
			c.Repos[i].ReconcileEvery = "@every 5m"
		}
		if c.Repos[i].ReconcileMax == 0 {
			c.Repos[i].ReconcileMax = 50
		}
	}
	if c.Agent.Kind == "" {
		c.Agent.Kind = "builtin"
	}
	if c.Agent.CLI.InstallDir == "" {
		c.Agent.CLI.InstallDir = filepath.Join(d.DataDir, "agent-clis")
	}
	if agent.IsCLI(c.Agent.Kind) && c.Sandbox.Podman.Image == "" {
		c.Sandbox.Podman.Image = sandbox.DefaultNodeImage()
	}
	// Channel policy keys stay empty when unset: PolicyFor layers them
	// over the repo's and the global ones.
	c.Dispatch.ApplyDefaults()
	c.Sandbox.ApplyDefaults(c.Agent.PassTimeout())
}

func (c *Config) resolvePaths(base string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	abs(&c.Daemon.DataDir)
	abs(&c.Daemon.SecretFile)
	abs(&c.Store.DSNFile)
	abs(&c.Daemon.AicrBinary)
	for i := range c.Daemon.SpoolDirs {
		abs(&c.Daemon.SpoolDirs[i])
	}
	abs(&c.Notify.SecretFile)
	abs(&c.Notify.SpoolDir)
	c.Agent.LLM = c.Agent.LLM.InDir(base)
	abs(&c.Agent.RulesFile)
	abs(&c.Agent.CLI.InstallDir)
	c.Sandbox.ResolvePaths(base)
	for _, r := range c.Repos {
		if pr, ok := r.Settings.(vcs.PathResolver); ok {
			pr.ResolvePaths(base)
		}
		if sd, ok := r.Settings.(vcs.StateDirUser); ok {
			sd.SetStateDir(filepath.Join(c.Daemon.DataDir, "repos", r.Name))
		}
	}
}

// Repo returns the repo named name.
func (c *Config) Repo(name string) (*Repo, bool) {
	for i := range c.Repos {
		if c.Repos[i].Name == name {
			return &c.Repos[i], true
		}
	}
	return nil, false
}

// RepoForPath finds the repo whose local path on this host is dir; the SVN
// hook only knows the repository's filesystem path.
// RepoNames lists the [[repo]] names, in config order, for errors that
// must say which names exist.
func (c *Config) RepoNames() []string {
	names := make([]string, 0, len(c.Repos))
	for _, r := range c.Repos {
		names = append(names, r.Name)
	}
	return names
}

func (c *Config) RepoForPath(dir string) (*Repo, bool) {
	clean := filepath.Clean(dir)
	for i := range c.Repos {
		lp, ok := c.Repos[i].Settings.(vcs.LocalPather)
		if !ok {
			continue
		}
		if p := lp.LocalRepoPath(); p != "" && filepath.Clean(p) == clean {
			return &c.Repos[i], true
		}
	}
	return nil, false
}

// located gives err the file:line of key ("daemon.secret_file"), for
// the problems found after loading (Preflight); a config that was not
// parsed from a file returns err as it is.
func (c *Config) located(key string, err error) error {
	if err == nil || c.file == "" {
		return err
	}
	return &Error{File: c.file, Line: c.keys.line(key), Msg: err.Error()}
}

// DaemonSecret resolves the trigger-signing secret for the intake.
func (c *Config) DaemonSecret() ([]byte, error) {
	return readSecret("daemon", c.Daemon.SecretEnv, c.Daemon.SecretFile)
}

// NotifySecret resolves the secret the hook client signs with.
func (c *Config) NotifySecret() ([]byte, error) {
	return readSecret("notify", c.Notify.SecretEnv, c.Notify.SecretFile)
}

func readSecret(table, env, file string) ([]byte, error) {
	ref := secret.Ref{Env: env, File: file}
	if ref.IsZero() {
		return nil, fmt.Errorf("[%s]: %w: set secret_env or secret_file", table, hmacsig.ErrNoSecret)
	}
	key := "secret_file"
	if env != "" {
		key = "secret_env"
	}
	v, err := ref.Read()
	if err != nil {
		return nil, fmt.Errorf("[%s] %s: %w", table, key, err)
	}
	return []byte(v.Reveal()), nil
}

func sortedKeys[K ~string, V any](m map[K]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

// Digest is how the daemon names the config it runs: "sha256:" and
// the hex digest of the file's bytes. aicr doctor compares it with the
// file on disk to tell that the daemon must reload.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
