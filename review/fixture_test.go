package review_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// fixture is a run directory laid out as the pipeline lays it out.
type fixture struct {
	dir, changePath, srcDir, agentDir, statePath string
	change                                       *vcs.Change
}

// appSource is the new content of app/main.go: 30 numbered lines, where
// line 7 is the anchor text several tests rely on.
func appSource() []string {
	lines := make([]string, 30)
	for i := range lines {
		lines[i] = fmt.Sprintf("\tstatement%d()", i+1)
	}
	lines[6] = "\tdb.Open(  \"dsn\",\ttimeout )"
	return lines
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{
		dir:        dir,
		changePath: filepath.Join(dir, "change.json"),
		srcDir:     filepath.Join(dir, "src"),
		agentDir:   filepath.Join(dir, "agent"),
	}
	f.statePath = filepath.Join(f.agentDir, review.StateFileName)
	f.change = &vcs.Change{
		VCS: vcs.KindSVN, Repo: "main", Revision: "42", Author: "alice",
		Files: []vcs.FileChange{
			{
				Path: "app/main.go", Action: vcs.ActionModify, NodeKind: vcs.NodeFile,
				Added: []vcs.LineRange{{Start: 5, End: 9}, {Start: 20, End: 20}},
				Hunks: []vcs.LineRange{{Start: 2, End: 12}, {Start: 17, End: 23}},
			},
			{
				Path: "docs/guide.md", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
				Added: []vcs.LineRange{{Start: 1, End: 3}},
				Hunks: []vcs.LineRange{{Start: 1, End: 3}},
			},
			{Path: "old/gone.go", Action: vcs.ActionDelete, NodeKind: vcs.NodeFile, Skipped: "deleted"},
		},
	}
	writeFile(t, filepath.Join(f.srcDir, "app", "main.go"), strings.Join(appSource(), "\n")+"\n")
	writeFile(t, filepath.Join(f.srcDir, "docs", "guide.md"), "# Guide\n\nHello.\n")
	f.writeChange(t)
	if err := os.MkdirAll(f.agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f fixture) writeChange(t testing.TB) {
	t.Helper()
	data, err := json.Marshal(f.change)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.changePath, string(data))
}

func writeFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
