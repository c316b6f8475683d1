package review

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aicr-dev/aicr/internal/atomicfile"
)

// State file errors. A missing file and a damaged file mean different
// things to the orchestrator: ErrNoState says no MCP server ever ran for
// the pass (the agent never connected); ErrCorruptState says something wrote
// a file that is not a state file, which must not be mistaken for "no
// findings".
var (
	ErrNoState      = errors.New("no state file")
	ErrCorruptState = errors.New("corrupt state file")
	ErrStateVersion = errors.New("unsupported state file version")
)

// NewState returns an empty state of the current version. Its slices are
// empty, not nil, so it serialises as [] rather than null.
func NewState() *State {
	s := &State{Version: StateVersion}
	s.normalize()
	return s
}

func (s *State) normalize() {
	if s.Problems == nil {
		s.Problems = []Problem{}
	}
	if s.Summaries == nil {
		s.Summaries = []Summary{}
	}
	if s.ContextRequests == nil {
		s.ContextRequests = []ContextRequest{}
	}
	if s.AttributionRequests == nil {
		s.AttributionRequests = []AttributionRequest{}
	}
	if s.Rejected == nil {
		s.Rejected = []Rejection{}
	}
	// A file written before rejectedTotal existed counts only what it kept.
	s.RejectedTotal = max(s.RejectedTotal, len(s.Rejected))
}

// LoadState reads a state file. A missing file returns an error wrapping
// both ErrNoState and fs.ErrNotExist; an unreadable or unparsable one wraps
// ErrCorruptState; a version other than StateVersion wraps ErrStateVersion.
// Slices of the returned state are never nil.
func LoadState(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load state %s: %w (%w)", path, ErrNoState, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("load state: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		// SaveState never leaves an empty file behind, so this is a torn
		// write by someone else, not "nothing reported".
		return nil, fmt.Errorf("load state %s: %w: empty file", path, ErrCorruptState)
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("load state %s: %w: %w", path, ErrCorruptState, err)
	}
	if s.Version != StateVersion {
		return nil, fmt.Errorf("load state %s: %w: %d (want %d)", path, ErrStateVersion, s.Version, StateVersion)
	}
	s.normalize()
	return &s, nil
}

// SaveState writes s to path atomically: readers see either the previous
// file or the new one, never a partial write, even across a crash.
func SaveState(path string, s *State) error {
	if s == nil {
		return errors.New("save state: nil state")
	}
	out := *s
	if out.Version == 0 {
		out.Version = StateVersion
	}
	out.normalize()
	data, err := json.Marshal(&out)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	data = append(data, '\n')
	// 0644: the orchestrator may run as another user than the
	// containerised agent.
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// ClearState removes the state file and any temp files an interrupted
// SaveState left next to it. A missing file is not an error.
func ClearState(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear state: %w", err)
	}
	leftovers, err := filepath.Glob(atomicfile.TempGlob(path))
	if err != nil {
		return fmt.Errorf("clear state: %w", err)
	}
	for _, f := range leftovers {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("clear state temp file: %w", err)
		}
	}
	return nil
}
