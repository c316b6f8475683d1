package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/childenv"
	"github.com/aicr-dev/aicr/internal/tailbuf"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/sandbox/egress"
	"github.com/aicr-dev/aicr/secret"
)

// KeyEnv is the variable that holds the model server's key in the CLI's
// environment; adapters name it in the CLI's config (codex env_key,
// opencode {env:…}) or copy it into the CLI's own variables (KeyAs).
const KeyEnv = "AICR_LLM_API_KEY"

// ForwardAddr is where the egress forwarder listens inside the container
// for CLIs that honour HTTPS_PROXY.
const ForwardAddr = "127.0.0.1:3128"

// eventCap bounds the event stream kept in the run dir.
const eventCap = 8 << 20

// Options configure Agent.
type Options struct {
	Kind string
	// LLM is [agent.llm]. APIKey reads the model server's key at each
	// pass; when nil, KeyEnv names the variable of this process's
	// environment that holds it; both unset: the server needs none.
	LLM    llm.Config
	APIKey func() (string, error)
	KeyEnv string
	// Prefix is the install prefix of the CLI's version (the dir that
	// holds node_modules), as this process sees it.
	Prefix string
	// Binary is the aicr binary the CLI starts as its MCP server.
	Binary string
	Limits review.Limits
	// OperatorRules is [agent] rules_file's content.
	OperatorRules string
	// EgressSocket is the egress proxy's socket when the container has no
	// network of its own ([sandbox] network = "llm-only"); empty: the CLI
	// connects directly.
	EgressSocket string
	Logger       *slog.Logger
}

// StderrParser is an Adapter whose CLI reports some failures on stderr
// only (Codex: a required MCP server that did not start ends the run
// before its event stream begins); ParseStderr adds them to ev.
type StderrParser interface {
	ParseStderr(stderr string, ev *Events)
}

// Agent runs one pass of a CLI: it implements agent.Agent.
type Agent struct {
	o       Options
	adapter Adapter
}

