// Package vcs holds the version-control-neutral description of one change:
// its metadata, its files and, for every file, which new-file lines the
// change touched. Adapters (vcs/svn, vcs/p4) produce it; review validates
// agent findings against it; im renders it.
package vcs

import (
	"context"
	"errors"
	"time"
)

// Kind names a version-control system as it appears in config and events.
type Kind string

const (
	KindSVN Kind = "svn"
	KindP4  Kind = "p4"
)

// Action is what a change did to one path, normalized across systems.
type Action string

const (
	ActionAdd     Action = "add"
	ActionModify  Action = "modify"
	ActionDelete  Action = "delete"
	ActionReplace Action = "replace"
)

// NodeKind distinguishes files from directories; SVN versions both.
type NodeKind string

const (
	NodeFile NodeKind = "file"
	NodeDir  NodeKind = "dir"
)

// LineRange is an inclusive range of 1-based new-file line numbers.
type LineRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Contains reports whether line lies inside r.
func (r LineRange) Contains(line int) bool { return line >= r.Start && line <= r.End }

// FileChange is one path touched by a change.
type FileChange struct {
	// Path is relative to the repository root configured for the repo,
	// slash-separated, never starting with "/".
	Path     string   `json:"path"`
	Action   Action   `json:"action"`
	NodeKind NodeKind `json:"node_kind"`
	// CopyFromPath/CopyFromRev are set for copies, moves and branches
	// (svn); p4 sets CopyFromPath for a submitted move/add only, and no
	// CopyFromRev (its source revision is a file revision, not a change).
	// Findings follow a rename through them.
	CopyFromPath string `json:"copy_from_path,omitempty"`
	CopyFromRev  string `json:"copy_from_rev,omitempty"`
	Binary       bool   `json:"binary,omitempty"`
	// Skipped explains why the file's content is not in the run directory
	// (deleted, binary, directory, excluded, too large...). Empty when the
	// content was fetched to src/<Path>.
	Skipped string `json:"skipped,omitempty"`
	// Added are the new-file lines the change added or rewrote: the anchors
	// problems should point at. Hunks are the new-file spans of the diff
	// hunks (added plus context lines): lines a reviewer may comment on.
	Added []LineRange `json:"added,omitempty"`
	Hunks []LineRange `json:"hunks,omitempty"`
}

// IsAdded reports whether line is an added line of the file.
func (f FileChange) IsAdded(line int) bool { return inRanges(f.Added, line) }

// IsCommentable reports whether line lies inside a diff hunk of the file.
func (f FileChange) IsCommentable(line int) bool { return inRanges(f.Hunks, line) }

func inRanges(rs []LineRange, line int) bool {
	for _, r := range rs {
		if r.Contains(line) {
			return true
		}
	}
	return false
}

// Change is one committed revision (SVN) or submitted changelist (P4).
type Change struct {
	VCS         Kind         `json:"vcs"`
	Repo        string       `json:"repo"`
	Revision    string       `json:"revision"`
	Author      string       `json:"author"`
	Date        time.Time    `json:"date"`
	Description string       `json:"description"`
	Files       []FileChange `json:"files"`
	// Scope is the repo's include/exclude, so the review tools refuse a
	// context or blame request outside it when it is made, not only when
	// the adapter is asked to answer it. Nil: every path.
	Scope *Filter `json:"scope,omitempty"`
	// Shelved marks a Perforce shelf: pending, not submitted. Reports name
	// it "shelved change N" (ChangeText) and show its description as the
	// author wrote it.
	Shelved bool `json:"shelved,omitempty"`
}

// File returns the change's entry for path.
func (c *Change) File(path string) (FileChange, bool) {
	for _, f := range c.Files {
		if f.Path == path {
			return f, true
		}
	}
	return FileChange{}, false
}

// Dest is where Fetch writes a change: the run directory, whose layout
// package rundir owns (rundir.Layout implements Dest). vcs declares only
// what adapters use, so rundir can import vcs for the Change type.
type Dest interface {
	// SrcPath is the file that receives the new content of a changed
	// file (a FileChange.Path); it refuses names that would escape.
	SrcPath(file string) (string, error)
	// DiffPath is the file that receives the unified diff.
	DiffPath() string
}

// Adapter fetches changes from one configured repository.
type Adapter interface {
	// Fetch reads revision rev into dst: the changed files' new content
	// at dst.SrcPath(path), the unified diff at dst.DiffPath(). It
	// returns the Change with its changed-line map filled in. The caller
	// writes change.json.
	//
	// Every command Fetch runs is bounded by the repo's command_timeout
	// and gets only the environment vcs.ChildEnv builds. Errors wrap the
	// sentinels below; see IsTransient.
	Fetch(ctx context.Context, rev string, dst Dest) (*Change, error)
}

