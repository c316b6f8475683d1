package vcs

import (
	"strings"
	"testing"
)

func TestScopeApply(t *testing.T) {
	files := func(paths ...string) []*FileChange {
		var out []*FileChange
		for _, p := range paths {
			out = append(out, &FileChange{Path: p})
		}
		return out
	}
	sizes := map[string]int64{"a.go": 10, "big.go": 500, "b.go": 10, "c.go": 10, "d.go": 10, "vendor/x.go": 10}
	size := func(f *FileChange) int64 { return sizes[f.Path] }
	skipped := func(fs []*FileChange) string {
		var b []string
		for _, f := range fs {
			b = append(b, f.Path+"="+f.Skipped)
		}
		return strings.Join(b, " ")
	}
	for _, tt := range []struct {
		name  string
		scope Scope
		size  func(*FileChange) int64
		want  string
	}{
		{"filter and file size", Scope{Exclude: []string{"vendor/**"}, MaxFileBytes: 100}, size,
			"a.go= big.go=too large b.go= c.go= d.go= vendor/x.go=excluded by filter"},
		{"max_files in path order; too large does not count", Scope{MaxFileBytes: 100, MaxFiles: 2}, size,
			"a.go= big.go=too large b.go= c.go=over max_files d.go=over max_files vendor/x.go=over max_files"},
		{"max_review_bytes: the file that passes it and every later one", Scope{MaxFileBytes: 1000, MaxReviewBytes: 515}, size,
			"a.go= big.go= b.go=over max_review_bytes c.go=over max_review_bytes d.go=over max_review_bytes vendor/x.go=over max_review_bytes"},
		{"unknown sizes: only the filter and max_files", Scope{MaxFileBytes: 1, MaxReviewBytes: 1, MaxFiles: 5, Include: []string{"*.go"}},
			func(*FileChange) int64 { return SizeUnknown },
			"a.go= big.go= b.go= c.go= d.go= vendor/x.go=excluded by filter"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := files("a.go", "big.go", "b.go", "c.go", "d.go", "vendor/x.go")
			tt.scope.Apply(fs, tt.size)
			if got := skipped(fs); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			// Applying again with the same sizes keeps every choice.
			tt.scope.Apply(fs, tt.size)
			if got := skipped(fs); got != tt.want {
				t.Errorf("second Apply changed the choice: %s", got)
			}
		})
	}
	fs := files("a.go")
	fs[0].Skipped = SkipDeleted
	Scope{Exclude: []string{"**"}}.Apply(fs, size)
	if fs[0].Skipped != SkipDeleted {
		t.Errorf("Apply overwrote the adapter's reason: %q", fs[0].Skipped)
	}
}

func TestScopeValidate(t *testing.T) {
	err := Scope{MaxFiles: -1, MaxReviewBytes: -2, Include: []string{"[x"}}.Validate()
	for _, want := range []string{"max_files -1", "max_review_bytes -2", `include pattern "[x"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to mention %s", err, want)
		}
	}
}
