package builtin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/internal/svntest"
)

// The case-making scripts of docs/eval-suite.md are what a shop copies, so
// the test runs them from the page itself, against a real SVN repository
// and the Perforce emulator.

const docPath = "../../docs/eval-suite.md"

// docScript writes the fenced python block of docs/eval-suite.md whose
// second line names the script to dir and returns its path.
func docScript(t *testing.T, dir, name string) string {
	t.Helper()
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	start := "```python\n#!/usr/bin/env python3\n# " + name + " "
	i := strings.Index(string(doc), start)
	if i < 0 {
		t.Fatalf("%s has no python block starting with # %s", docPath, name)
	}
	body := string(doc[i+len("```python\n"):])
	end := strings.Index(body, "\n```\n")
	if end < 0 {
		t.Fatalf("%s: the %s block is not closed", docPath, name)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body[:end+1]), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func requirePython(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: the doc's case scripts need it")
	}
	return py
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, text := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkCase compares the case the script wrote with the trees and message
// it should hold, and decodes its case.toml strictly.
func checkCase(t *testing.T, dir string, wantBefore, wantAfter map[string]string, wantMsg, wantAuthor string) {
	t.Helper()
	fsys := os.DirFS(dir)
	for tree, want := range map[string]map[string]string{"before": wantBefore, "after": wantAfter} {
		got := readTree(t, fsys, tree)
		for p, text := range want {
			if got[p] != text {
				t.Errorf("%s/%s = %q, want %q", tree, p, got[p], text)
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("%s/%s should not be in the case", tree, p)
			}
		}
	}
	var m caseMeta
	decodeStrict(t, fsys, "case.toml", &m)
	if m.Message != wantMsg || m.Author != wantAuthor || m.Clean || len(m.Golden) != 0 {
		t.Errorf("case.toml: message %q author %q clean %v golden %d; want message %q author %q, not clean, no golden yet",
			m.Message, m.Author, m.Clean, len(m.Golden), wantMsg, wantAuthor)
	}
	if m.Title != strings.SplitN(wantMsg, "\n", 2)[0] {
		t.Errorf("title %q is not the message's first line", m.Title)
	}
	// What the user adds next must make it a case of the format.
	data, err := os.ReadFile(filepath.Join(dir, "case.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := toml.Decode(string(data)+"\n[[golden]]\nfile = \"x\"\nstart_line = 1\nend_line = 1\ndescription = \"d\"\n", &caseMeta{}); err != nil {
		t.Errorf("case.toml with a [[golden]] appended does not parse: %v", err)
	}
}

func TestDocSVNScript(t *testing.T) {
	py := requirePython(t)
	svntest.Require(t)
	dir := t.TempDir()
	script := docScript(t, dir, "svn2case.py")
	run(t, dir, nil, "svnadmin", "create", "repo")
	url := "file://" + filepath.ToSlash(filepath.Join(dir, "repo"))
	run(t, dir, nil, "svn", "mkdir", "-m", "layout", "--username", "admin", url+"/trunk")
	run(t, dir, nil, "svn", "checkout", "-q", url+"/trunk", "wc")
	wc := filepath.Join(dir, "wc")

	r1 := map[string]string{
		"src/ring.c":      "int ring[8];\nint next(int i) { return (i + 1) % 8; }\n",
		"src/my file@2.h": "#define RING 8\n",
		"docs/old.txt":    "obsolete\n",
	}
	writeFiles(t, wc, r1)
	run(t, wc, nil, "svn", "add", "-q", "src", "docs")
	run(t, wc, nil, "svn", "commit", "-q", "-m", "import ring", "--username", "admin")
	// r3: the change the case is made of.
	r3 := map[string]string{
		"src/ring.c":     "int ring[8];\nint next(int i) { return i + 1 > 8 ? 0 : i + 1; }\n",
		"src/sub/util.c": "int util(void) { return 0; }\n",
	}
	writeFiles(t, wc, r3)
	run(t, wc, nil, "svn", "add", "-q", "src/sub")
	run(t, wc, nil, "svn", "rm", "-q", "docs/old.txt")
	msg := "ring: wrap without modulo\n\nThe M0 has no divider."
	run(t, wc, nil, "svn", "commit", "-q", "-m", msg, "--username", "rgarcia")
	// r4: a follow-up, for the range.
	writeFiles(t, wc, map[string]string{"src/my file@2.h": "#define RING 16\n"})
	run(t, wc, nil, "svn", "commit", "-q", "-m", "ring: 16 slots", "--username", "mchen")

	suite := filepath.Join(dir, "suite")
	run(t, dir, nil, py, script, url+"/trunk", "3", suite, "c-ring-wrap", "c")
	checkCase(t, filepath.Join(suite, "cases", "c-ring-wrap"),
		map[string]string{"src/ring.c": r1["src/ring.c"], "docs/old.txt": r1["docs/old.txt"]},
		map[string]string{"src/ring.c": r3["src/ring.c"], "src/sub/util.c": r3["src/sub/util.c"]},
		msg, "rgarcia")

	run(t, dir, nil, py, script, url+"/trunk", "3:4", suite, "c-ring-range", "c")
	checkCase(t, filepath.Join(suite, "cases", "c-ring-range"),
		map[string]string{"src/ring.c": r1["src/ring.c"], "docs/old.txt": r1["docs/old.txt"], "src/my file@2.h": r1["src/my file@2.h"]},
		map[string]string{"src/ring.c": r3["src/ring.c"], "src/sub/util.c": r3["src/sub/util.c"], "src/my file@2.h": "#define RING 16\n"},
		msg+"\n\nring: 16 slots", "mchen")

	// An existing case is never overwritten.
	cmd := exec.Command(py, script, url+"/trunk", "3", suite, "c-ring-wrap", "c")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "exists") {
		t.Errorf("second run over the same id: err %v, output %q; want a refusal naming the existing case", err, out)
	}
}

func TestDocP4Script(t *testing.T) {
	py := requirePython(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH: cannot build the p4 emulator")
	}
	dir := t.TempDir()
	script := docScript(t, dir, "p4case.py")
	emu := filepath.Join(dir, "p4emu")
	run(t, "", nil, goBin, "build", "-o", emu, "github.com/aicr-dev/aicr/internal/p4emu/p4")

	d := &p4emu.Depot{}
	d.Submit(&p4emu.Change{User: "admin", Client: "ws", Desc: "import\n", Files: []*p4emu.File{
		{Path: "//game/main/Source/Inventory.cpp", Action: "add", Type: "text", Content: []byte("int slots = 8;\n")},
		{Path: "//game/main/Source/Old.cpp", Action: "add", Type: "text", Content: []byte("old\n")},
		{Path: "//game/main/Content/logo.png", Action: "add", Type: "binary", Content: []byte("\x89PNG")},
		{Path: "//game/other/x.cpp", Action: "add", Type: "text", Content: []byte("x\n")},
	}})
	msg := "Inventory: Compact()\n\nMerge partial stacks."
	d.Submit(&p4emu.Change{User: "lnguyen", Client: "ws", Desc: msg + "\n", Files: []*p4emu.File{
		{Path: "//game/main/Source/Inventory.cpp", Action: "edit", Type: "text", Content: []byte("int slots = 8;\nvoid Compact();\n")},
		{Path: "//game/main/Source/Old.cpp", Action: "delete", Type: "text"},
		{Path: "//game/main/Source/Stack@2.h", Action: "add", Type: "text", Content: []byte("struct Stack;\n")},
		{Path: "//game/main/Content/logo.png", Action: "edit", Type: "binary", Content: []byte("\x89PNG2")},
		{Path: "//game/other/x.cpp", Action: "edit", Type: "text", Content: []byte("y\n")},
	}})
	shelfMsg := "Inventory: sort button"
	d.Shelve(&p4emu.Change{User: "tkato", Client: "ws2", Desc: shelfMsg + "\n", Files: []*p4emu.File{
		{Path: "//game/main/Source/Inventory.cpp", Action: "edit", Type: "text", Content: []byte("int slots = 8;\nvoid Compact();\nvoid Sort();\n")},
	}})
	depot := filepath.Join(dir, "depot.json")
	if err := d.Save(depot); err != nil {
		t.Fatal(err)
	}
	if _, err := p4emu.WriteWrapper(filepath.Join(dir, "bin"), emu, depot, ""); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + filepath.Join(dir, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")}

	suite := filepath.Join(dir, "suite")
	run(t, dir, env, py, script, "2", "//game/main/", suite, "cpp-compact", "cpp")
	checkCase(t, filepath.Join(suite, "cases", "cpp-compact"),
		map[string]string{"Source/Inventory.cpp": "int slots = 8;\n", "Source/Old.cpp": "old\n"},
		map[string]string{"Source/Inventory.cpp": "int slots = 8;\nvoid Compact();\n", "Source/Stack@2.h": "struct Stack;\n"},
		msg, "lnguyen")

	run(t, dir, env, py, script, "3", "//game/main/", suite, "cpp-sort", "cpp", "--shelved")
	checkCase(t, filepath.Join(suite, "cases", "cpp-sort"),
		map[string]string{"Source/Inventory.cpp": "int slots = 8;\nvoid Compact();\n"},
		map[string]string{"Source/Inventory.cpp": "int slots = 8;\nvoid Compact();\nvoid Sort();\n"},
		shelfMsg, "tkato")
}
