package findings

import (
	"strings"
	"testing"
)

func lines(s string) []string { return strings.Split(s, "\n") }

func TestAnchor(t *testing.T) {
	src := lines("a\n\n  if  x  {\n\n\t\treturn\t1\n  }\nz")
	for _, c := range []struct {
		name      string
		line, end int
		want      string
	}{
		{"one line, whitespace collapsed", 3, 0, "if x {"},
		{"a span drops blank lines", 3, 6, "if x {\nreturn 1\n}"},
		{"end before line is one line", 5, 2, "return 1"},
		{"end past the file is clamped", 6, 99, "}\nz"},
		{"a blank line is empty", 2, 0, ""},
		{"line 0 is outside", 0, 0, ""},
		{"past the end is outside", 8, 0, ""},
	} {
		if got := Anchor(src, c.line, c.end); got != c.want {
			t.Errorf("%s: Anchor(%d, %d) = %q, want %q", c.name, c.line, c.end, got, c.want)
		}
	}
}

func TestKey(t *testing.T) {
	base := lines("package a\n\nfunc f() {\n\tdb.Query(q + name)\n}\n")
	key := Key("main", "a.go", "Security", base, 4, 0)
	if len(key) != keyLen || strings.Trim(key, "0123456789abcdef") != "" {
		t.Fatalf("key %q is not %d hex digits", key, keyLen)
	}
	same := []struct {
		name  string
		lines []string
		line  int
		cat   string
	}{
		{"two lines lower", lines("package a\n\nimport \"x\"\n\nfunc f() {\n\tdb.Query(q + name)\n}\n"), 6, "Security"},
		{"re-indented, spaces inside", lines("package a\n\nfunc f() {\n        db.Query(q  +  name)   \n}\n"), 4, "Security"},
		{"a blank line added before it", lines("package a\n\nfunc f() {\n\n\n\tdb.Query(q + name)\n}\n"), 6, "Security"},
		{"category case", base, 4, "SECURITY"},
	}
	for _, c := range same {
		if got := Key("main", "a.go", c.cat, c.lines, c.line, 0); got != key {
			t.Errorf("%s: key %s, want %s", c.name, got, key)
		}
	}
	differ := []struct {
		name, repo, path, cat string
		lines                 []string
		line                  int
	}{
		{"anchored line rewritten", "main", "a.go", "security", lines("package a\n\nfunc f() {\n\tdb.Query(q, name)\n}\n"), 4},
		{"context rewritten", "main", "a.go", "security", lines("package a\n\nfunc g() {\n\tdb.Query(q + name)\n}\n"), 4},
		{"other path", "main", "b.go", "security", base, 4},
		{"other repo", "lib", "a.go", "security", base, 4},
		{"other category", "main", "a.go", "bug", base, 4},
	}
	for _, c := range differ {
		if got := Key(c.repo, c.path, c.cat, c.lines, c.line, 0); got == key {
			t.Errorf("%s: same key %s", c.name, got)
		}
	}
	if got := Key("main", "a.go", "security", nil, 4, 0); got != "" {
		t.Errorf("no text: key %q, want empty (use MessageKey)", got)
	}
	m := MessageKey("main", "a.go", "Security", "SQL  built from\ta string")
	if m != MessageKey("main", "a.go", "security", " SQL built from a string ") || m == MessageKey("main", "a.go", "security", "other") {
		t.Errorf("message keys do not normalise or do not discriminate")
	}
	if m == key {
		t.Errorf("message key equals the code key")
	}
}

func TestLocate(t *testing.T) {
	src := lines("a\n  b  c\n\nd\ne")
	for _, c := range []struct {
		anchor    string
		line, end int
		ok        bool
	}{
		{"b c", 2, 2, true},
		{"b c\nd", 2, 4, true},
		{"d\ne", 4, 5, true},
		{"b\nd", 0, 0, false},
		{"x", 0, 0, false},
		{"", 0, 0, false},
	} {
		l, e, ok := Locate(src, AnchorDigest(c.anchor))
		if l != c.line || e != c.end || ok != c.ok {
			t.Errorf("Locate(%q) = %d, %d, %v; want %d, %d, %v", c.anchor, l, e, ok, c.line, c.end, c.ok)
		}
	}
}
