package builtin

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/aicr-dev/aicr/redact"
)

// These types mirror docs/eval-suite.md. Package eval has the real loader;
// importing it here would make a cycle (eval embeds this package), so the
// test decodes strictly on its own and fails on any key the format lacks.
type suiteMeta struct {
	Name        string `toml:"name"`
	Version     string `toml:"version"`
	Description string `toml:"description"`
}

type golden struct {
	File        string   `toml:"file"`
	StartLine   int      `toml:"start_line"`
	EndLine     int      `toml:"end_line"`
	Category    string   `toml:"category"`
	Keywords    []string `toml:"keywords"`
	Description string   `toml:"description"`
}

type caseMeta struct {
	ID       string   `toml:"id"`
	Language string   `toml:"language"`
	Title    string   `toml:"title"`
	Message  string   `toml:"message"`
	Author   string   `toml:"author"`
	Clean    bool     `toml:"clean"`
	Golden   []golden `toml:"golden"`
}

type testCase struct {
	meta   caseMeta
	before map[string]string
	after  map[string]string
}

var (
	languages = map[string]bool{
		"c": true, "cpp": true, "csharp": true, "java": true, "go": true,
		"python": true, "lua": true, "shell": true, "sql": true,
	}
	// The languages issue 26 names for the built-in suite.
	requiredLanguages = []string{"c", "cpp", "csharp", "java", "go", "python", "lua", "shell", "sql"}
	categories        = []string{
		"off-by-one", "nil-dereference", "resource-leak", "lock-leak",
		"integer-overflow", "injection", "race", "error-handling", "api-contract",
		"unsafe-deserialization", "leaked-credential", "conflict-marker",
	}
	idPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
)

const (
	minCases     = 40
	minCleanPct  = 25
	minPerLang   = 3
	tolerance    = 3 // the matching rule's slack either side of a golden range
	maxFileLines = 150
)

func decodeStrict(t *testing.T, fsys fs.FS, name string, v any) {
	t.Helper()
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	md, err := toml.Decode(string(data), v)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		t.Fatalf("%s: keys not in the suite format: %v", name, und)
	}
}

// readTree returns every regular file under dir, by slash path relative to
// it. A missing dir is an empty tree (git keeps no empty directories).
func readTree(t *testing.T, fsys fs.FS, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	if _, err := fs.Stat(fsys, dir); err != nil {
		return files
	}
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(p, dir+"/")] = string(data)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return files
}

func loadCases(t *testing.T) []testCase {
	t.Helper()
	fsys := FS()
	var sm suiteMeta
	decodeStrict(t, fsys, "suite.toml", &sm)
	if sm.Name != "builtin" || sm.Version == "" || sm.Description == "" {
		t.Fatalf("suite.toml: want name builtin, a version and a description, got %+v", sm)
	}
	entries, err := fs.ReadDir(fsys, "cases")
	if err != nil {
		t.Fatalf("read cases: %v", err)
	}
	var out []testCase
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("cases/%s: only case directories belong in cases/", e.Name())
			continue
		}
		dir := "cases/" + e.Name()
		var c testCase
		decodeStrict(t, fsys, dir+"/case.toml", &c.meta)
		c.before = readTree(t, fsys, dir+"/before")
		c.after = readTree(t, fsys, dir+"/after")
		if c.meta.ID != e.Name() {
			t.Errorf("%s: id %q differs from its directory name", dir, c.meta.ID)
		}
		out = append(out, c)
	}
	return out
}

func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// addedLines returns the 1-based numbers of the lines of after that are
// not in the longest common subsequence with before: what a diff shows
// as added, and what a reviewer is asked about.
func addedLines(before, after string) map[int]bool {
	a, b := lines(before), lines(after)
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	added := map[int]bool{}
	i, j := 0, 0
	for j < len(b) {
		switch {
		case i < len(a) && a[i] == b[j]:
			i++
			j++
		case i < len(a) && lcs[i+1][j] >= lcs[i][j+1]:
			i++
		default:
			added[j+1] = true
			j++
		}
	}
	return added
}

