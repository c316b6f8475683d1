package vcs

import (
	"errors"
	"fmt"
)

// DefaultMaxFileBytes is the size above which a changed file's content is
// not fetched (it is listed with Skipped "too large").
const DefaultMaxFileBytes int64 = 1 << 20

// SizeUnknown is what a size function passed to Scope.Apply returns for a
// file whose size the adapter learns only by fetching it (svn).
const SizeUnknown int64 = -1

// Scope is the review scope of one repository, the same keys for every
// kind of repository: which paths are reviewed and how much of a change
// is fetched. Adapters embed it in their Config (the keys sit in the
// [[repo]] table) and apply it once per change with Apply.
type Scope struct {
	// Include and Exclude are globs over the change's paths ("**"
	// matches any number of directories). An empty Include means every
	// path. Out-of-scope files are listed with Skipped SkipExcluded.
	Include []string `toml:"include"`
	Exclude []string `toml:"exclude"`
	// MaxFileBytes caps the content fetched per file; larger files are
	// listed SkipTooLarge. Zero means DefaultMaxFileBytes.
	MaxFileBytes int64 `toml:"max_file_bytes"`
	// MaxFiles caps the files whose content is fetched, in path order;
	// the rest are listed SkipFileCap. Zero means the adapter's default
	// (none for svn, 5000 for p4).
	MaxFiles int `toml:"max_files"`
	// MaxReviewBytes caps the content fetched per change, in path order:
	// once the running total passes it, that file and every later one
	// are listed SkipReviewBytesCap. Zero means no cap.
	MaxReviewBytes int64 `toml:"max_review_bytes"`
}

// WithDefaults fills MaxFileBytes and, when zero, MaxFiles with the
// adapter's default maxFiles (0: no cap).
func (s Scope) WithDefaults(maxFiles int) Scope {
	if s.MaxFileBytes == 0 {
		s.MaxFileBytes = DefaultMaxFileBytes
	}
	if s.MaxFiles == 0 {
		s.MaxFiles = maxFiles
	}
	return s
}

// Validate checks patterns and limits, naming the TOML key.
func (s Scope) Validate() error {
	var errs []error
	for _, n := range []struct {
		key string
		v   int64
	}{{"max_file_bytes", s.MaxFileBytes}, {"max_review_bytes", s.MaxReviewBytes}, {"max_files", int64(s.MaxFiles)}} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("%s %d: must not be negative (0 means the default)", n.key, n.v))
		}
	}
	if err := s.Filter().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Filter is the path part of the scope.
func (s Scope) Filter() Filter { return Filter{Include: s.Include, Exclude: s.Exclude} }

// Admits reports whether path passes include/exclude.
func (s Scope) Admits(path string) bool { return s.Filter().Match(path) }

// Apply decides, for files in path order, whose content is reviewed, and
// records on each file left out why (FileChange.Skipped), so the report
// can list what was not reviewed: outside include/exclude, over
// max_file_bytes, over max_files, over max_review_bytes. Files already
// skipped for a reason of the adapter's (deleted, binary...) are left as
// they are and count against no cap.
//
// size returns a file's content size, or SizeUnknown when the adapter
// learns it only by fetching; such a file counts against max_files but
// not against the byte caps. An adapter that fetches to learn sizes calls
// Apply before fetching (path filter and max_files) and again with the
// sizes it found (byte caps); the second call keeps the first's choices.
func (s Scope) Apply(files []*FileChange, size func(*FileChange) int64) {
	filter := s.Filter()
	kept := 0
	var total int64
	over := false
	for _, f := range files {
		if f.Skipped != "" {
			continue
		}
		if !filter.Match(f.Path) {
			f.Skipped = SkipExcluded
			continue
		}
		n := size(f)
		if n != SizeUnknown && s.MaxFileBytes > 0 && n > s.MaxFileBytes {
			f.Skipped = SkipTooLarge
			continue
		}
		if s.MaxFiles > 0 && kept >= s.MaxFiles {
			f.Skipped = SkipFileCap
			continue
		}
		if n != SizeUnknown {
			total += n
			if s.MaxReviewBytes > 0 && total > s.MaxReviewBytes {
				over = true
			}
		}
		if over {
			f.Skipped = SkipReviewBytesCap
			continue
		}
		kept++
	}
}
