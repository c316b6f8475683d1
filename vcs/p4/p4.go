package p4

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aicr-dev/aicr/vcs"
)

// Skip reasons specific to Perforce, next to vcs.Skip*.
const (
	SkipOutOfScope = "outside depot_paths"
	SkipSymlink    = "symlink"
	SkipPurged     = "purged"
	SkipArchived   = "archived"
	SkipBadName    = "unreviewable name"
)

// Adapter reads submitted changelists from one Perforce server. It is
// safe for concurrent use.
type Adapter struct {
	cfg    Config
	bin    string
	scope  scope
	filter vcs.Filter

	mu sync.Mutex
	// sessionMu serialises `p4 login` and `p4 trust` run to cure a
	// refused command (inSession).
	sessionMu sync.Mutex
	unicode   *bool             // cached answer of p4 -ztag info
	info      *infoCall         // the p4 info in flight, if any
	emails    map[string]string // cached p4 user -o Email
}

var (
	_ vcs.Adapter = (*Adapter)(nil)
	_ vcs.Lister  = (*Adapter)(nil)
)

// New validates cfg and finds the p4 client. It does not contact the
// server; the first command does.
func New(cfg Config) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("p4 config: %w", err)
	}
	cfg = cfg.withDefaults()
	bin, err := exec.LookPath(cfg.P4Path)
	if err != nil {
		return nil, fmt.Errorf("%w: p4 client %q not found: install Helix Core's p4 command-line client, or set p4_path: %w",
			vcs.ErrToolMissing, cfg.P4Path, err)
	}
	return &Adapter{
		cfg:    cfg,
		bin:    bin,
		scope:  newScope(cfg.DepotPaths),
		filter: cfg.Scope.Filter(),
		emails: map[string]string{},
	}, nil
}

// vcsPath maps an escaped depot path to the change's path: unescaped,
// without the leading "//".
func vcsPath(depotFile string) string {
	return strings.TrimPrefix(UnescapePath(depotFile), "//")
}

// depotFile is the inverse of vcsPath: the escaped name p4 accepts.
func depotFile(path string) string { return "//" + EscapePath(path) }

func parseChange(rev string) (int, error) {
	n, err := strconv.Atoi(rev)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %q is not a positive changelist number", vcs.ErrBadRevision, rev)
	}
	return n, nil
}

// describedFile is one file of describe -s with what Fetch decided.
type describedFile struct {
	depot  string // escaped depot path
	action string
	typ    string
	rev    string
	size   int64
	fc     *vcs.FileChange
}

// Fetch reads submitted changelist rev into dir (see vcs.Adapter) with a
// fixed number of p4 processes whatever the file count: describe -s
// (metadata), filelog -m1 (where moved files came from, only when the
// change moved any), describe -du (diffs of edits, only when there are
// edits), and print (content of every reviewable file, in batch_size
// batches).
func (a *Adapter) Fetch(ctx context.Context, rev string, dst vcs.Dest) (*vcs.Change, error) {
	return a.fetch(ctx, rev, dst, false)
}

// fetch reads a submitted change, or with shelf the shelved files of a
// pending one (describe -S; print @=N reads either).
func (a *Adapter) fetch(ctx context.Context, rev string, dst vcs.Dest, shelf bool) (*vcs.Change, error) {
	n, err := parseChange(rev)
	if err != nil {
		return nil, err
	}
	describe := []string{"describe"}
	if shelf {
		describe = append(describe, "-S")
	}
	recs, _, err := a.runG(ctx, nil, append(describe, "-s", strconv.Itoa(n))...)
	if p4Says(err, "unknown.") || (err == nil && len(recs) == 0) {
		return nil, fmt.Errorf("%w: change %d", vcs.ErrNoSuchRevision, n)
	}
	if err != nil {
		return nil, err
	}
	d := recs[0]
	if err := checkStatus(d, n, shelf); err != nil {
		return nil, err
	}
	change := &vcs.Change{VCS: vcs.KindP4, Revision: strconv.Itoa(n), Author: d.Get("user"), Description: d.Get("desc")}
	if t, err := strconv.ParseInt(d.Get("time"), 10, 64); err == nil {
		change.Date = time.Unix(t, 0).UTC()
	}
	files := a.classify(d)
	if !shelf {
		// A shelved move/add has no revision in the depot's history yet,
		// so filelog knows nothing of it: it stays an add.
		if err := a.movedFrom(ctx, files); err != nil {
			return nil, err
		}
	}
	var hunks map[string][]byte
	for _, f := range files {
		if f.fc.Skipped == "" && f.fc.Action == vcs.ActionModify {
			out, err := a.runText(ctx, nil, append(describe, "-du", strconv.Itoa(n))...)
			if err != nil {
				return nil, err
			}
			if hunks, err = parseDescribeDiff(out); err != nil {
				return nil, fmt.Errorf("p4 describe -du %d: %w", n, err)
			}
			break
		}
	}
	contents, err := a.printFiles(ctx, n, files)
	if err != nil {
		return nil, err
	}
	var patch bytes.Buffer
	for _, f := range files {
		if f.fc.Skipped != "" {
			continue
		}
		body, ok := contents[f.depot]
		if !ok {
			f.fc.Skipped = vcs.SkipDeleted
			continue
		}
		text, isText := decodeContent(f.typ, body)
		if !isText {
			f.fc.Binary, f.fc.Skipped = true, vcs.SkipBinary
			continue
		}
		path, err := srcPath(dst, f.fc.Path)
		if err != nil {
			f.fc.Skipped = SkipBadName
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("create dir: %w", err)
		}
		if err := os.WriteFile(path, text, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.fc.Path, err)
		}
		writeSection(&patch, f, text, hunks[f.depot])
	}
	if err := os.WriteFile(dst.DiffPath(), patch.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("write diff: %w", err)
	}
	diffs, err := vcs.ParseDiff(patch.Bytes())
	if err != nil {
		return nil, fmt.Errorf("parse diff: %w", err)
	}
	for _, f := range files {
		if d, ok := diffs[f.fc.Path]; ok && f.fc.Skipped == "" {
			f.fc.Added, f.fc.Hunks = d.Added, d.Hunks
		}
		change.Files = append(change.Files, *f.fc)
	}
	change.Scope = a.filter.Recorded()
	return change, nil
}

