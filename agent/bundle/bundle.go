// Package bundle materialises the runtime bundle of one agent run: every
// file an agent (aicr's own or an agent CLI) is started with, under the
// run's agent/ directory (/workspace/agent in the sandbox), written as one
// atomic step. docs/agent-contract.md ("Runtime bundle") is the contract:
//
//	mcp.json                  the aicr MCP server entry ({"mcpServers":{"aicr":…}})
//	change.json, diff.patch   copies of the run's files (copies, not links:
//	                          the agent dir is writable by the agent)
//	dismissed.json            a copy of the team's dismissals, when any
//	prompt.md                 system + user prompt; system.md and user.md apart
//	AGENTS.md                 the three instruction layers, headed, in order
//	instructions/<layer>/…    each layer's source files
//	skills/<name>/SKILL.md    the winning skill of each name
//	home/                     HOME and XDG dirs (kept across re-materialisation)
//	manifest.json             hashes, env names, capabilities, what was dropped
//
// Nothing secret is written: every file is checked against Input.Secrets.
package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/rundir"
)

// Version is manifest.json's format version.
const Version = 1

// Names inside the bundle.
const (
	MCPConfigName    = "mcp.json"
	PromptName       = "prompt.md"
	SystemPromptName = "system.md"
	UserPromptName   = "user.md"
	AgentsName       = "AGENTS.md"
	ManifestName     = "manifest.json"
	InstructionsDir  = "instructions"
	SkillsDir        = "skills"
	// HomeDirName is the agent's HOME inside the agent dir. It is not part
	// of the bundle: its content (CLI caches, session files) survives a
	// re-materialisation within the run, and the run dir's retention
	// removes it with the run.
	HomeDirName = "home"
)

// DefaultAgentDirInside is the agent dir as the sandboxed agent sees it.
const DefaultAgentDirInside = "/workspace/agent"

// DefaultBinaryInside is the static aicr binary inside the sandbox.
const DefaultBinaryInside = "/opt/aicr/aicr"

// MaxSkillBytes caps one SKILL.md; a larger skill is dropped (a cut skill
// would describe a procedure with its end missing).
const MaxSkillBytes = 32 << 10

// Layers, in precedence order for instructions (visible order too).
const (
	LayerProtected = "protected"
	LayerOperator  = "operator"
	LayerRepo      = "repo"
)

// Capabilities is what an adapter supports; the manifest records it so a
// missing capability degrades visibly instead of silently.
type Capabilities struct {
	// ModelConfig: "injected" (the bundle carries the model endpoint in
	// the CLI's format), "delegated" (the CLI resolves it itself) or
	// "not_applicable".
	ModelConfig      string `json:"model_config"`
	MCP              bool   `json:"mcp"`
	Skills           string `json:"skills"` // "native", "files" (read from skills/), "prompt" or "none"
	RepoInstructions bool   `json:"repo_instructions"`
	IsolatedHome     bool   `json:"isolated_home"`
	StdoutFallback   bool   `json:"stdout_fallback"`
	// ContextCompaction: "injected", "delegated" or "not_applicable".
	ContextCompaction string `json:"context_compaction"`
	// ModelMetadata says, for each of [agent.llm]'s context_window,
	// max_output_tokens and prices, whether the adapter puts it into the
	// CLI's own settings ("injected"), leaves it to the CLI ("delegated")
	// or has nowhere to put it ("not_applicable").
	ModelMetadata map[string]string `json:"model_metadata,omitempty"`
}