// Sentinel errors adapters wrap so callers can tell bad input from
// outages. IsTransient groups the ones worth retrying.
var (
	// ErrNoSuchRevision: the revision does not exist in the repository.
	// It is transient for a while: a Perforce replica or edge server, or
	// an svnsync mirror, answers this for a change its master already
	// has until it catches up. The daemon retries it for a grace window
	// of its own and treats it as permanent after that.
	ErrNoSuchRevision = errors.New("no such revision")
	// ErrBadRevision: the revision string is not valid for this VCS.
	// Permanent.
	ErrBadRevision = errors.New("invalid revision")
	// ErrToolMissing: the VCS command-line client is not installed.
	// Permanent until the host is fixed.
	ErrToolMissing = errors.New("vcs client not installed")
	// ErrPathOutOfScope: a context or blame request names a path outside
	// the reviewed repository directory; the review server maps it to
	// PATH_OUT_OF_SCOPE.
	ErrPathOutOfScope = errors.New("path out of scope")
	// ErrTimeout: a VCS command ran past the repo's command_timeout and
	// was killed together with every process it started. Transient.
	ErrTimeout = errors.New("vcs command timed out")
	// ErrUnavailable: the client could not reach the server (connection
	// refused or reset, name resolution, TLS handshake). Transient.
	ErrUnavailable = errors.New("vcs server unavailable")
)

// BlameStatus says how complete a BlameResult is.
type BlameStatus string

const (
	BlameOK BlameStatus = "ok"
	// BlamePartial: the range was clipped to the file's length, or the
	// file is binary and has no lines to attribute; Reason says which.
	BlamePartial  BlameStatus = "partial"
	BlameNotFound BlameStatus = "not_found"
)

// BlameLine attributes one line. It never carries the line's text: blame
// answers who and when, and the text is available through Cat.
type BlameLine struct {
	Line     int       `json:"line"`
	Revision string    `json:"revision"`
	Author   string    `json:"author"`
	Date     time.Time `json:"date"`
}

// BlameResult is the attribution of a line range of one file.
type BlameResult struct {
	Path     string      `json:"path"`
	Revision string      `json:"revision"`
	Status   BlameStatus `json:"status"`
	Reason   string      `json:"reason,omitempty"`
	Lines    []BlameLine `json:"lines"`
}

// StateDirUser is implemented by settings that keep per-repository files
// of their own (svn's --config-dir). The daemon hands each repo a
// directory under its data_dir before building the adapter.
type StateDirUser interface {
	SetStateDir(dir string)
}

// RepoSettings is the kind-specific part of a [[repo]] table (url and
// credentials for svn, port and depot paths for p4). The daemon decodes it
// from the same TOML table as the common keys (name, kind, channels), so
// implementations carry `toml` tags; include/exclude belong to the kind's
// settings because filtering happens before any fetch.
type RepoSettings interface {
	// Validate checks the settings without touching the network.
	Validate() error
	// NewAdapter builds the adapter; it may look up the client binary.
	NewAdapter() (Adapter, error)
}

// LocalPather is implemented by settings that know the repository's path on
// this host, which is all an SVN hook knows about its repository.
type LocalPather interface {
	LocalRepoPath() string
}

// PathResolver is implemented by settings with file paths that are
// relative to the config file's directory.
type PathResolver interface {
	ResolvePaths(baseDir string)
}

// Lister is implemented by adapters the reconciler can ask for changes
// whose hook or trigger never fired.
type Lister interface {
	// Head returns the newest change id in scope (youngest revision,
	// highest submitted changelist).
	Head(ctx context.Context) (string, error)
	// ChangesAfter returns the ids of changes in scope after `after`,
	// oldest first, at most limit.
	ChangesAfter(ctx context.Context, after string, limit int) ([]string, error)
}

// TreeReader is implemented by adapters that can look at the tree at a
// revision beyond the changed files: the ladder lists the repository's
// skills (.agents/skills) and refuses instruction files that are symlinks.
// Paths are relative to the reviewed root, like FileChange.Path; "" is the
// root itself.
type TreeReader interface {
	// List returns the names of dir's entries at rev, sorted, with a
	// trailing "/" on directories. A dir that does not exist at rev (or
	// is a file there) fails with ErrNoSuchPath.
	List(ctx context.Context, dir, rev string) ([]string, error)
	// IsSymlink reports whether the file at path is a symbolic link at rev
	// (svn:special in Subversion, the symlink file type in Perforce).
	IsSymlink(ctx context.Context, path, rev string) (bool, error)
}

// Rooter is implemented by adapters whose paths carry the location of the
// reviewed tree (Perforce: depot paths without "//"). RepoRoots are the
// roots of the configured trees, where repository instructions and skills
// live; an adapter without it has one root, "".
type Rooter interface {
	RepoRoots() []string
}