// New returns the agent for o.Kind.
func New(o Options) (*Agent, error) {
	a, ok := Lookup(o.Kind)
	if !ok {
		return nil, fmt.Errorf("agent.kind: %q is not an agent CLI (one of: %s)", o.Kind, strings.Join(Kinds(), ", "))
	}
	if o.Prefix == "" {
		return nil, fmt.Errorf("%s: no install prefix", o.Kind)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.LLM = o.LLM.WithDefaults()
	return &Agent{o: o, adapter: a}, nil
}

// Executable is the CLI's program under prefix, checked to exist.
func Executable(a Adapter, prefix string) (string, error) {
	p := filepath.Join(prefix, filepath.FromSlash(a.Spec().Bin))
	if _, err := os.Stat(p); err != nil {
		s := a.Spec()
		return "", fmt.Errorf("%w: %s not found (%w); run `aicr agent install %s` (installs %s@%s)",
			ErrNotInstalled, p, err, s.Kind, s.Package, s.Version)
	}
	return p, nil
}

// Review runs the CLI once for pass p over run.
func (a *Agent) Review(ctx context.Context, run rundir.Layout, p pass.Pass) (pass.Stats, error) {
	spec := a.adapter.Spec()
	stats := pass.Stats{Agent: spec.Kind, Model: a.o.LLM.Model}
	log := a.o.Logger.With("agent", spec.Kind, "pass", p.Number)
	exe, err := Executable(a.adapter, a.o.Prefix)
	if err != nil {
		return stats, err
	}
	setup, err := a.setup(run, p)
	if err != nil {
		return stats, err
	}
	inv, err := a.adapter.Configure(setup)
	if err != nil {
		return stats, fmt.Errorf("%s: configure: %w", spec.Kind, err)
	}
	if err := writeHomeFiles(setup.Home.HOME, inv.Files); err != nil {
		return stats, err
	}
	env, stopEgress, err := a.environment(ctx, setup, inv)
	if err != nil {
		return stats, err
	}
	defer stopEgress()

	before := recorded(run.StatePath())
	eventsPath, stderrPath := run.CLIEventsPaths(spec.Kind, p.Number)
	events, err := os.OpenFile(eventsPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return stats, fmt.Errorf("%s: event log: %w", spec.Kind, err)
	}
	stderrFile, err := os.OpenFile(stderrPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		events.Close()
		return stats, fmt.Errorf("%s: stderr log: %w", spec.Kind, err)
	}
	defer stderrFile.Close()
	stderr := tailbuf.New(4 << 10)
	cmd := exec.CommandContext(ctx, exe, inv.Args...)
	cmd.Dir = run.AgentDir()
	cmd.Env = env
	cmd.Stdout = &capWriter{w: events, left: eventCap}
	cmd.Stderr = io.MultiWriter(&capWriter{w: stderrFile, left: eventCap}, stderr)
	if inv.Stdin != "" {
		cmd.Stdin = strings.NewReader(inv.Stdin)
	}
	// The CLI starts node, the MCP server and tools of its own: the whole
	// group goes when the pass ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	events.Close()
	ev, perr := parseFile(a.adapter, eventsPath)
	if sp, ok := a.adapter.(StderrParser); ok {
		sp.ParseStderr(stderr.String(), &ev)
	}
	stats.Turns, stats.InputTokens, stats.OutputTokens = ev.Turns, ev.InputTokens, ev.OutputTokens
	stats.CacheReadTokens, stats.CacheWriteTokens = ev.CacheReadTokens, ev.CacheWriteTokens
	stats.Text = ev.FinalText
	if ev.Model != "" {
		stats.Model = ev.Model
	}
	log.Info("agent CLI pass", "exit", exitCode(runErr), "duration", time.Since(start).Round(time.Millisecond),
		"events", ev.Lines, "tool_calls", len(ev.ToolCalls), "turns", ev.Turns)
	if ctx.Err() != nil {
		return stats, fmt.Errorf("%s pass %d: %w", spec.Kind, p.Number, context.Cause(ctx))
	}
	if perr != nil {
		log.Warn("agent CLI event stream", "err", perr)
	}
	// A server or CLI that echoes the credential it refused must not put
	// it into the run's error, the log or the audit trail.
	key, _ := a.key()
	// What the MCP server recorded is the pass's outcome; the exit status
	// and the event stream only explain an empty one.
	if recorded(run.StatePath()) > before {
		if runErr != nil {
			log.Warn("agent CLI exited with an error after recording its result", "err", runErr,
				"stderr", scrubText(stderr.String(), key))
		}
		return stats, nil
	}
	return stats, scrub(a.explain(ev, runErr, stderr.String(), eventsPath), key)
}

// explain says why a pass recorded nothing.
func (a *Agent) explain(ev Events, runErr error, stderr, eventsPath string) error {
	kind := a.adapter.Spec().Kind
	switch {
	case ev.ContextOverflow:
		return fmt.Errorf("%s: %w: the CLI reported that the prompt does not fit the model's context", kind, llm.ErrContextOverflow)
	case ev.MCPFailure != "":
		return fmt.Errorf("%w: %s could not use aicr's MCP server (%s); check that %s runs in the sandbox (stderr: %s)",
			ErrMisconfigured, kind, ev.MCPFailure, a.o.Binary, oneLine(stderr))
	case len(ev.PermissionDenials) > 0:
		return fmt.Errorf("%w: %s refused to run %s; the aicr tools must be auto-approved in its config",
			ErrMisconfigured, kind, strings.Join(ev.PermissionDenials, ", "))
	case ev.APIStatus == 401 || ev.APIStatus == 403:
		return fmt.Errorf("%w: %s: the model server refused the key (%d %s); check [agent.llm] api_key_env or api_key_file",
			llm.ErrAuth, kind, ev.APIStatus, ev.APIError)
	case ev.APIError != "":
		return fmt.Errorf("%s: model API error: %s", kind, ev.APIError)
	case ev.Failed && ev.Reason != "":
		return fmt.Errorf("%s stopped without recording a result: %s (events: %s)", kind, ev.Reason, eventsPath)
	case runErr != nil:
		return fmt.Errorf("%s exited with %w: %s (events: %s)", kind, runErr, oneLine(stderr), eventsPath)
	}
	// A clean run that called no aicr tool: the ladder repairs it or
	// normalizes its prose.
	return nil
}

func (a *Agent) setup(run rundir.Layout, p pass.Pass) (Setup, error) {
	spec := a.adapter.Spec()
	change, err := run.ReadChange()
	if err != nil {
		return Setup{}, err
	}
	diff, err := readOptional(run.DiffPath())
	if err != nil {
		return Setup{}, fmt.Errorf("read diff: %w", err)
	}
	repoRules, err := readOptional(run.RepoRulesPath())
	if err != nil {
		return Setup{}, fmt.Errorf("read repository rules: %w", err)
	}
	dismissed, err := prompt.ReadDismissals(run.DismissedPath())
	if err != nil {
		return Setup{}, err
	}
	lang, err := prompt.ReadOutputLanguage(run.OutputLanguagePath())
	if err != nil {
		return Setup{}, err
	}
	mangle := spec.seenName()
	pr := prompt.BuildScaled(prompt.Input{Change: change, Diff: diff, OperatorRules: a.o.OperatorRules,
		RepoRules: repoRules, Dismissed: dismissed, Pass: p, Tools: seenNames(mangle), OutputLanguage: lang}, a.o.LLM.PromptBudget(), p.Scale())
	agentDir := run.AgentDir()
	userFile := run.PassPromptPath(p.Number)
	if err := os.WriteFile(userFile, []byte(pr.User), 0o600); err != nil {
		return Setup{}, fmt.Errorf("write the prompt: %w", err)
	}
	home := bundle.HomeEnvFor(agentDir)
	for _, d := range home.Dirs() {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return Setup{}, fmt.Errorf("%s: home: %w", spec.Kind, err)
		}
	}
	mcp := []string{a.o.Binary, "mcp", "serve", "--state", run.StatePath(), "--change", run.ChangePath(),
		"--tool-names", string(spec.ToolNames)}
	mcp = append(mcp, a.o.Limits.ServeArgs()...)
	return Setup{LLM: a.o.LLM, KeyEnv: KeyEnv, MCPCommand: mcp, AgentDir: agentDir, Home: home,
		System: pr.System, User: pr.User, UserFile: userFile, DiffFile: run.DiffPath(), SeenName: mangle}, nil
}

