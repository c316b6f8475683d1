// Package cli runs the agent CLIs teams already use (Claude Code, Codex,
// OpenCode, Kilo, Qwen Code, Gemini CLI) as review agents. Each CLI is an
// Adapter: the facts of its npm package, how to configure it (its own
// config files in an isolated HOME, the model endpoint from [agent.llm],
// aicr's MCP server, auto-approval of the aicr tools only, telemetry and
// update checks off) and how to read its JSON event stream. Agent runs
// one pass of any of them; the sandbox runs Agent inside the container
// through `aicr agent pass`, exactly as it runs the llm agent.
//
// Success is what aicr's MCP server recorded in the state file, never the
// CLI's exit status: every CLI exits 0 when its MCP server failed to
// start or its tools were refused. The event stream only explains why
// nothing was recorded.
package cli

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/review"
)

// Agent kinds, as [agent] kind names them.
const (
	KindClaudeCode = "claude-code"
	KindCodex      = "codex"
	KindOpenCode   = "opencode"
	KindKilo       = "kilo"
	KindQwenCode   = "qwen-code"
	KindGeminiCLI  = "gemini-cli"
)

var (
	// ErrMisconfigured: the CLI ran but could not use aicr's tools (its
	// MCP server did not start, the tools were refused or filtered out,
	// the model endpoint refused the key). Retrying changes nothing; the
	// message names what to fix.
	ErrMisconfigured = errors.New("agent CLI misconfigured")
	// ErrNotInstalled: the pinned package is not in the install dir.
	ErrNotInstalled = errors.New("agent CLI not installed")
)

// Spec is what aicr knows about one CLI's package.
type Spec struct {
	Kind string
	// Package is the npm package; Version the pinned version installed by
	// default; MinVersion the oldest version the adapter was proven with.
	Package, Version, MinVersion string
	// Bin is the executable relative to the install prefix, e.g.
	// "node_modules/.bin/claude".
	Bin string
	// APIs are the [agent.llm] api values the CLI can speak.
	APIs []string
	// ToolNames is the --tool-names the aicr MCP server is started with.
	ToolNames review.ToolNaming
	// Mangle maps an aicr tool ("aicr.report_problem") to the name the
	// model sees through the CLI ("mcp__aicr__aicr_report_problem").
	Mangle func(tool string) string
	// Capabilities go into the bundle's manifest.
	Capabilities bundle.Capabilities
	// Limits are what the README's table says about the CLI's known limits.
	Limits string
}

// Setup is what a CLI is configured with. Paths are as the CLI sees them
// (inside the container when sandboxed).
type Setup struct {
	// LLM is [agent.llm] with its defaults applied. The key is not in it:
	// KeyEnv names the variable that holds it in the CLI's environment.
	LLM    llm.Config
	KeyEnv string
	// MCPCommand is the complete argv of aicr's MCP server, --tool-names
	// included.
	MCPCommand []string
	// AgentDir is the run's agent dir (the CLI's working directory) and
	// Home the isolated HOME/XDG dirs inside it.
	AgentDir string
	Home     bundle.HomeEnv
	// System and User are the pass's prompt; UserFile and DiffFile hold
	// the user prompt and the diff, for CLIs that read files better than
	// arguments.
	System, User       string
	UserFile, DiffFile string
	// SeenName maps an aicr tool ("aicr.report_problem") to the name the
	// model sees through this CLI; the prompt uses it.
	SeenName func(tool string) string
}

// Invocation is one run of the CLI.
type Invocation struct {
	// Files are written below HOME (HOME-relative path → content) before
	// the CLI starts, mode 0600. They must not contain secrets: the key
	// reaches the CLI through the environment only.
	Files map[string][]byte
	// Args follow the CLI's executable.
	Args []string
	// Env are non-secret NAME=value additions.
	Env []string
	// KeyAs are the variables the CLI reads its key from; each gets the
	// value of Setup.KeyEnv in the CLI's environment only.
	KeyAs []string
	// Stdin is the CLI's standard input ("" is /dev/null).
	Stdin string
}

