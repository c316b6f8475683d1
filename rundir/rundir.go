// Package rundir owns the layout of one review run's directory,
// <data_dir>/runs/<run_id>:
//
//	change.json   the vcs.Change the adapter fetched (WriteChange/ReadChange)
//	diff.patch    the unified diff of the change
//	src/<path>    the new content of every changed text file in scope
//	agent/        the agent's working directory, with the state file
//	              .aicr-output-state.json the review tools write
//	home/         HOME of the agent process, so an agent CLI's config and
//	              caches stay inside the run and out of the service user's
//	dismissed.json  the repo's dismissed findings in the change's paths,
//	              listed in the prompt of model-backed agents
//	repo/<path>   the repository's instruction files and skills at the
//	              reviewed revision (.aicr/instructions.md, AGENTS.md,
//	              .agents/skills/<name>/SKILL.md), listed in repo.json
//
// Every other package (the adapters, the review server, the agents, the
// daemon) asks a Layout for these paths instead of joining names itself.
// It is a leaf: it imports vcs for the Change type and nothing of aicr
// above it.
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/internal/atomicfile"
	"github.com/aicr-dev/aicr/redact"
	"github.com/aicr-dev/aicr/vcs"
)

// Names inside a run directory.
const (
	ChangeFileName = "change.json"
	DiffFileName   = "diff.patch"
	SrcDirName     = "src"
	AgentDirName   = "agent"
	HomeDirName    = "home"
	// StateFileName is the review state file's name inside the agent
	// directory; review.StateFileName is this constant.
	StateFileName = ".aicr-output-state.json"
	// RepoRulesFileName holds the repository's .aicr/instructions.md as
	// of the reviewed revision (capped), written by the ladder before the
	// first pass when the repository has one. It sits beside change.json,
	// not under src/, so it is never mistaken for part of the change.
	RepoRulesFileName = "repo-rules.md"
	// DismissedFileName lists the repo's dismissed findings in the
	// change's paths (prompt.WriteDismissals), written by the daemon's
	// reviewer before the first pass of a model-backed agent, so the
	// prompt tells the model not to raise them again. Beside change.json,
	// like repo-rules.md, so the sandbox reads it the same way.
	DismissedFileName = "dismissed.json"
	// OutputLanguageFileName names the language the model is to write
	// in (prompt.WriteOutputLanguage), written by the daemon's reviewer
	// before the first pass when it is not English; beside change.json,
	// so the sandbox reads it the same way.
	OutputLanguageFileName = "output-language"
	// EgressDirName holds only the egress proxy's socket (egress.DirName,
	// egress.SocketName); the runner mounts this directory into the container.
	EgressDirName    = "egress"
	EgressSocketName = "proxy.sock"
	// RepoDirName holds the repository's instruction files and skills as
	// of the reviewed revision, at their repository paths; RepoIndexName
	// lists them and the symlinks that were refused. Like repo-rules.md
	// they sit beside src/, never in it.
	RepoDirName   = "repo"
	RepoIndexName = "repo.json"
	// RunsDirName is the folder under data_dir that holds one run
	// directory per run, named by the run's id.
	RunsDirName = "runs"
	// PassFileName and PassStatsFileName live in the agent directory: the
	// pass description the host hands a sandboxed pass, and what the pass
	// cost, written by the agent inside.
	PassFileName      = "pass.json"
	PassStatsFileName = "pass-stats.json"
)

// RunsDir is <dataDir>/runs, the parent of every run directory.
func RunsDir(dataDir string) string { return filepath.Join(dataDir, RunsDirName) }

// ForRun is the layout of run id's directory, <dataDir>/runs/<id>.
func ForRun(dataDir string, id int64) Layout {
	return New(filepath.Join(RunsDir(dataDir), strconv.FormatInt(id, 10)))
}

