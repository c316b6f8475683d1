// Package rundir describes the files of one review run as an agent sees
// them. It is a leaf so that agent adapters (agent/builtin, ...) and the
// agent package that constructs them can share the type without an import
// cycle; use it as agent.Run.
package rundir

import (
	"path/filepath"

	"github.com/aicr-dev/aicr/review"
)

// Run holds the paths of one run directory.
type Run struct {
	// Dir is the run directory, <data_dir>/runs/<run_id>.
	Dir string
	// AgentDir is the agent's working directory, Dir/agent.
	AgentDir string
	// ChangePath is Dir/change.json, the JSON of a vcs.Change.
	ChangePath string
	// DiffPath is Dir/diff.patch.
	DiffPath string
	// SrcDir holds the new content of changed text files, Dir/src.
	SrcDir string
	// StatePath is AgentDir/.aicr-output-state.json.
	StatePath string
}

// New returns the standard layout of the run directory dir.
func New(dir string) Run {
	agentDir := filepath.Join(dir, "agent")
	return Run{
		Dir:        dir,
		AgentDir:   agentDir,
		ChangePath: filepath.Join(dir, "change.json"),
		DiffPath:   filepath.Join(dir, "diff.patch"),
		SrcDir:     filepath.Join(dir, "src"),
		StatePath:  filepath.Join(agentDir, review.StateFileName),
	}
}
