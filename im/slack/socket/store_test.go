package socket_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// testStore is the real audit store on a SQLite file, with findings
// made the way the daemon makes them: a review's problems tracked.
type testStore struct {
	*audit.Store
	runs int64
}

func newStore(t *testing.T) *testStore {
	t.Helper()
	s, err := audit.Open(context.Background(), filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &testStore{Store: s}
}

// add reports f's problem in a new review of its file and returns the
// finding's id.
func (s *testStore) add(t *testing.T, f findings.Finding) int64 {
	t.Helper()
	s.runs++
	lines := make([]string, f.Line+3)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of %s", i+1, f.Path)
	}
	ch := &vcs.Change{VCS: vcs.KindSVN, Repo: f.Repo, Revision: fmt.Sprint(s.runs), Author: "carol",
		Files: []vcs.FileChange{{Path: f.Path, Action: vcs.ActionModify, NodeKind: vcs.NodeFile}}}
	out, err := s.TrackFindings(context.Background(), findings.Review{Repo: f.Repo, VCS: vcs.KindSVN, RunID: s.runs,
		Revision: ch.Revision, Author: "carol", Agent: "builtin", At: time.Now(), Change: ch, Complete: true,
		Problems: []review.Problem{{File: f.Path, Line: f.Line, Severity: review.SeverityHigh, Category: "security",
			Message: "a problem"}},
		Source: func(string) ([]string, error) { return lines, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Seen) != 1 || out.Seen[0].Class != findings.ClassNew {
		t.Fatalf("tracked %+v, want one new finding", out)
	}
	if !strings.EqualFold(out.Seen[0].Finding.Path, f.Path) {
		t.Fatalf("finding path %q, want %q", out.Seen[0].Finding.Path, f.Path)
	}
	return out.Seen[0].Finding.ID
}