func TestSuiteCases(t *testing.T) {
	cases := loadCases(t)
	ids := map[string]bool{}
	perLang := map[string]int{}
	perCat := map[string]int{}
	clean := 0
	for _, c := range cases {
		m := c.meta
		name := "cases/" + m.ID
		if !idPattern.MatchString(m.ID) {
			t.Errorf("%s: id must be lowercase words joined by -", name)
		}
		if ids[m.ID] {
			t.Errorf("%s: duplicate id", name)
		}
		ids[m.ID] = true
		if !languages[m.Language] {
			t.Errorf("%s: language %q is not one of the suite's languages", name, m.Language)
		}
		perLang[m.Language]++
		if m.Title == "" || strings.Contains(m.Title, "\n") {
			t.Errorf("%s: title must be one non-empty line", name)
		}
		if strings.TrimSpace(m.Message) == "" {
			t.Errorf("%s: the commit message is empty", name)
		}
		if len(c.after) == 0 {
			t.Errorf("%s: after/ is empty", name)
		}
		if fmt.Sprint(c.before) == fmt.Sprint(c.after) {
			t.Errorf("%s: before/ and after/ are the same tree: there is no change to review", name)
		}
		for p, text := range c.after {
			if n := len(lines(text)); n > maxFileLines {
				t.Errorf("%s: after/%s has %d lines, over the suite's %d", name, p, n, maxFileLines)
			}
			if !strings.HasSuffix(text, "\n") {
				t.Errorf("%s: after/%s does not end in a newline", name, p)
			}
		}
		if m.Clean {
			clean++
			if len(m.Golden) > 0 {
				t.Errorf("%s: a clean case has no golden findings, it has %d", name, len(m.Golden))
			}
			continue
		}
		if len(m.Golden) == 0 {
			t.Errorf("%s: not clean, but no [[golden]] finding", name)
		}
		for i, g := range m.Golden {
			gname := fmt.Sprintf("%s golden[%d]", name, i)
			perCat[g.Category]++
			checkGolden(t, gname, g, c)
		}
	}
	if len(cases) < minCases {
		t.Errorf("%d cases, want at least %d", len(cases), minCases)
	}
	if clean*100 < minCleanPct*len(cases) {
		t.Errorf("%d of %d cases are clean, want at least %d%%", clean, len(cases), minCleanPct)
	}
	for _, l := range requiredLanguages {
		if perLang[l] < minPerLang {
			t.Errorf("language %s has %d cases, want at least %d", l, perLang[l], minPerLang)
		}
	}
	for _, cat := range categories {
		if perCat[cat] == 0 {
			t.Errorf("no golden finding of category %s", cat)
		}
	}
	t.Logf("%d cases, %d clean; languages %v; categories %v", len(cases), clean, perLang, perCat)
}