// classify turns describe's numbered fields into files and decides,
// before anything is fetched, which are reviewed and why others are not.
func (a *Adapter) classify(d Record) []*describedFile {
	var files []*describedFile
	for i := 0; ; i++ {
		is := strconv.Itoa(i)
		if !d.Has("depotFile" + is) {
			break
		}
		f := &describedFile{
			depot:  d.Get("depotFile" + is),
			action: d.Get("action" + is),
			typ:    d.Get("type" + is),
			rev:    d.Get("rev" + is),
		}
		f.size, _ = strconv.ParseInt(d.Get("fileSize"+is), 10, 64)
		fc := &vcs.FileChange{Path: vcsPath(f.depot), NodeKind: vcs.NodeFile, Action: mapAction(f.action)}
		f.fc = fc
		base := baseType(f.typ)
		switch {
		case !a.scope.contains(f.depot):
			fc.Skipped = SkipOutOfScope
		case !a.filter.Match(fc.Path):
			fc.Skipped = vcs.SkipExcluded
		case checkFileName(fc.Path) != nil:
			fc.Skipped = SkipBadName
		case f.action == "purge":
			fc.Skipped = SkipPurged
		case f.action == "archive":
			fc.Skipped = SkipArchived
		case fc.Action == vcs.ActionDelete:
			fc.Skipped = vcs.SkipDeleted
		case base == "symlink":
			fc.Skipped = SkipSymlink
		case !isTextType(base):
			fc.Binary, fc.Skipped = true, vcs.SkipBinary
		}
		files = append(files, f)
	}
	// describe gives every size, so the whole scope applies before any
	// content is printed.
	fcs := make([]*vcs.FileChange, len(files))
	sizes := make(map[*vcs.FileChange]int64, len(files))
	for i, f := range files {
		fcs[i], sizes[f.fc] = f.fc, f.size
	}
	a.cfg.Scope.Apply(fcs, func(fc *vcs.FileChange) int64 { return sizes[fc] })
	return files
}

// mapAction is the review behaviour of each p4 action (docs/perforce.md).
func mapAction(action string) vcs.Action {
	switch action {
	case "add", "branch", "move/add", "import":
		return vcs.ActionAdd
	case "delete", "move/delete", "purge", "archive":
		return vcs.ActionDelete
	}
	return vcs.ActionModify // edit, integrate and anything newer
}

// baseType is the file type without modifiers, mapping the old
// single-word aliases (ktext, xbinary...) to their base.
func baseType(t string) string {
	b, _, _ := strings.Cut(t, "+")
	switch b {
	case "ktext", "xtext", "kxtext", "ltext", "ctext":
		return "text"
	case "xbinary", "ubinary", "cxbinary", "tempobj", "ctempobj", "xtempobj", "uxbinary":
		return "binary"
	case "xunicode":
		return "unicode"
	case "xutf16":
		return "utf16"
	case "xutf8":
		return "utf8"
	}
	return b
}

func isTextType(base string) bool {
	switch base {
	case "text", "unicode", "utf8", "utf16":
		return true
	}
	return false
}

// srcPath is where rel's content goes, after the depot-name checks; the
// run directory's own escape check follows in SrcPath.
func srcPath(dst vcs.Dest, rel string) (string, error) {
	if err := checkFileName(rel); err != nil {
		return "", err
	}
	return dst.SrcPath(rel)
}
