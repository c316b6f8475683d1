package vcs

import (
	"strings"
	"testing"
)

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/c.go", true},
		{"**/*.go", "a/b/c.c", false},
		{"vendor/**", "vendor/x/y.c", true},
		{"vendor/**", "src/vendor/y.c", false},
		{"src/**/test_*.c", "src/test_a.c", true},
		{"src/**/test_*.c", "src/a/b/test_a.c", true},
		{"src/**/test_*.c", "src/a/b/a.c", false},
		{"*.c", "a/b.c", false},
		{"中文 目录/*", "中文 目录/文件@2x.txt", true},
		{"docs/*.md", "docs/readme.md", true},
	}
	for _, tt := range tests {
		if got := MatchGlob(tt.pattern, tt.path); got != tt.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestFilter(t *testing.T) {
	f := Filter{Include: []string{"**/*.go", "docs/**"}, Exclude: []string{"vendor/**"}}
	for p, want := range map[string]bool{
		"main.go":          true,
		"docs/readme.md":   true,
		"vendor/lib/x.go":  false,
		"big.txt":          false,
		"cmd/tool/main.go": true,
	} {
		if got := f.Match(p); got != want {
			t.Errorf("Match(%q) = %v, want %v", p, got, want)
		}
	}
	if !(Filter{}).Match("anything/at/all") {
		t.Error("empty filter must admit everything")
	}
}

func TestFilterValidate(t *testing.T) {
	err := Filter{Include: []string{"[a-"}, Exclude: []string{"/abs/**", ""}}.Validate()
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{`include pattern "[a-"`, `exclude pattern "/abs/**": patterns are relative`, `exclude pattern "": empty pattern`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if err := (Filter{Include: []string{"**/*.go"}}).Validate(); err != nil {
		t.Errorf("valid filter: %v", err)
	}
}
