package eval

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func readFS(fsys fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(fsys, name)
	return string(b), err
}

func TestLoadSuite(t *testing.T) {
	fsys := fstest.MapFS{
		"suite.toml":          {Data: []byte("name = \"t\"\nversion = \"2\"\n")},
		"cases/a/case.toml":   {Data: []byte("id = \"a\"\nlanguage = \"go\"\ntitle = \"t\"\nmessage = \"m\"\n[[golden]]\nfile = \"x.go\"\nstart_line = 2\nend_line = 3\ncategory = \"race\"\ndescription = \"d\"\n")},
		"cases/a/after/x.go":  {Data: []byte("package x\n\nvar a int\n")},
		"cases/b/case.toml":   {Data: []byte("id = \"b\"\nlanguage = \"go\"\ntitle = \"t\"\nmessage = \"m\"\nclean = true\n")},
		"cases/b/before/y.go": {Data: []byte("package y\n")},
		"cases/b/after/y.go":  {Data: []byte("package y\n\n")},
		"cases/README.txt":    {Data: []byte("not a case")},
	}
	s, err := LoadSuite(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "t" || s.Version != "2" || len(s.Cases) != 2 || s.Cases[0].ID != "a" || !s.Cases[1].Clean {
		t.Fatalf("suite %+v", s)
	}
	// A case without before/ adds every file: its before tree is empty.
	if _, err := fs.Stat(s.Cases[0].Before, "x.go"); err == nil {
		t.Error("before tree of a case without before/ is not empty")
	}
	if got, _ := readFS(s.Cases[1].Before, "y.go"); got != "package y\n" {
		t.Errorf("before y.go %q", got)
	}
}

// Every problem in a suite is reported at once, each naming the file
// and what to fix.
func TestLoadSuiteErrors(t *testing.T) {
	fsys := fstest.MapFS{
		"suite.toml":         {Data: []byte("name = \"t\"\ncolour = \"red\"\n")},
		"cases/a/case.toml":  {Data: []byte("id = \"wrong\"\nlanguage = \"go\"\nmessage = \"m\"\n[[golden]]\nfile = \"x.go\"\nstart_line = 2\nend_line = 9\ncategory = \"typo\"\ndescription = \"d\"\n")},
		"cases/a/after/x.go": {Data: []byte("package x\n\nvar a int\n")},
		"cases/b/case.toml":  {Data: []byte("id = \"b\"\nlanguage = \"go\"\nmessage = \"m\"\n")},
		"cases/b/after/y.go": {Data: []byte("package y\n")},
		"cases/c/case.toml":  {Data: []byte("id = \"c\"\nlanguage = \"go\"\nmessage = \"m\"\n[[golden]]\nfile = \"gone.go\"\nstart_line = 1\nend_line = 1\ndescription = \"d\"\n")},
		"cases/c/after/y.go": {Data: []byte("package y\n")},
	}
	_, err := LoadSuite(fsys)
	if !errors.Is(err, ErrBadSuite) {
		t.Fatalf("err %v", err)
	}
	for _, want := range []string{
		`suite.toml: unknown key "colour"`,
		`cases/a/case.toml: id = "wrong" must equal the directory name "a"`,
		`cases/a/case.toml: golden[0]: category "typo" is not one of: off-by-one,`,
		`cases/a/case.toml: golden[0]: end_line 9 is past the end of x.go (3 lines)`,
		`cases/b/case.toml: no [[golden]] findings: add one, or set clean = true`,
		`cases/c/case.toml: golden[0]: file "gone.go" is not in after/`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := LoadSuite(fstest.MapFS{}); err == nil || !strings.Contains(err.Error(), "suite.toml") {
		t.Errorf("empty fs: %v", err)
	}
}