// Input is everything a bundle is built from.
type Input struct {
	Layout rundir.Layout
	Prompt prompt.Prompt
	// OperatorRules is [agent] rules_file's content (prompt.ReadRulesFile).
	OperatorRules string
	// OperatorSkillsDir holds <name>/SKILL.md; empty for none.
	OperatorSkillsDir string
	// RepoFiles maps repo-relative paths to their content at the reviewed
	// revision: .aicr/instructions.md, AGENTS.md files,
	// .agents/skills/<name>/SKILL.md. Other paths are dropped and recorded.
	RepoFiles map[string][]byte
	// RepoSymlinks lists repo paths that are symlinks at the reviewed
	// revision; they are refused, never followed.
	RepoSymlinks []string
	// ChangedPaths are the change's repo-relative paths; an AGENTS.md is
	// relevant when it is at the root or in an ancestor dir of one.
	ChangedPaths []string
	// EnvNames are the names (never values) of the variables the agent is
	// started with.
	EnvNames []string
	// MCPCommand is the aicr MCP server's argv as the agent starts it;
	// empty: DefaultMCPCommand(AgentDirInside).
	MCPCommand []string
	// AgentDirInside is the agent dir as the agent sees it; empty:
	// DefaultAgentDirInside. The none runner passes Layout.AgentDir().
	AgentDirInside string
	Capabilities   Capabilities
	Adapter        string
	// ExtraFiles are adapter-native files (bundle-relative path → content),
	// e.g. a CLI's settings; checked like every other file.
	ExtraFiles map[string][]byte
	// Secrets are values that must never land in a file (API keys...).
	Secrets []string
	// Now stamps created_at; nil is time.Now.
	Now func() time.Time
}

// File is one file of the bundle.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Source is one instruction source or skill taken into the bundle.
type Source struct {
	Layer  string `json:"layer"`
	Name   string `json:"name,omitempty"` // skill name
	Source string `json:"source"`         // where it came from (repo path, operator file, "builtin")
	Path   string `json:"path"`           // where it is in the bundle
}

// Dropped is something left out of the bundle, or cut, and why.
type Dropped struct {
	Layer  string `json:"layer"`
	Source string `json:"source"`
	Reason string `json:"reason"`
}

// Manifest is manifest.json.
type Manifest struct {
	Version      int          `json:"version"`
	Adapter      string       `json:"adapter"`
	CreatedAt    time.Time    `json:"created_at"`
	Files        []File       `json:"files"`
	Env          []string     `json:"env"`
	Home         HomeEnv      `json:"home"`
	Capabilities Capabilities `json:"capabilities"`
	MCPCommand   []string     `json:"mcp_command"`
	Instructions []Source     `json:"instructions"`
	Skills       []Source     `json:"skills"`
	Dropped      []Dropped    `json:"dropped"`
	// Preserved lists what the bundle kept from the previous agent dir
	// (the state file, home/); it is not hashed: it is not the bundle.
	Preserved []string `json:"preserved"`
}

// HomeEnv are the isolated-HOME variables (paths inside the agent dir as
// the agent sees them); the runner sets them, adapters point CLIs at them.
type HomeEnv struct {
	HOME            string `json:"HOME"`
	XDGConfigHome   string `json:"XDG_CONFIG_HOME"`
	XDGCacheHome    string `json:"XDG_CACHE_HOME"`
	XDGDataHome     string `json:"XDG_DATA_HOME"`
	XDGStateHome    string `json:"XDG_STATE_HOME"`
	CodexHome       string `json:"CODEX_HOME"`
	ClaudeConfigDir string `json:"CLAUDE_CONFIG_DIR"`
}

// Env returns h as NAME=value entries, in a fixed order.
func (h HomeEnv) Env() []string {
	return []string{
		"HOME=" + h.HOME, "XDG_CONFIG_HOME=" + h.XDGConfigHome, "XDG_CACHE_HOME=" + h.XDGCacheHome,
		"XDG_DATA_HOME=" + h.XDGDataHome, "XDG_STATE_HOME=" + h.XDGStateHome,
		"CODEX_HOME=" + h.CodexHome, "CLAUDE_CONFIG_DIR=" + h.ClaudeConfigDir,
	}
}

// homeSubdirs are created under home/ so CLIs find their dirs writable.
var homeSubdirs = []string{".config", ".cache", ".local/share", ".local/state", ".codex", ".claude"}

// HomeEnvFor is the isolated HOME and XDG dirs of the agent dir at
// agentDir (as the agent sees it).
func HomeEnvFor(agentDir string) HomeEnv { return homeEnv(agentDir) }