func checkGolden(t *testing.T, gname string, g golden, c testCase) {
	t.Helper()
	if !contains(categories, g.Category) {
		t.Errorf("%s: category %q is not one of %v", gname, g.Category, categories)
	}
	if g.Description == "" || strings.Contains(g.Description, "\n") {
		t.Errorf("%s: description must be one non-empty line", gname)
	}
	for _, k := range g.Keywords {
		if strings.TrimSpace(k) == "" {
			t.Errorf("%s: empty keyword", gname)
		}
	}
	if g.File != path.Clean(g.File) || path.IsAbs(g.File) || strings.HasPrefix(g.File, "..") {
		t.Errorf("%s: file %q must be a clean relative slash path", gname, g.File)
	}
	text, ok := c.after[g.File]
	if !ok {
		t.Errorf("%s: file %s is not in after/", gname, g.File)
		return
	}
	n := len(lines(text))
	if g.StartLine < 1 || g.EndLine < g.StartLine || g.EndLine > n {
		t.Errorf("%s: lines %d-%d are not within %s's %d lines", gname, g.StartLine, g.EndLine, g.File, n)
		return
	}
	// The defect is in the change, or next to it: a reviewer is asked
	// about the diff, and the matching rule allows the same slack.
	added := addedLines(c.before[g.File], text)
	near := false
	for l := g.StartLine - tolerance; l <= g.EndLine+tolerance; l++ {
		near = near || added[l]
	}
	if !near {
		t.Errorf("%s: lines %d-%d of %s are not within %d lines of anything the change added", gname, g.StartLine, g.EndLine, g.File, tolerance)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// conflictMarker is the builtin agent's rule (agent/builtin/rules.go),
// restated: the agent's function is unexported.
func conflictMarker(file, text string) bool {
	text = strings.TrimRight(text, " \t\r")
	for _, m := range []string{"<<<<<<<", "|||||||", ">>>>>>>"} {
		if text == m || strings.HasPrefix(text, m+" ") {
			return true
		}
	}
	switch strings.ToLower(path.Ext(file)) {
	case ".md", ".markdown", ".rst", ".adoc", ".txt":
		return false
	}
	return text == "======="
}

// TestBuiltinAgentFigures pins what the builtin agent (secret rules and
// conflict markers on added lines) scores on the suite: it must find every
// leaked-credential and conflict-marker golden finding and report nothing
// else, so its eval figures are exact and a clean case never trips the
// secret rules by accident.
//
// It logs the figures `aicr eval builtin` must print for the builtin agent,
// counted the way the matching rule counts: a golden finding matches one
// hit, further hits in its range (the ======= and >>>>>>> of a conflict
// block after its <<<<<<<) are false positives.
func TestBuiltinAgentFigures(t *testing.T) {
	var tp, fp, fn int
	for _, c := range loadCases(t) {
		name := "cases/" + c.meta.ID
		type hit struct {
			file string
			line int
		}
		var hits []hit
		files := make([]string, 0, len(c.after))
		for p := range c.after {
			files = append(files, p)
		}
		sort.Strings(files)
		for _, p := range files {
			ls := lines(c.after[p])
			for l := range addedLines(c.before[p], c.after[p]) {
				if len(redact.Find(p, ls[l-1])) > 0 || conflictMarker(p, ls[l-1]) {
					hits = append(hits, hit{p, l})
				}
			}
		}
		matched := 0
		for _, g := range c.meta.Golden {
			if g.Category != "leaked-credential" && g.Category != "conflict-marker" {
				fn++
				continue
			}
			found := false
			for _, h := range hits {
				found = found || (h.file == g.File && h.line >= g.StartLine && h.line <= g.EndLine)
			}
			if found {
				matched++
			} else {
				fn++
				t.Errorf("%s: the builtin agent's rules find nothing at %s:%d-%d (%s)", name, g.File, g.StartLine, g.EndLine, g.Category)
			}
		}
		for _, h := range hits {
			ok := false
			for _, g := range c.meta.Golden {
				if (g.Category == "leaked-credential" || g.Category == "conflict-marker") && g.File == h.file &&
					h.line >= g.StartLine && h.line <= g.EndLine {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s: the builtin agent's rules fire on %s:%d, which no golden finding covers", name, h.file, h.line)
			}
		}
		tp += matched
		fp += len(hits) - matched
	}
	t.Logf("builtin agent on the built-in suite: TP %d, FP %d, FN %d, clean cases flagged 0", tp, fp, fn)
}

func TestAddedLines(t *testing.T) {
	got := addedLines("a\nb\nc\n", "a\nx\nb\nc\ny\n")
	var nums []int
	for l := range got {
		nums = append(nums, l)
	}
	sort.Ints(nums)
	if fmt.Sprint(nums) != "[2 5]" {
		t.Fatalf("addedLines = %v, want [2 5]", nums)
	}
	if len(addedLines("a\n", "a\n")) != 0 {
		t.Fatal("no change reported as added lines")
	}
}
