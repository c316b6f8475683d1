// Package eval measures review quality: it replays the cases of a suite
// (changes with known findings) through the same pipeline production
// runs, on a scratch SVN repository per case, and scores what the
// configured agents report against the golden findings, with what each
// review cost and how long it took.
//
// The suite format is documented in docs/eval-suite.md; LoadSuite reads
// it from any fs.FS (the built-in suite is embedded in the binary, a
// shop's own suite is a directory).
package eval

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Categories are the defect classes a golden finding may name.
var Categories = []string{
	"off-by-one", "nil-dereference", "resource-leak", "lock-leak",
	"integer-overflow", "injection", "race", "error-handling", "api-contract",
	"unsafe-deserialization", "leaked-credential", "conflict-marker",
}

// ErrBadSuite is wrapped by every problem LoadSuite finds in a suite.
var ErrBadSuite = errors.New("invalid eval suite")

// Suite is a loaded suite.
type Suite struct {
	Name        string  `toml:"name" json:"name"`
	Version     string  `toml:"version" json:"version"`
	Description string  `toml:"description" json:"description,omitempty"`
	Cases       []*Case `toml:"-" json:"-"`
}

// Case is one change with what a good reviewer reports on it.
type Case struct {
	ID       string   `toml:"id" json:"id"`
	Language string   `toml:"language" json:"language"`
	Title    string   `toml:"title" json:"title"`
	Message  string   `toml:"message" json:"message"`
	Author   string   `toml:"author" json:"author,omitempty"`
	Clean    bool     `toml:"clean" json:"clean"`
	Golden   []Golden `toml:"golden" json:"golden,omitempty"`
	// Before and After are the trees before and after the change; a file
	// in Before but not in After is deleted by the change.
	Before fs.FS `toml:"-" json:"-"`
	After  fs.FS `toml:"-" json:"-"`
}

// Golden is one finding a good reviewer reports. A golden finding from a
// public benchmark may have no File and no lines: only the judge can
// match it.
type Golden struct {
	File        string   `toml:"file" json:"file,omitempty"`
	StartLine   int      `toml:"start_line" json:"start_line,omitempty"`
	EndLine     int      `toml:"end_line" json:"end_line,omitempty"`
	Category    string   `toml:"category" json:"category,omitempty"`
	Keywords    []string `toml:"keywords" json:"keywords,omitempty"`
	Description string   `toml:"description" json:"description"`
	// Severity is informative (public benchmarks label their comments);
	// scoring ignores it. docs/eval-suite.md lists it as optional.
	Severity string `toml:"severity" json:"severity,omitempty"`
}

// Located reports whether the golden finding names a place the
// heuristic can match.
func (g Golden) Located() bool { return g.File != "" && g.StartLine > 0 }

// LoadSuite reads suite.toml and every cases/<id>/ of fsys. Every problem
// found is reported, each naming the file and what to fix.
func LoadSuite(fsys fs.FS) (*Suite, error) {
	var s Suite
	var errs []error
	bad := func(file, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrBadSuite, file, fmt.Sprintf(format, args...)))
	}
	data, err := fs.ReadFile(fsys, "suite.toml")
	if err != nil {
		return nil, fmt.Errorf("%w: read suite.toml: %w (a suite is a directory with suite.toml and cases/<id>/case.toml)", ErrBadSuite, err)
	}
	md, err := toml.Decode(string(data), &s)
	if err != nil {
		return nil, fmt.Errorf("%w: suite.toml: %w", ErrBadSuite, err)
	}
	for _, k := range md.Undecoded() {
		bad("suite.toml", "unknown key %q", k.String())
	}
	if s.Name == "" {
		bad("suite.toml", "name is required")
	}
	entries, err := fs.ReadDir(fsys, "cases")
	if err != nil {
		return nil, fmt.Errorf("%w: read cases/: %w", ErrBadSuite, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c, cerrs := loadCase(fsys, e.Name())
		errs = append(errs, cerrs...)
		if c != nil {
			s.Cases = append(s.Cases, c)
		}
	}
	if len(s.Cases) == 0 && len(errs) == 0 {
		bad("cases/", "no case directories")
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(s.Cases, func(i, j int) bool { return s.Cases[i].ID < s.Cases[j].ID })
	return &s, nil
}

func loadCase(fsys fs.FS, dir string) (*Case, []error) {
	var errs []error
	file := path.Join("cases", dir, "case.toml")
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrBadSuite, file, fmt.Sprintf(format, args...)))
	}
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		bad("%v", err)
		return nil, errs
	}
	var c Case
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		bad("%v", err)
		return nil, errs
	}
	for _, k := range md.Undecoded() {
		bad("unknown key %q", k.String())
	}
	if c.ID != dir {
		bad("id = %q must equal the directory name %q", c.ID, dir)
	}
	if c.Language == "" {
		bad("language is required")
	}
	if c.Message == "" {
		bad("message is required (the commit message of the change)")
	}
	if c.Clean && len(c.Golden) > 0 {
		bad("clean = true but %d [[golden]] findings: a clean case has none", len(c.Golden))
	}
	if !c.Clean && len(c.Golden) == 0 {
		bad("no [[golden]] findings: add one, or set clean = true")
	}
	after, aerr := fs.Sub(fsys, path.Join("cases", dir, "after"))
	before, berr := fs.Sub(fsys, path.Join("cases", dir, "before"))
	if aerr != nil || berr != nil {
		bad("cannot open before/ or after/")
		return nil, errs
	}
	c.Before, c.After = optionalTree(fsys, path.Join("cases", dir, "before"), before), optionalTree(fsys, path.Join("cases", dir, "after"), after)
	for i, g := range c.Golden {
		errs = append(errs, checkGolden(file, i, g, c.After)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &c, nil
}

// optionalTree is sub, or an empty tree when dir does not exist (a case
// that only adds files has no before/).
func optionalTree(fsys fs.FS, dir string, sub fs.FS) fs.FS {
	if _, err := fs.Stat(fsys, dir); err != nil {
		return emptyFS{}
	}
	return sub
}

type emptyFS struct{}

func (emptyFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// checkGolden checks one [[golden]] entry against the case's after tree.
func checkGolden(file string, i int, g Golden, after fs.FS) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: golden[%d]: %s", ErrBadSuite, file, i, fmt.Sprintf(format, args...)))
	}
	if g.Description == "" {
		bad("description is required")
	}
	if g.Category != "" && !slices.Contains(Categories, g.Category) {
		bad("category %q is not one of: %s", g.Category, strings.Join(Categories, ", "))
	}
	if g.File == "" {
		bad("file is required")
		return errs
	}
	if g.StartLine < 1 || g.EndLine < g.StartLine {
		bad("start_line %d, end_line %d: need 1 <= start_line <= end_line", g.StartLine, g.EndLine)
	}
	data, err := fs.ReadFile(after, g.File)
	if err != nil {
		bad("file %q is not in after/", g.File)
		return errs
	}
	n := strings.Count(string(data), "\n")
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	if g.EndLine > n {
		bad("end_line %d is past the end of %s (%d lines)", g.EndLine, g.File, n)
	}
	return errs
}
