package review

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
	return writeFileAtomic(path, data, 0o644)
}

// ClearState removes the state file and any temp files an interrupted
// SaveState left next to it. A missing file is not an error.
func ClearState(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear state: %w", err)
	}
	leftovers, err := filepath.Glob(tempPattern(path))
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

// tempPattern is the glob matching temp files of writeFileAtomic for path.
// Glob metacharacters in the directory are escaped so a run directory with
// brackets in its name still matches only its own temp files.
func tempPattern(path string) string {
	dir, base := filepath.Split(path)
	return filepath.Join(globEscape(dir), globEscape(base)+".tmp-*")
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

func writeFileAtomic(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp state file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write temp state file: %w", err)
	}
	// CreateTemp makes the file 0600; the orchestrator may run as another
	// user than the containerised agent.
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("chmod temp state file: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("sync temp state file: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close temp state file: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename state file: %w", err)
	}
	// The rename is durable only once the directory entry is on disk.
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open state dir: %w", err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("sync state dir: %w", err)
	}
	return nil
}