// Events is what the CLI's event stream says about a pass.
type Events struct {
	// Model is the model the CLI reported using.
	Model string
	// Turns counts model round trips; the tokens are summed over them.
	// InputTokens is the uncached prompt; CacheReadTokens and
	// CacheWriteTokens the prompt the provider read from and wrote to its
	// cache, where the CLI reports them, so the cost is the bill's.
	Turns, InputTokens, OutputTokens  int
	CacheReadTokens, CacheWriteTokens int
	// CostUSD is the cost the CLI computed itself, when it reports one.
	CostUSD float64
	// FinalText is the last assistant prose (for the ladder's prose
	// normalization).
	FinalText string
	// ToolCalls are the calls of aicr tools the CLI made, in order.
	ToolCalls []ToolCall
	// PermissionDenials name tools the CLI refused to run.
	PermissionDenials []string
	// MCPFailure says why the aicr MCP server was not usable ("failed",
	// "disconnected"); empty when it was, or the stream does not say.
	MCPFailure string
	// ContextOverflow: the CLI's own signal that the prompt did not fit.
	ContextOverflow bool
	// APIError is the model API's refusal as the CLI reported it; Status
	// its HTTP status when known.
	APIError  string
	APIStatus int
	// Failed: the stream ended in the CLI's own failure result; Reason
	// is the CLI's word for why ("error_max_turns"), when it says.
	Failed bool
	Reason string
	// Lines counts events read; Malformed those that were not JSON.
	Lines, Malformed int
}

// ToolCall is one aicr tool call in the event stream.
type ToolCall struct {
	// Name is as the CLI reported it (mangled, e.g. mcp__aicr__aicr_skip).
	Name string
	// Failed: the call came back as an error (aicr refused the input, or
	// the CLI could not make it); Error says why.
	Failed bool
	Error  string
}

// Adapter is one CLI.
type Adapter interface {
	Spec() Spec
	// Configure returns how to run the CLI for s.
	Configure(s Setup) (Invocation, error)
	// Parse reads the CLI's stdout event stream to its end.
	Parse(r io.Reader) (Events, error)
}

var adapters = map[string]Adapter{
	KindClaudeCode: claudeCode{},
	KindCodex:      codex{},
	KindOpenCode:   openCode{kilo: false},
	KindKilo:       openCode{kilo: true},
	KindQwenCode:   qwenCode{},
	KindGeminiCLI:  geminiCLI{},
}

// Lookup returns the adapter of kind.
func Lookup(kind string) (Adapter, bool) {
	a, ok := adapters[kind]
	return a, ok
}

// Kinds lists the CLI kinds, sorted.
func Kinds() []string {
	kinds := make([]string, 0, len(adapters))
	for k := range adapters {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// IsKind says whether kind is an agent CLI.
func IsKind(kind string) bool {
	_, ok := adapters[kind]
	return ok
}

// Config is the [agent.cli] table.
type Config struct {
	// Version overrides the adapter's pinned version.
	Version string `toml:"version"`
	// InstallDir holds <kind>/<version>/ installs (`aicr agent install`);
	// empty: <data_dir>/agent-clis.
	InstallDir string `toml:"install_dir"`
	// FallbackLLM runs the llm agent (same [agent.llm]) for a pass the CLI
	// could not complete: the last rung of the ladder.
	FallbackLLM bool `toml:"fallback_llm"`
}

// VersionFor is the version to use for spec.
func (c Config) VersionFor(s Spec) string {
	if c.Version != "" {
		return c.Version
	}
	return s.Version
}

// Validate checks [agent.cli] and [agent.llm] for kind.
func Validate(kind string, c Config, l llm.Config) error {
	a, ok := Lookup(kind)
	if !ok {
		return fmt.Errorf("agent.kind: %q is not an agent CLI (one of: %s)", kind, strings.Join(Kinds(), ", "))
	}
	var errs []error
	if err := l.Validate(); err != nil {
		errs = append(errs, err)
	}
	spec := a.Spec()
	if l.API != "" && !contains(spec.APIs, l.API) {
		errs = append(errs, fmt.Errorf("agent.llm.api: %s speaks %s, not %q; point [agent.llm] at a server that speaks it",
			kind, strings.Join(spec.APIs, " or "), l.API))
	}
	if l.HeadersFile != "" {
		// Each CLI takes headers its own way, and they may be secrets
		// that must not land in its config files: not wired yet.
		errs = append(errs, fmt.Errorf("agent.llm.headers_file: not passed to agent CLIs yet; remove it or use [agent] kind = \"llm\""))
	}
	if c.Version != "" {
		if err := checkVersion(spec, c.Version); err != nil {
			errs = append(errs, fmt.Errorf("agent.cli.version: %w", err))
		}
	}
	return errors.Join(errs...)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func (s Spec) seenName() func(string) string {
	if s.Mangle != nil {
		return s.Mangle
	}
	return func(t string) string { return t }
}

// seenNames maps every aicr tool to what the model sees through a.
func seenNames(mangle func(string) string) map[string]string {
	m := map[string]string{}
	for _, t := range review.ToolNames {
		m[t] = mangle(t)
	}
	return m
}