// Dirs lists the directories of h, for creating them before a CLI starts.
func (h HomeEnv) Dirs() []string {
	return []string{h.HOME, h.XDGConfigHome, h.XDGCacheHome, h.XDGDataHome, h.XDGStateHome, h.CodexHome, h.ClaudeConfigDir}
}

func homeEnv(agentDirInside string) HomeEnv {
	h := path.Join(agentDirInside, HomeDirName)
	return HomeEnv{
		HOME: h, XDGConfigHome: path.Join(h, ".config"), XDGCacheHome: path.Join(h, ".cache"),
		XDGDataHome: path.Join(h, ".local/share"), XDGStateHome: path.Join(h, ".local/state"),
		CodexHome: path.Join(h, ".codex"), ClaudeConfigDir: path.Join(h, ".claude"),
	}
}

// DefaultMCPCommand is `aicr mcp serve` with the state and change files of
// the agent dir at agentDirInside, using the sandbox's aicr binary.
func DefaultMCPCommand(agentDirInside string) []string {
	return MCPCommand(DefaultBinaryInside, agentDirInside)
}

// MCPCommand is `aicr mcp serve` run from binary for the agent dir at
// agentDir; the none runner passes the host binary and Layout.AgentDir().
func MCPCommand(binary, agentDir string) []string {
	return []string{binary, "mcp", "serve",
		"--state", path.Join(agentDir, rundir.StateFileName),
		"--change", path.Join(agentDir, rundir.ChangeFileName)}
}

// ErrSecret: a file of the bundle would contain a secret value.
var ErrSecret = errors.New("bundle: a file would contain a secret value")

// Materialise builds the bundle for in and swaps it in place of
// in.Layout.AgentDir() in one step; on any error the previous agent dir is
// left as it was.
func Materialise(in Input) (Manifest, error) {
	if in.Layout.Dir() == "." || in.Layout.Dir() == "" {
		return Manifest{}, errors.New("bundle: Input.Layout is not set (build it with rundir.New)")
	}
	for _, n := range in.EnvNames {
		if !validEnvName(n) {
			return Manifest{}, fmt.Errorf("bundle: env name %q is not a variable name (pass names only, never NAME=value)", n)
		}
	}
	// Before plan, so the manifest's preserved list sees what it recovers.
	if err := recoverLeftovers(in.Layout.Dir(), in.Layout.AgentDir()); err != nil {
		return Manifest{}, err
	}
	p, err := plan(in)
	if err != nil {
		return Manifest{}, err
	}
	if err := checkSecrets(p.files, in.Secrets); err != nil {
		return Manifest{}, err
	}
	return p.manifest, writeAtomic(in.Layout.AgentDir(), p)
}

type planned struct {
	files    map[string][]byte // bundle-relative path → content, manifest.json included
	manifest Manifest
}