// environment builds the CLI's environment: the allowlist, the isolated
// HOME, the adapter's settings, the key under the names it reads, and
// the way out through the egress proxy when there is one.
func (a *Agent) environment(ctx context.Context, s Setup, inv Invocation) ([]string, func(), error) {
	set := append([]string(nil), s.Home.Env()...)
	set = append(set, inv.Env...)
	key, err := a.key()
	if err != nil {
		return nil, nil, err
	}
	if key == "" {
		// A server without authentication: some CLIs refuse to start
		// without a key, so they get a placeholder.
		key = "none"
	}
	set = append(set, KeyEnv+"="+key)
	for _, name := range inv.KeyAs {
		set = append(set, name+"="+key)
	}
	stop := func() {}
	if a.o.EgressSocket != "" {
		proxyEnv, stopFn, err := startEgress(ctx, a.o.EgressSocket, s.LLM.BaseURL)
		if err != nil {
			return nil, nil, err
		}
		set = append(set, proxyEnv...)
		stop = stopFn
	}
	return childenv.Build(nil, set...), stop, nil
}

func (a *Agent) key() (string, error) {
	if a.o.APIKey != nil {
		k, err := a.o.APIKey()
		if err != nil {
			return "", fmt.Errorf("%w: %w", llm.ErrAuth, err)
		}
		return k, nil
	}
	if a.o.KeyEnv != "" {
		return os.Getenv(a.o.KeyEnv), nil
	}
	return "", nil
}

// startEgress opens the container's only ways out. A model server on the
// host's loopback (a local vLLM, the tests' scripted server) is tunnelled
// to the same address inside the container, because clients never send
// loopback through a proxy; any other endpoint goes through HTTPS_PROXY.
func startEgress(ctx context.Context, socket, baseURL string) ([]string, func(), error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("egress: base_url %q: %w", baseURL, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	target := net.JoinHostPort(u.Hostname(), port)
	if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
		listen := target
		if u.Hostname() == "localhost" {
			listen = net.JoinHostPort("127.0.0.1", port)
		}
		ln, err := new(net.ListenConfig).Listen(ctx, "tcp", listen)
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("egress: tunnel %s: %w", listen, err)
		}
		go func() { _ = egress.TunnelListener(ctx, ln, socket, target) }()
		return []string{"NO_PROXY=*", "no_proxy=*"}, cancel, nil
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", ForwardAddr)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("egress: forwarder %s: %w", ForwardAddr, err)
	}
	go func() { _ = egress.ForwardListener(ctx, ln, socket) }()
	proxy := "http://" + ForwardAddr
	return []string{"HTTPS_PROXY=" + proxy, "HTTP_PROXY=" + proxy, "https_proxy=" + proxy, "http_proxy=" + proxy,
		"NO_PROXY=", "no_proxy="}, cancel, nil
}

// writeHomeFiles writes the adapter's config files below home.
func writeHomeFiles(home string, files map[string][]byte) error {
	for rel, b := range files {
		clean := path.Clean(rel)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			return fmt.Errorf("agent CLI config file %q is outside HOME", rel)
		}
		p := filepath.Join(home, filepath.FromSlash(clean))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("agent CLI config %s: %w", rel, err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return fmt.Errorf("agent CLI config %s: %w", rel, err)
		}
	}
	return nil
}

// recorded counts what the MCP server has recorded in the state file.
func recorded(statePath string) int {
	st, err := review.LoadState(statePath)
	if err != nil {
		return 0
	}
	n := len(st.Problems) + len(st.Summaries) + len(st.ContextRequests) + len(st.AttributionRequests)
	if st.Skip != nil {
		n++
	}
	return n
}

func parseFile(a Adapter, p string) (Events, error) {
	f, err := os.Open(p)
	if err != nil {
		return Events{}, err
	}
	defer f.Close()
	return a.Parse(f)
}

func readOptional(p string) (string, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

// capWriter keeps the first left bytes and swallows the rest, so a CLI
// printing without end neither fills the disk nor blocks.
type capWriter struct {
	w    *os.File
	left int64
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.left > 0 {
		n := min(int64(len(p)), c.left)
		if _, err := c.w.Write(p[:n]); err != nil {
			return 0, err
		}
		c.left -= n
	}
	return len(p), nil
}

func scrubText(s, key string) string {
	if key == "" || key == "none" {
		return s
	}
	return secret.Scrub(s, key)
}

// scrub takes key out of err's text while errors.Is still sees the chain.
func scrub(err error, key string) error {
	if err == nil || key == "" || key == "none" || !strings.Contains(err.Error(), key) {
		return err
	}
	return &scrubbedError{err: err, key: key}
}

type scrubbedError struct {
	err error
	key string
}

func (e *scrubbedError) Error() string { return secret.Scrub(e.err.Error(), e.key) }
func (e *scrubbedError) Unwrap() error { return e.err }
