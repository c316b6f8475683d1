package vcs

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Reasons for FileChange.Skipped, shared by adapters so channels and the
// audit trail see one vocabulary.
const (
	SkipDeleted   = "deleted"
	SkipDirectory = "directory"
	SkipBinary    = "binary"
	SkipExcluded  = "excluded by filter"
	SkipTooLarge  = "too large"
	// SkipFileCap and SkipReviewBytesCap mark files left out because the
	// change has more files, or more bytes, than one review takes.
	SkipFileCap        = "over max_files"
	SkipReviewBytesCap = "over max_review_bytes"
)

var (
	// ErrNoSuchPath: the path does not exist as a file at the revision.
	ErrNoSuchPath = errors.New("no such path")
	// ErrTooLarge: the file is over the configured size limit.
	ErrTooLarge = errors.New("file too large")
)

// Filter decides which repository-relative paths are in review scope.
// Patterns are slash-separated globs as in path.Match, where a "**"
// segment matches any number of directories, including none
// ("**/*.go", "vendor/**", "src/**/test_*.c"). An empty Include admits
// every path; Exclude wins over Include.
type Filter struct {
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}

// Recorded is f for Change.Scope: nil when it admits every path.
func (f Filter) Recorded() *Filter {
	if len(f.Include) == 0 && len(f.Exclude) == 0 {
		return nil
	}
	return &f
}

// Validate reports malformed patterns, naming the list and the pattern.
func (f Filter) Validate() error {
	var errs []error
	for _, p := range f.Include {
		if err := checkGlob(p); err != nil {
			errs = append(errs, fmt.Errorf("include pattern %q: %w", p, err))
		}
	}
	for _, p := range f.Exclude {
		if err := checkGlob(p); err != nil {
			errs = append(errs, fmt.Errorf("exclude pattern %q: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// Match reports whether p is in scope. Invalid patterns never match;
// call Validate first.
func (f Filter) Match(p string) bool {
	if len(f.Include) > 0 && !matchAny(f.Include, p) {
		return false
	}
	return !matchAny(f.Exclude, p)
}

func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if MatchGlob(pat, p) {
			return true
		}
	}
	return false
}

func checkGlob(pattern string) error {
	if pattern == "" {
		return errors.New("empty pattern")
	}
	if strings.HasPrefix(pattern, "/") {
		return errors.New("patterns are relative to the repository URL: drop the leading /")
	}
	for _, seg := range strings.Split(pattern, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return err
		}
	}
	return nil
}

// MatchGlob matches a slash-separated path against a pattern whose
// segments are path.Match globs or "**".
func MatchGlob(pattern, p string) bool {
	return matchSegments(strings.Split(pattern, "/"), strings.Split(p, "/"))
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			// Collapse runs of "**" so hostile patterns stay linear per level.
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 1 {
				return true
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegments(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		ok, err := path.Match(pat[0], segs[0])
		if err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