// ParseRunID reads a run id from a run directory's base name; ok is false
// for a name that is not a positive decimal id (a stray file in runs/).
func ParseRunID(name string) (id int64, ok bool) {
	id, err := strconv.ParseInt(name, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != name {
		return 0, false
	}
	return id, true
}

// ErrNoChange: the run directory has no change.json (never fetched, or
// cleaned up).
var ErrNoChange = errors.New("no change file")

// Layout is the layout of one run directory. The zero value is not
// usable; build it with New or FromStatePath.
type Layout struct {
	dir string
}

// New returns the layout of the run directory dir.
func New(dir string) Layout { return Layout{dir: filepath.Clean(dir)} }

// FromStatePath returns the layout a state file at statePath belongs to:
// the state file sits in the agent directory, one level below the run
// directory. `aicr mcp serve --state` relies on this.
func FromStatePath(statePath string) Layout {
	return New(filepath.Join(filepath.Dir(statePath), ".."))
}

// Dir is the run directory itself.
func (l Layout) Dir() string { return l.dir }

// RunID is the run's id from the directory's name (ForRun's layout); ok
// is false for a run directory outside data_dir/runs (aicr agent test,
// the container's /workspace).
func (l Layout) RunID() (id int64, ok bool) { return ParseRunID(filepath.Base(l.dir)) }

// PassFilePath is pass.json in the agent directory.
func (l Layout) PassFilePath() string { return filepath.Join(l.AgentDir(), PassFileName) }

// PassStatsPath is pass-stats.json in the agent directory.
func (l Layout) PassStatsPath() string { return filepath.Join(l.AgentDir(), PassStatsFileName) }

// SandboxOutputPaths are where the container's stdout and stderr of pass
// n are kept, beside change.json (not in agent/, which the container
// writes).
func (l Layout) SandboxOutputPaths(n int) (stdout, stderr string) {
	base := filepath.Join(l.dir, "pass-"+strconv.Itoa(n))
	return base + ".stdout", base + ".stderr"
}

// CLIEventsPaths are an agent CLI's JSON event stream and stderr of pass
// n, in the agent directory.
func (l Layout) CLIEventsPaths(kind string, n int) (events, stderr string) {
	base := filepath.Join(l.AgentDir(), kind+"-pass-"+strconv.Itoa(n))
	return base + ".jsonl", base + ".stderr"
}

// PassPromptPath is the user prompt of pass n an agent CLI reads, in the
// agent directory.
func (l Layout) PassPromptPath(n int) string {
	return filepath.Join(l.AgentDir(), "prompt-pass-"+strconv.Itoa(n)+".md")
}

// ChangePath is the change.json of the run.
func (l Layout) ChangePath() string { return filepath.Join(l.dir, ChangeFileName) }

// DiffPath is the unified diff of the change.
func (l Layout) DiffPath() string { return filepath.Join(l.dir, DiffFileName) }

// SrcDir holds the new content of the changed files.
func (l Layout) SrcDir() string { return filepath.Join(l.dir, SrcDirName) }

// AgentDir is the agent's working directory.
func (l Layout) AgentDir() string { return filepath.Join(l.dir, AgentDirName) }

// EgressSocketPath is the unix socket of the run's egress proxy.
func (l Layout) EgressSocketPath() string {
	return filepath.Join(l.dir, EgressDirName, EgressSocketName)
}

// HomeDir is the HOME the agent process gets.
func (l Layout) HomeDir() string { return filepath.Join(l.dir, HomeDirName) }

// StatePath is the review state file the MCP tools write.
func (l Layout) StatePath() string { return filepath.Join(l.AgentDir(), StateFileName) }

// RepoRulesPath is the repository's review instructions at the reviewed
// revision; absent when the repository has none. Model-backed agents pass
// its content to prompt.Build as RepoRules.
func (l Layout) RepoRulesPath() string { return filepath.Join(l.dir, RepoRulesFileName) }

// DismissedPath is the repo's dismissed findings in the change's paths;
// absent when there are none or the agent needs no prompt.
func (l Layout) DismissedPath() string { return filepath.Join(l.dir, DismissedFileName) }

// OutputLanguagePath is the language the model writes in; absent for
// English.
func (l Layout) OutputLanguagePath() string { return filepath.Join(l.dir, OutputLanguageFileName) }

// RepoDir holds the repository files the ladder read at the reviewed
// revision (RepoFilePath).
func (l Layout) RepoDir() string { return filepath.Join(l.dir, RepoDirName) }

// RepoIndexPath is the RepoIndex of RepoDir.
func (l Layout) RepoIndexPath() string { return filepath.Join(l.dir, RepoIndexName) }

// RepoFilePath is where the repository file rel (slash-separated, e.g.
// ".agents/skills/go/SKILL.md") is kept; it refuses names that would land
// outside repo/, like SrcPath.
func (l Layout) RepoFilePath(rel string) (string, error) {
	if err := checkRelPath(rel); err != nil {
		return "", err
	}
	dir := l.RepoDir()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q: resolves outside the run directory", rel)
	}
	return p, nil
}

