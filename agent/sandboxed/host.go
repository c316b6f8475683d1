package sandboxed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/sandbox"
	"github.com/aicr-dev/aicr/sandbox/egress"
	"github.com/aicr-dev/aicr/vcs"
)

// Options configure the host side.
type Options struct {
	// Config is [agent]; its secrets are read on the host at every pass.
	Config agent.Config
	Runner sandbox.Runner
	// Network is [sandbox] network: "none", "llm-only" or "host".
	Network string
	// Binary is the host path of the static aicr binary the runner mounts
	// at /opt/aicr/aicr.
	Binary string
	// Env are non-secret NAME=value entries for the container, already
	// allowlisted by the caller.
	Env []string
	// CLIInstallDir is [agent.cli] install_dir on the host (an agent CLI's
	// install prefix under it is mounted read-only at cli.PrefixInside).
	CLIInstallDir string
	// RecordEgress receives every decision of the run's egress proxy; nil
	// drops them (tests only: the daemon records them in the audit trail).
	RecordEgress func(runID int64, e egress.Event)
	Logger       *slog.Logger
}

// ErrMemoryLimit: the pass was killed for going over [sandbox.podman]
// memory. The same review would go over it again, so the run fails at
// once instead of being retried for retry_for.
var ErrMemoryLimit = errors.New("sandbox memory limit reached")

// Agent runs each pass in the sandbox. It implements agent.Agent; the
// results are in the state file the container wrote in the agent dir.
type Agent struct{ o Options }

var _ agent.Agent = (*Agent)(nil)

// New checks what the sandboxed pass cannot do and returns the agent.
func New(o Options) (*Agent, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Runner == nil {
		return nil, errors.New("sandboxed agent: no sandbox runner")
	}
	if o.Binary == "" {
		return nil, errors.New("sandboxed agent: no aicr binary to mount (set [daemon] aicr_binary to the static aicr binary)")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Agent{o: o}, nil
}

// Review runs pass p of run in the sandbox: the pass's secrets are read,
// the pass file and the bundle written, the mounts and the egress proxy
// set up, the container run, and its outcome mapped to the pass's error.
func (a *Agent) Review(ctx context.Context, run rundir.Layout, p pass.Pass) (pass.Stats, error) {
	cfg := a.o.Config
	stats := pass.Stats{Agent: cfg.Kind}
	// 0 for a run dir outside the daemon's (aicr agent test).
	id, _ := run.RunID()
	rules, err := prompt.ReadRulesFile(cfg.RulesFile)
	if err != nil {
		return stats, err
	}
	sec, err := readSecrets(cfg)
	if err != nil {
		return stats, err
	}
	change, err := run.ReadChange()
	if err != nil {
		return stats, err
	}
	pf := newPassFile(cfg, rules, p)
	caps, mounts, err := a.cliMounts()
	if err != nil {
		return stats, err
	}
	network, egressMounts, closeEgress, err := a.startEgress(run, id, &pf)
	if err != nil {
		return stats, err
	}
	defer closeEgress()
	mounts = append(mounts, egressMounts...)
	manifest, err := a.materialise(run, pf, rules, change, sec, caps)
	if err != nil {
		return stats, err
	}
	// The container runs as another user: it reads the run's files
	// through read-only mounts; the run dir above them stays private.
	readOnly, err := shareReadOnly(run)
	if err != nil {
		return stats, err
	}
	mounts = append(mounts, readOnly...)
	_ = os.Remove(run.PassStatsPath())

	limit, _ := cfg.PassLimit()
	stdout, stderr := run.SandboxOutputPaths(p.Number)
	spec := sandbox.Spec{
		RunID: id, Pass: p.Number, AgentDir: run.AgentDir(), SrcDir: run.SrcDir(), Binary: a.o.Binary,
		Args:      []string{sandbox.BinaryMount, "agent", "pass", "--root", Workspace},
		Env:       append(append([]string(nil), a.o.Env...), manifest.Home.Env()...),
		SecretEnv: sec.env, Mounts: mounts, Network: network, Timeout: limit,
		StdoutPath: stdout, StderrPath: stderr,
	}
	res, runErr := a.o.Runner.Run(ctx, spec)
	return passOutcome(run, p, spec, res, runErr, stats)
}

// passSecrets are what a model-backed pass is given through the
// environment (env) and what the bundle's guard must not find in any
// file it writes (values).
type passSecrets struct {
	values, env []string
}

// minHeaderSecretLen is the shortest header value the bundle's guard
// treats as a secret; tokens are far longer.
const minHeaderSecretLen = 8

// readSecrets reads [agent.llm]'s key and headers on the host, at each
// pass like the key, so a rotated key or an edited headers file applies
// to the next pass. The builtin agent gets none.
func readSecrets(cfg agent.Config) (passSecrets, error) {
	var s passSecrets
	if !cfg.UsesModel() {
		return s, nil
	}
	key, err := cfg.LLM.ReadAPIKey()
	if err != nil {
		return s, fmt.Errorf("agent.llm: read the API key: %w", err)
	}
	s.values = append(s.values, key.Reveal())
	s.env = append(s.env, APIKeyEnv+"="+key.Reveal())
	headers, err := cfg.LLM.ReadHeaders()
	if err != nil {
		return s, err
	}
	if len(headers) == 0 {
		return s, nil
	}
	b, err := json.Marshal(headers)
	if err != nil {
		return s, fmt.Errorf("agent.llm.headers_file: encode: %w", err)
	}
	for _, v := range headers {
		// A value as short as a tenant name ("acme") is no credential
		// and may well appear in the change; refusing every bundle that
		// mentions it would stop reviews.
		if len(v) >= minHeaderSecretLen {
			s.values = append(s.values, v)
		}
	}
	s.env = append(s.env, HeadersEnv+"="+string(b))
	return s, nil
}

// newPassFile describes pass p for the container. Only names that mean
// nothing outside the host go in: the key is in the environment, the
// rules inline.
func newPassFile(cfg agent.Config, rules string, p pass.Pass) PassFile {
	pf := PassFile{Agent: cfg, OperatorRules: rules, Pass: p}
	pf.Agent.RulesFile = ""
	pf.Agent.LLM.KeyOrigin = cfg.LLM.KeySource()
	pf.Agent.LLM.APIKeyEnv, pf.Agent.LLM.APIKeyFile = APIKeyEnv, ""
	pf.Agent.LLM.HeadersFile = ""
	return pf
}

// cliMounts are the bundle's capabilities of the configured agent and,
// for an agent CLI, the read-only mount of its install prefix, checked to
// hold the CLI on this host.
func (a *Agent) cliMounts() (bundle.Capabilities, []sandbox.Mount, error) {
	cfg := a.o.Config
	if !agent.IsCLI(cfg.Kind) {
		return bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true,
			IsolatedHome: true, ContextCompaction: "not_applicable"}, nil, nil
	}
	c, _ := cli.Lookup(cfg.Kind)
	prefix := agent.CLIPrefix(cfg, a.o.CLIInstallDir)
	if _, err := cli.Installed(prefix); err != nil {
		return bundle.Capabilities{}, nil, fmt.Errorf("%w: run `aicr agent install %s%s` on this host ([agent.cli] install_dir = %s)",
			err, cfg.Kind, versionFlag(cfg), a.o.CLIInstallDir)
	}
	return c.Spec().Capabilities, []sandbox.Mount{{Host: prefix, Container: cli.PrefixInside, ReadOnly: true}}, nil
}

