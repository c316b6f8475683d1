package findings

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
)

// ErrShelved: Track was given a shelved change's review. A shelf is not
// repo history (it may never be submitted, and is reviewed again when it
// changes), so its problems must not become findings nor resolve any.
var ErrShelved = errors.New("a shelved change is not repo history: its review is not tracked")

// ErrInvalidReview: the Review lacks what tracking needs (repo, run,
// revision) or a problem is malformed.
var ErrInvalidReview = errors.New("invalid review for tracking")

// Plan is one review prepared for Decide: its problems with their keys,
// and the change's paths. Prepare reads the problems' files (Source), so
// a store can call it before it opens its transaction and ask the
// database only for the candidates (Keys, Paths).
type Plan struct {
	in       Review
	problems []planned
	sources  map[string]source
	// byPath maps a reviewed path to the path it was renamed from.
	renamedFrom map[string]string
}

// planned is one problem with what matching needs.
type planned struct {
	index            int
	path, oldPath    string
	key, oldKey      string // content keys under path and under oldPath ("" when unreadable)
	msgKey, oldMsg   string // message keys under path and oldPath
	anchor           string // AnchorDigest of the anchored lines
	line, endLine    int
	category, agentF string
	message          string // normalised
}

type source struct {
	lines []string
	err   error
}

// Prepare validates in and computes its problems' keys. It refuses a
// shelved change (ErrShelved) and a review without repo, run or revision
// (ErrInvalidReview).
func Prepare(in Review) (*Plan, error) {
	if err := validate(in); err != nil {
		return nil, err
	}
	if in.At.IsZero() {
		in.At = time.Now()
	}
	p := &Plan{in: in, sources: map[string]source{}, renamedFrom: map[string]string{}}
	if in.Change != nil {
		for _, f := range in.Change.Files {
			if f.CopyFromPath != "" && f.CopyFromPath != f.Path && f.Action != vcs.ActionDelete {
				p.renamedFrom[f.Path] = f.CopyFromPath
			}
		}
	}
	for i, pr := range in.Problems {
		q := planned{index: i, path: pr.File, oldPath: p.renamedFrom[pr.File], line: pr.Line, endLine: pr.EndLine,
			category: pr.Category, agentF: strings.TrimSpace(pr.Fingerprint), message: normLine(pr.Message)}
		lines := p.source(pr.File).lines
		q.anchor = AnchorDigest(Anchor(lines, pr.Line, pr.EndLine))
		q.key = Key(in.Repo, pr.File, pr.Category, lines, pr.Line, pr.EndLine)
		q.msgKey = MessageKey(in.Repo, pr.File, pr.Category, pr.Message)
		if q.oldPath != "" {
			q.oldKey = Key(in.Repo, q.oldPath, pr.Category, lines, pr.Line, pr.EndLine)
			q.oldMsg = MessageKey(in.Repo, q.oldPath, pr.Category, pr.Message)
		}
		p.problems = append(p.problems, q)
	}
	return p, nil
}

func validate(in Review) error {
	if _, shelf := triggers.ParseShelfRevision(in.Revision); shelf {
		return fmt.Errorf("track %s@%s: %w", in.Repo, in.Revision, ErrShelved)
	}
	switch {
	case strings.TrimSpace(in.Repo) == "":
		return fmt.Errorf("%w: the repo is empty", ErrInvalidReview)
	case in.RunID <= 0:
		return fmt.Errorf("%w: %s@%s has no run id (a review is tracked under the run that reported it)", ErrInvalidReview, in.Repo, in.Revision)
	case strings.TrimSpace(in.Revision) == "":
		return fmt.Errorf("%w: run %d of %s has no revision", ErrInvalidReview, in.RunID, in.Repo)
	}
	for i, pr := range in.Problems {
		if pr.File == "" {
			return fmt.Errorf("%w: run %d problem %d has no file", ErrInvalidReview, in.RunID, i)
		}
		if !pr.Severity.Valid() {
			return fmt.Errorf("%w: run %d problem %d (%s:%d) has severity %q (info, low, medium, high or critical)",
				ErrInvalidReview, in.RunID, i, pr.File, pr.Line, pr.Severity)
		}
	}
	return nil
}

// source reads path once through the review's Source.
func (p *Plan) source(path string) source {
	if s, ok := p.sources[path]; ok {
		return s
	}
	var s source
	if p.in.Source == nil {
		s.err = errors.New("no source reader")
	} else {
		s.lines, s.err = p.in.Source(path)
	}
	p.sources[path] = s
	return s
}

// Keys are the keys a candidate finding may have: every problem's, under
// its path and under the path its file was renamed from.
func (p *Plan) Keys() []string {
	var out []string
	for _, q := range p.problems {
		for _, k := range []string{q.key, q.oldKey, q.msgKey, q.oldMsg} {
			if k != "" {
				out = append(out, k)
			}
		}
	}
	return dedupe(out)
}

// Paths are the paths whose findings the review may match, move or
// resolve: its problems' files, every file of the change, and the paths
// they were renamed from.
func (p *Plan) Paths() []string {
	var out []string
	for _, q := range p.problems {
		out = append(out, q.path)
		if q.oldPath != "" {
			out = append(out, q.oldPath)
		}
	}
	if p.in.Change != nil {
		for _, f := range p.in.Change.Files {
			out = append(out, f.Path)
			if f.CopyFromPath != "" {
				out = append(out, f.CopyFromPath)
			}
		}
	}
	return dedupe(out)
}

// Dirs are the directories the change deleted (Subversion lists a
// deleted or moved directory, not the files in it): the findings under
// them are candidates too.
func (p *Plan) Dirs() []string {
	var out []string
	if p.in.Change != nil {
		for _, f := range p.in.Change.Files {
			if f.NodeKind == vcs.NodeDir && f.Action == vcs.ActionDelete {
				out = append(out, strings.TrimSuffix(f.Path, "/")+"/")
			}
		}
	}
	return dedupe(out)
}

// Review is the review the plan was made from (At filled in).
func (p *Plan) Review() Review { return p.in }

func dedupe(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// revisionOlder reports whether revision a comes before b: both SVN
// revisions or Perforce change numbers, compared as numbers. Revisions
// that are not numbers are never older.
func revisionOlder(a, b string) bool {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	return errA == nil && errB == nil && x < y
}