// RepoIndex is repo.json: what the ladder read from the repository at the
// reviewed revision for the agent's instructions and skills.
type RepoIndex struct {
	// Files are the repository paths kept under repo/.
	Files []string `json:"files"`
	// Symlinks are instruction or skill paths that are symlinks at the
	// revision: refused, never followed, listed so the bundle records why.
	Symlinks []string `json:"symlinks"`
}

// WriteRepoIndex writes repo.json.
func (l Layout) WriteRepoIndex(ix RepoIndex) error {
	b, err := json.MarshalIndent(ix, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", RepoIndexName, err)
	}
	if err := os.WriteFile(l.RepoIndexPath(), append(b, '\n'), 0o640); err != nil {
		return fmt.Errorf("write %s: %w", RepoIndexName, err)
	}
	return nil
}

// ReadRepoIndex reads repo.json and the files it lists, keyed by their
// repository paths. A run without one (the repository has none of these
// files, or the run predates them) reads as empty.
func (l Layout) ReadRepoIndex() (RepoIndex, map[string][]byte, error) {
	var ix RepoIndex
	b, err := os.ReadFile(l.RepoIndexPath())
	if errors.Is(err, os.ErrNotExist) {
		return ix, nil, nil
	}
	if err != nil {
		return ix, nil, fmt.Errorf("read %s: %w", RepoIndexName, err)
	}
	if err := json.Unmarshal(b, &ix); err != nil {
		return ix, nil, fmt.Errorf("decode %s: %w", RepoIndexName, err)
	}
	files := make(map[string][]byte, len(ix.Files))
	for _, rel := range ix.Files {
		p, err := l.RepoFilePath(rel)
		if err != nil {
			return ix, nil, fmt.Errorf("%s: %w", RepoIndexName, err)
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return ix, nil, fmt.Errorf("%s lists %s: %w", RepoIndexName, rel, err)
		}
		files[rel] = content
	}
	return ix, files, nil
}

// SrcPath is where the new content of file (a vcs.FileChange.Path:
// slash-separated, relative to the reviewed root) lives. It refuses names
// that would land outside src/: absolute paths, empty, "." or ".."
// segments, NUL bytes. Names with spaces, glob characters or non-ASCII
// letters are fine.
func (l Layout) SrcPath(file string) (string, error) {
	if err := checkRelPath(file); err != nil {
		return "", err
	}
	src := l.SrcDir()
	p := filepath.Join(src, filepath.FromSlash(file))
	if !strings.HasPrefix(p, src+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q: resolves outside the run directory", file)
	}
	return p, nil
}

func checkRelPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("path %q: must be a non-empty relative path", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("path %q: must not contain empty, . or .. segments", p)
		}
	}
	return nil
}

// Create makes the run directory with its src/, agent/ and home/
// subdirectories, private to the service user.
func (l Layout) Create() error {
	for _, d := range []string{l.SrcDir(), l.AgentDir(), l.HomeDir()} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("create run dir: %w", err)
		}
	}
	return nil
}

// WriteChange writes change.json atomically (temp file, rename), so a
// reader never sees half of it. The commit message is stored with the
// credentials it quotes blanked (redact.Text): the file is kept for the
// run's retention and read by the agent and the model; the committed
// sources, where the builtin pre-pass finds credentials, are not touched.
func (l Layout) WriteChange(c *vcs.Change) error {
	stored := *c
	stored.Description = redact.Text(c.Description)
	b, err := json.MarshalIndent(&stored, "", "  ")
	if err != nil {
		return fmt.Errorf("encode change: %w", err)
	}
	if err := atomicfile.WriteFile(l.ChangePath(), append(b, '\n'), 0o640); err != nil {
		return fmt.Errorf("write change: %w", err)
	}
	return nil
}

// ReadChange reads the run's change.json.
func (l Layout) ReadChange() (*vcs.Change, error) { return ReadChange(l.ChangePath()) }

// ReadChange reads a change.json at path, for callers given the file
// itself (`aicr mcp serve --change`). A missing file wraps ErrNoChange.
func ReadChange(path string) (*vcs.Change, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load change %s: %w", path, ErrNoChange)
	}
	if err != nil {
		return nil, fmt.Errorf("load change: %w", err)
	}
	var c vcs.Change
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("decode change %s: %w", path, err)
	}
	return &c, nil
}
