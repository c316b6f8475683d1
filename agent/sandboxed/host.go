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
	"strconv"
	"strings"
	"time"

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

// minHeaderSecretLen is the shortest header value the bundle's guard
// treats as a secret; tokens are far longer.
const minHeaderSecretLen = 8

// runID is the run's id from its directory name (<data_dir>/runs/<id>);
// 0 for a run dir outside the daemon's (aicr agent test).
func runID(run rundir.Layout) int64 {
	id, err := strconv.ParseInt(filepath.Base(run.Dir()), 10, 64)
	if err != nil {
		return 0
	}
	return id
}

// Review runs pass p of run in the sandbox.
func (a *Agent) Review(ctx context.Context, run rundir.Layout, p pass.Pass) (pass.Stats, error) {
	cfg := a.o.Config
	stats := pass.Stats{Agent: cfg.Kind}
	id := runID(run)
	rules, err := prompt.ReadRulesFile(cfg.RulesFile)
	if err != nil {
		return stats, err
	}
	usesModel := cfg.Kind == agent.KindLLM || agent.IsCLI(cfg.Kind)
	var secrets, secretEnv []string
	if usesModel {
		key, err := cfg.LLM.ReadAPIKey()
		if err != nil {
			return stats, fmt.Errorf("agent.llm: read the API key: %w", err)
		}
		secrets = append(secrets, key.Reveal())
		secretEnv = append(secretEnv, APIKeyEnv+"="+key.Reveal())
		// Read at each pass, like the key, so an edited file applies to
		// the next pass; values are secrets to the bundle's guard.
		headers, err := cfg.LLM.ReadHeaders()
		if err != nil {
			return stats, err
		}
		if len(headers) > 0 {
			b, err := json.Marshal(headers)
			if err != nil {
				return stats, fmt.Errorf("agent.llm.headers_file: encode: %w", err)
			}
			for _, v := range headers {
				// A value as short as a tenant name ("acme") is no
				// credential and may well appear in the change; refusing
				// every bundle that mentions it would stop reviews.
				if len(v) >= minHeaderSecretLen {
					secrets = append(secrets, v)
				}
			}
			secretEnv = append(secretEnv, HeadersEnv+"="+string(b))
		}
	}
	change, err := run.ReadChange()
	if err != nil {
		return stats, err
	}
	pf := PassFile{Agent: cfg, OperatorRules: rules, Pass: p}
	// Only names that mean nothing outside the host go in: the key is in
	// the environment, the rules inline.
	pf.Agent.RulesFile = ""
	pf.Agent.LLM.KeyOrigin = cfg.LLM.KeySource()
	pf.Agent.LLM.APIKeyEnv, pf.Agent.LLM.APIKeyFile = APIKeyEnv, ""
	pf.Agent.LLM.HeadersFile = ""

	network := a.o.Network
	var mounts []sandbox.Mount
	caps := bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true, IsolatedHome: true, ContextCompaction: "not_applicable"}
	if agent.IsCLI(cfg.Kind) {
		c, _ := cli.Lookup(cfg.Kind)
		caps = c.Spec().Capabilities
		prefix := agent.CLIPrefix(cfg, a.o.CLIInstallDir)
		if _, err := cli.Installed(prefix); err != nil {
			return stats, fmt.Errorf("%w: run `aicr agent install %s%s` on this host ([agent.cli] install_dir = %s)",
				err, cfg.Kind, versionFlag(cfg), a.o.CLIInstallDir)
		}
		mounts = append(mounts, sandbox.Mount{Host: prefix, Container: cli.PrefixInside, ReadOnly: true})
	}
	if network == "llm-only" {
		if !usesModel {
			// Nothing in a builtin pass talks to the network.
			network = "none"
		} else {
			allow, err := egress.AllowlistFromURLs(cfg.LLM.WithDefaults().BaseURL)
			if err != nil {
				return stats, fmt.Errorf("[sandbox] network = \"llm-only\": %w", err)
			}
			record := func(e egress.Event) {
				a.o.Logger.Info("egress", "run_id", id, "host", e.Host, "port", e.Port, "allowed", e.Allowed, "reason", e.Reason)
				if a.o.RecordEgress != nil {
					a.o.RecordEgress(id, e)
				}
			}
			proxy, sock, err := egress.ForRun(run.Dir(), allow, record)
			if err != nil {
				return stats, err
			}
			defer proxy.Close()
			mounts = append(mounts, sandbox.Mount{Host: sock.HostDir, Container: sock.ContainerDir, ReadOnly: true})
			pf.EgressSocket = sock.ContainerSocket
		}
	}
	pfJSON, err := marshalPassFile(pf)
	if err != nil {
		return stats, err
	}
	repoFiles, repoSymlinks, err := readRepoFiles(run)
	if err != nil {
		return stats, err
	}
	in := bundle.Input{Layout: run, OperatorRules: rules, RepoFiles: repoFiles, RepoSymlinks: repoSymlinks, ChangedPaths: changedPaths(change),
		EnvNames: envNames(a.o.Env, secretEnv), Adapter: cfg.Kind, Secrets: secrets,
		ExtraFiles:   map[string][]byte{PassFileName: pfJSON},
		Capabilities: caps}
	manifest, err := bundle.Materialise(in)
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
	_ = os.Remove(filepath.Join(run.AgentDir(), StatsFileName))

	spec := sandbox.Spec{
		RunID: id, Pass: p.Number, AgentDir: run.AgentDir(), SrcDir: run.SrcDir(), Binary: a.o.Binary,
		Args:      []string{sandbox.BinaryMount, "agent", "pass", "--root", Workspace},
		Env:       append(append([]string(nil), a.o.Env...), manifest.Home.Env()...),
		SecretEnv: secretEnv, Mounts: mounts, Network: network, Timeout: passTimeout(cfg),
		StdoutPath: filepath.Join(run.Dir(), fmt.Sprintf("pass-%d.stdout", p.Number)),
		StderrPath: filepath.Join(run.Dir(), fmt.Sprintf("pass-%d.stderr", p.Number)),
	}
	res, runErr := a.o.Runner.Run(ctx, spec)
	var ps PassStats
	if err := readJSON(filepath.Join(run.AgentDir(), StatsFileName), &ps); err == nil {
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

func passTimeout(cfg agent.Config) time.Duration {
	if cfg.Kind == agent.KindLLM && cfg.LLM.Timeout > 0 {
		return cfg.LLM.Timeout
	}
	return cfg.PassTimeout()
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
		return nil, fmt.Errorf("encode %s: %w", PassFileName, err)
	}
	return os.ReadFile(name)
}

// shareReadOnly makes src/ and the run's change, diff and repository rules
// readable by the container's user and returns the file mounts that put
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
	for _, p := range []string{run.ChangePath(), run.DiffPath(), run.RepoRulesPath()} {
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