func plan(in Input) (planned, error) {
	files := map[string][]byte{}
	inside := in.AgentDirInside
	if inside == "" {
		inside = DefaultAgentDirInside
	}
	mcpCmd := in.MCPCommand
	if len(mcpCmd) == 0 {
		mcpCmd = DefaultMCPCommand(inside)
	}
	m := Manifest{
		Version: Version, Adapter: in.Adapter, Capabilities: in.Capabilities,
		Home: homeEnv(inside), MCPCommand: mcpCmd,
		Env: sortedUnique(in.EnvNames), Instructions: []Source{}, Skills: []Source{}, Dropped: []Dropped{}, Preserved: []string{},
	}
	now := time.Now
	if in.Now != nil {
		now = in.Now
	}
	m.CreatedAt = now().UTC()
	for _, name := range preserved {
		if _, err := os.Lstat(filepath.Join(in.Layout.AgentDir(), name)); err == nil {
			m.Preserved = append(m.Preserved, name)
		}
	}

	mcp, err := mcpConfig(mcpCmd)
	if err != nil {
		return planned{}, err
	}
	files[MCPConfigName] = mcp
	for name, src := range map[string]string{rundir.ChangeFileName: in.Layout.ChangePath(), rundir.DiffFileName: in.Layout.DiffPath()} {
		b, err := readFile(src)
		if err != nil {
			return planned{}, fmt.Errorf("bundle: read the run's %s: %w", name, err)
		}
		files[name] = b
	}
	// The team's dismissals in the change's paths, when the reviewer
	// wrote any: data beside the change, never an instruction layer (the
	// prompt lists them as untrusted data).
	switch b, err := os.ReadFile(in.Layout.DismissedPath()); {
	case err == nil:
		files[rundir.DismissedFileName] = b
	case !errors.Is(err, os.ErrNotExist):
		return planned{}, fmt.Errorf("bundle: read the run's %s: %w", rundir.DismissedFileName, err)
	}
	files[SystemPromptName] = []byte(in.Prompt.System)
	files[UserPromptName] = []byte(in.Prompt.User)
	files[PromptName] = []byte("# System prompt\n\n" + in.Prompt.System + "\n\n# User prompt\n\n" + in.Prompt.User)

	layers := collectInstructions(in, &m)
	files[AgentsName] = []byte(renderAgents(layers))
	for _, l := range layers {
		for _, s := range l.sources {
			files[s.bundlePath] = []byte(s.text)
		}
	}
	if err := collectSkills(in, &m, files); err != nil {
		return planned{}, err
	}
	for p, b := range in.ExtraFiles {
		if err := checkRelName(p); err != nil {
			return planned{}, fmt.Errorf("bundle: extra file %q: %w", p, err)
		}
		if _, taken := files[p]; taken || p == ManifestName || p == rundir.StateFileName || p == HomeDirName || strings.HasPrefix(p, HomeDirName+"/") {
			return planned{}, fmt.Errorf("bundle: extra file %q collides with a bundle file or the preserved state", p)
		}
		files[p] = b
	}

	m.Files = make([]File, 0, len(files))
	for p, b := range files {
		m.Files = append(m.Files, File{Path: p, SHA256: sha256Hex(b), Size: int64(len(b))})
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	sort.SliceStable(m.Dropped, func(i, j int) bool {
		a, b := m.Dropped[i], m.Dropped[j]
		if a.Layer != b.Layer {
			return layerRank(a.Layer) < layerRank(b.Layer)
		}
		return a.Source < b.Source
	})
	var mb bytes.Buffer
	enc := json.NewEncoder(&mb)
	enc.SetEscapeHTML(false) // reasons quote <name>; keep them readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return planned{}, fmt.Errorf("bundle: encode manifest: %w", err)
	}
	files[ManifestName] = mb.Bytes()
	return planned{files: files, manifest: m}, nil
}

func mcpConfig(argv []string) ([]byte, error) {
	type server struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	cfg := struct {
		MCPServers map[string]server `json:"mcpServers"`
	}{map[string]server{"aicr": {Command: argv[0], Args: append([]string{}, argv[1:]...)}}}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bundle: encode mcp.json: %w", err)
	}
	return append(b, '\n'), nil
}

// checkSecrets refuses the bundle when any file holds a secret value. The
// error names the file, never the value.
func checkSecrets(files map[string][]byte, secrets []string) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, s := range secrets {
		if strings.TrimSpace(s) == "" {
			continue
		}
		for _, p := range paths {
			if bytes.Contains(files[p], []byte(s)) || strings.Contains(p, s) {
				return fmt.Errorf("%w: %s (pass secrets through the sandbox's env file, never in a bundle file)", ErrSecret, p)
			}
		}
	}
	return nil
}

func validEnvName(n string) bool {
	if n == "" {
		return false
	}
	for i, r := range n {
		ok := r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

func sortedUnique(ss []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func layerRank(l string) int {
	switch l {
	case LayerProtected:
		return 0
	case LayerOperator:
		return 1
	case LayerRepo:
		return 2
	}
	return 3
}