// startEgress starts the run's egress proxy for network "llm-only",
// allowing only [agent.llm] base_url, and points pf at its socket. It
// returns the network the container gets (a builtin pass talks to
// nothing, so "llm-only" is "none" for it), the socket's mount and what
// stops the proxy.
func (a *Agent) startEgress(run rundir.Layout, id int64, pf *PassFile) (string, []sandbox.Mount, func(), error) {
	cfg := a.o.Config
	noop := func() {}
	if a.o.Network != "llm-only" {
		return a.o.Network, nil, noop, nil
	}
	if !cfg.UsesModel() {
		return "none", nil, noop, nil
	}
	allow, err := egress.AllowlistFromURLs(cfg.LLM.WithDefaults().BaseURL)
	if err != nil {
		return "", nil, noop, fmt.Errorf("[sandbox] network = \"llm-only\": %w", err)
	}
	record := func(e egress.Event) {
		a.o.Logger.Info("egress", "run_id", id, "host", e.Host, "port", e.Port, "allowed", e.Allowed, "reason", e.Reason)
		if a.o.RecordEgress != nil {
			a.o.RecordEgress(id, e)
		}
	}
	proxy, sock, err := egress.ForRun(run.Dir(), allow, record)
	if err != nil {
		return "", nil, noop, err
	}
	pf.EgressSocket = sock.ContainerSocket
	return a.o.Network, []sandbox.Mount{{Host: sock.HostDir, Container: sock.ContainerDir, ReadOnly: true}}, func() { proxy.Close() }, nil
}

// materialise writes the pass's bundle into the run dir: pass.json, the
// rules, the repository's files and the isolated home, refused if any
// file holds one of the pass's secrets.
func (a *Agent) materialise(run rundir.Layout, pf PassFile, rules string, change *vcs.Change, sec passSecrets, caps bundle.Capabilities) (bundle.Manifest, error) {
	pfJSON, err := marshalPassFile(pf)
	if err != nil {
		return bundle.Manifest{}, err
	}
	repoFiles, repoSymlinks, err := readRepoFiles(run)
	if err != nil {
		return bundle.Manifest{}, err
	}
	return bundle.Materialise(bundle.Input{Layout: run, OperatorRules: rules, RepoFiles: repoFiles, RepoSymlinks: repoSymlinks,
		ChangedPaths: changedPaths(change), EnvNames: envNames(a.o.Env, sec.env), Adapter: a.o.Config.Kind, Secrets: sec.values,
		ExtraFiles:   map[string][]byte{rundir.PassFileName: pfJSON},
		Capabilities: caps})
}

