package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A benchmark directory in the published shape: golden comments per PR,
// trees for one of the two PRs. The other is listed as left out, not
// dropped silently; the comments become golden findings only a judge
// can match.
func TestLoadBenchmark(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("golden_comments/grafana.json", `[
  {"pr_title": "Cache: add a device limit", "url": "https://github.com/grafana/grafana/pull/101",
   "comments": [{"comment": "Two requests can both pass the limit check.", "severity": "High", "category": "concurrency"},
                {"comment": "The error is swallowed.", "severity": "Low"}]},
  {"pr_title": "Other", "url": "https://github.com/grafana/grafana/pull/102/", "comments": [{"comment": "x", "severity": "Low"}]}
]`)
	write("trees/grafana/101/base/pkg/limit.go", "package limit\n")
	write("trees/grafana/101/head/pkg/limit.go", "package limit\n\nvar n int\n")
	if !IsBenchmark(dir) {
		t.Fatal("not recognised as a benchmark directory")
	}
	s, missing, err := LoadBenchmark(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 1 || s.Cases[0].ID != "grafana-101" || s.Cases[0].Language != "go" || len(s.Cases[0].Golden) != 2 {
		t.Fatalf("cases %+v", s.Cases)
	}
	if g := s.Cases[0].Golden[0]; g.Located() || g.Severity != "High" || g.Category != "concurrency" {
		t.Errorf("golden %+v", g)
	}
	if s.Unlocated() != 2 {
		t.Errorf("unlocated %d", s.Unlocated())
	}
	if len(missing) != 1 || !strings.Contains(missing[0], "PR 102") || !strings.Contains(missing[0], filepath.Join("trees", "grafana", "102", "head")) {
		t.Errorf("missing %v", missing)
	}
	data, err := os.ReadFile(filepath.Join(dir, "trees/grafana/101/head/pkg/limit.go"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := readFS(s.Cases[0].After, "pkg/limit.go"); got != string(data) {
		t.Errorf("head tree %q", got)
	}

	write("golden_comments/bad.json", `[{"pr_title": "x", "url": "https://example.com/not-a-pr", "comments": [{"comment": "y"}]}]`)
	_, _, err = LoadBenchmark(dir)
	if !errors.Is(err, ErrBadSuite) || !strings.Contains(err.Error(), "bad.json") || !strings.Contains(err.Error(), "/pull/<number>") {
		t.Errorf("err %v", err)
	}
}