// passOutcome is what the container's run means for the pass: the stats
// the pass wrote (also when it failed), and an error that says whether
// the sandbox, the time limit, the memory limit or the pass itself
// stopped it, wrapping the model error class the pass reported.
func passOutcome(run rundir.Layout, p pass.Pass, spec sandbox.Spec, res sandbox.Result, runErr error, stats pass.Stats) (pass.Stats, error) {
	var ps PassStats
	if err := readJSON(run.PassStatsPath(), &ps); err == nil {
		stats = ps.Stats
		stats.Text = ps.Text
	}
	if runErr != nil {
		return stats, fmt.Errorf("agent pass %d in the sandbox: %w", p.Number, runErr)
	}
	switch {
	case res.TimedOut:
		return stats, fmt.Errorf("%w: the sandboxed pass %d was stopped after %s; raise [agent] timeout or look at %s",
			agent.ErrTimeout, p.Number, spec.Timeout, spec.StderrPath)
	case res.OOMKilled:
		return stats, fmt.Errorf("%w: agent pass %d was killed by the sandbox's memory limit; raise [sandbox.podman] memory", ErrMemoryLimit, p.Number)
	case res.ExitCode != 0:
		err := fmt.Errorf("agent pass %d exited %d in the sandbox: %s", p.Number, res.ExitCode, stderrTail(spec.StderrPath))
		if sentinel := sentinelOf(ps.ErrorClass); sentinel != nil {
			err = fmt.Errorf("%w (%w)", err, sentinel)
		}
		return stats, err
	}
	return stats, nil
}

func versionFlag(cfg agent.Config) string {
	if cfg.CLI.Version == "" {
		return ""
	}
	return " --version " + cfg.CLI.Version
}

func marshalPassFile(pf PassFile) ([]byte, error) {
	tmp, err := os.CreateTemp("", "aicr-pass-*.json")
	if err != nil {
		return nil, err
	}
	name := tmp.Name()
	tmp.Close()
	defer os.Remove(name)
	if err := writeJSON(name, pf); err != nil {
		return nil, fmt.Errorf("encode %s: %w", rundir.PassFileName, err)
	}
	return os.ReadFile(name)
}

// shareReadOnly makes src/ and the run's change, diff, repository rules
// and dismissed findings readable by the container's user and returns the file mounts that put
// them at /workspace.
func shareReadOnly(run rundir.Layout) ([]sandbox.Mount, error) {
	err := filepath.WalkDir(run.SrcDir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("share src/ with the sandbox: %w", err)
	}
	var mounts []sandbox.Mount
	for _, p := range []string{run.ChangePath(), run.DiffPath(), run.RepoRulesPath(), run.DismissedPath(), run.OutputLanguagePath()} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := os.Chmod(p, 0o644); err != nil {
			return nil, fmt.Errorf("share %s with the sandbox: %w", filepath.Base(p), err)
		}
		mounts = append(mounts, sandbox.Mount{Host: p, Container: Workspace + "/" + filepath.Base(p), ReadOnly: true})
	}
	return mounts, nil
}

// readRepoFiles are the repository's instructions and skills as the
// ladder read them at the reviewed revision (rundir.RepoIndex), and the
// paths it refused as symlinks. A run dir without repo.json (written
// before it existed) still has its repo-rules.md.
func readRepoFiles(run rundir.Layout) (map[string][]byte, []string, error) {
	if _, err := os.Stat(run.RepoIndexPath()); err == nil {
		ix, files, err := run.ReadRepoIndex()
		if err != nil {
			return nil, nil, fmt.Errorf("repository instructions: %w", err)
		}
		// The bundle records a refused symlink among the files it was
		// given; the link's content was never read.
		for _, p := range ix.Symlinks {
			if _, ok := files[p]; !ok {
				files[p] = nil
			}
		}
		return files, ix.Symlinks, nil
	}
	b, err := os.ReadFile(run.RepoRulesPath())
	if err != nil {
		return nil, nil, nil //nolint:nilerr // a run dir without repo-rules.md has no repository rules: the pass goes on without them
	}
	return map[string][]byte{agent.RepoRulesFile: b}, nil, nil
}

func changedPaths(c *vcs.Change) []string {
	paths := make([]string, 0, len(c.Files))
	for _, f := range c.Files {
		paths = append(paths, f.Path)
	}
	return paths
}

func envNames(lists ...[]string) []string {
	var names []string
	for _, l := range lists {
		for _, kv := range l {
			n, _, _ := strings.Cut(kv, "=")
			names = append(names, n)
		}
	}
	return names
}

func stderrTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no stderr captured)"
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	if s == "" {
		return "(stderr empty)"
	}
	return s
}
