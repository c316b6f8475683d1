package p4emu

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/vcs/p4"
)

const fixtures = "../../../../shared/fixtures/p4"

// run invokes the emulator in-process on depot d.
func run(t *testing.T, d *Depot, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "depot.json")
	if err := d.Save(path); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == EnvDepot {
			return path
		}
		return env[k]
	}
	var out, errb bytes.Buffer
	code = Main(args, getenv, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func capture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Skipf("capture not available: %v", err)
	}
	return string(b)
}

// The emulator must print what the real server printed, byte for byte.
func TestEmulatorReproducesCaptures(t *testing.T) {
	for _, tc := range []struct {
		capture string
		args    []string
	}{
		{"marshal/changes.bin", []string{"-G", "changes"}},
		{"marshal/changes-l.bin", []string{"-G", "changes", "-l"}},
		{"marshal/info.bin", []string{"-G", "info"}},
	} {
		t.Run(tc.capture, func(t *testing.T) {
			want := capture(t, tc.capture)
			got, stderr, code := run(t, CaptureDepot(), nil, tc.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if got != want {
				t.Errorf("output differs from the capture:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// Error and info records use the int encoding p4 uses for severity,
// generic and level; re-encoding the captures must give their bytes.
func TestMarshalEncoderRoundTripsCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "marshal", "*.bin"))
	if len(files) == 0 {
		t.Skip("no captures")
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		recs, err := p4.DecodeMarshal(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var out []byte
		for _, r := range recs {
			out = AppendMarshal(out, r, "severity", "generic", "level")
		}
		if !bytes.Equal(out, b) {
			t.Errorf("%s: re-encoded bytes differ", filepath.Base(f))
		}
	}
}

func TestEmulatorAuthErrors(t *testing.T) {
	d := Fixture()
	d.Password = "s3cret"
	_, stderr, code := run(t, d, nil, "counter", "maxCommitChange")
	if code != 1 || stderr != "Perforce password (P4PASSWD) invalid or unset.\n" {
		t.Errorf("no password: exit %d, %q", code, stderr)
	}
	out, _, code := run(t, d, map[string]string{"P4PASSWD": "s3cret"}, "counter", "maxCommitChange")
	if code != 0 || out != "5\n" {
		t.Errorf("with password: exit %d, %q", code, out)
	}
	d.TicketExpired = true
	out, _, code = run(t, d, nil, "-G", "counter", "maxCommitChange")
	recs, err := p4.DecodeMarshal(strings.NewReader(out))
	if err != nil || len(recs) != 1 || code != 1 {
		t.Fatalf("expired: %v %v exit %d", recs, err, code)
	}
	if got := recs[0].Get("data"); got != "Your session has expired, please login again.\n" || recs[0].Get("severity") != "3" {
		t.Errorf("expired: %q severity %s", got, recs[0].Get("severity"))
	}
}

func TestEmulatorUnicodeNeedsCharset(t *testing.T) {
	d := UnicodeFixture()
	_, stderr, code := run(t, d, nil, "counter", "change")
	if code != 1 || !strings.Contains(stderr, "Unicode server permits only unicode enabled clients.") {
		t.Errorf("without -C: exit %d %q", code, stderr)
	}
	if _, _, code := run(t, d, nil, "-C", "utf8", "counter", "change"); code != 0 {
		t.Errorf("with -C utf8: exit %d", code)
	}
	out, _, _ := run(t, d, nil, "-ztag", "info")
	recs, _ := p4.ParseZtag([]byte(out))
	if len(recs) != 1 || recs[0].Get("unicode") != "enabled" {
		t.Errorf("info: %+v", recs)
	}
}

func TestEmulatorDescribeDiff(t *testing.T) {
	out, _, code := run(t, Fixture(), nil, "describe", "-du", "2")
	if code != 0 {
		t.Fatal(code)
	}
	for _, want := range []string{
		"Change 2 by bob@bob-ws on ",
		"\tEdits of every kind\n",
		"... //depot/main/src/app.c#2 edit\n",
		"==== //depot/main/src/app.c#2 (text) ====\n\n@@ -2,5 +2,7 @@\n",
		"+\tconst char *password = \"hunter2hunter2\";\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe -du lacks %q:\n%s", want, out)
		}
	}
}

// `p4 files` and `p4 dirs` in -ztag: one record per file with the print
// header's keys, one "dir" per subdirectory, newest revision at the
// change, deleted files only without -e, and the "no such file(s)."
// warning on stderr when nothing matches.
func TestFilesAndDirs(t *testing.T) {
	d := &Depot{}
	d.Submit(&Change{User: "ann", Client: "ws", Desc: "a\n", Files: []*File{
		{Path: "//depot/main/.agents/skills/go/SKILL.md", Action: "add", Type: "text", Content: []byte("go\n")},
		{Path: "//depot/main/.agents/skills/README", Action: "add", Type: "text", Content: []byte("r\n")},
		{Path: "//depot/main/.agents/skills/old/SKILL.md", Action: "add", Type: "text", Content: []byte("o\n")},
	}})
	d.Submit(&Change{User: "ann", Client: "ws", Desc: "b\n", Files: []*File{
		{Path: "//depot/main/.agents/skills/old/SKILL.md", Action: "delete", Type: "text"},
		{Path: "//depot/main/.agents/skills/link", Action: "add", Type: "symlink", Content: []byte("go")},
	}})
	out, stderr, code := run(t, d, nil, "-ztag", "files", "-e", "//depot/main/.agents/skills/*@2")
	want := "... depotFile //depot/main/.agents/skills/README\n... rev 1\n... change 1\n... action add\n... type text\n... time 1700000060\n\n" +
		"... depotFile //depot/main/.agents/skills/link\n... rev 1\n... change 2\n... action add\n... type symlink\n... time 1700000120\n\n"
	if code != 0 || stderr != "" || out != want {
		t.Errorf("files -e: exit %d stderr %q\n got %q\nwant %q", code, stderr, out, want)
	}
	out, _, _ = run(t, d, nil, "-ztag", "dirs", "//depot/main/.agents/skills/*@2")
	if out != "... dir //depot/main/.agents/skills/go\n\n" {
		t.Errorf("dirs at 2 (old/ only has a deleted file): %q", out)
	}
	out, _, _ = run(t, d, nil, "-ztag", "dirs", "//depot/main/.agents/skills/*@1")
	if out != "... dir //depot/main/.agents/skills/go\n\n... dir //depot/main/.agents/skills/old\n\n" {
		t.Errorf("dirs at 1: %q", out)
	}
	_, stderr, _ = run(t, d, nil, "-ztag", "files", "//depot/main/nothing/*@2")
	if stderr != "//depot/main/nothing/*@2 - no such file(s).\n" {
		t.Errorf("no match: stderr %q", stderr)
	}
}

// `p4 filelog` in -ztag has the keys, in order, of the real capture
// (whose values its publisher scrambled): per revision the revision's
// fields, then its integration records; a move/add names its source
// with "moved from" and the move/delete its target with "moved into".
func TestFilelogMatchesCapture(t *testing.T) {
	var want []string
	for _, l := range strings.Split(capture(t, "ztag/p4_filelog_long_desc.ztag"), "\n") {
		k, _, _ := strings.Cut(strings.TrimPrefix(l, "... "), " ")
		if !strings.HasPrefix(l, "... ") {
			continue
		}
		if k == "depotFile" && len(want) > 0 {
			break
		}
		want = append(want, k)
	}
	d := &Depot{}
	d.Submit(&Change{User: "ann", Client: "ws", Desc: "add\n", Files: []*File{
		{Path: "//depot/main/a.c", Action: "add", Type: "text", Content: []byte("a\n")}}})
	d.Submit(&Change{User: "ann", Client: "ws", Desc: "branch it\n", Files: []*File{
		{Path: "//depot/rel/a.c", Action: "branch", Type: "text", From: "//depot/main/a.c"}}})
	d.Submit(&Change{User: "bob", Client: "ws", Desc: "edit it\n", Files: []*File{
		{Path: "//depot/rel/a.c", Action: "edit", Type: "text", Content: []byte("b\n")}}})
	out, stderr, code := run(t, d, nil, "-ztag", "filelog", "-l", "//depot/rel/a.c")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if k, _, ok := strings.Cut(strings.TrimPrefix(l, "... "), " "); ok && strings.HasPrefix(l, "... ") {
			got = append(got, k)
		}
	}
	// The capture's newest revision has the integration record; ours is
	// the edit, so compare with the revisions swapped: the keys of one
	// revision do not depend on its index but for the number.
	swapped := strings.NewReplacer("0,0", "1,0", "0", "1", "1", "0")
	for i, k := range want {
		want[i] = swapped.Replace(k)
	}
	if strings.Join(sortedKeys(got), " ") != strings.Join(sortedKeys(want), " ") {
		t.Errorf("filelog keys\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(out, "... how1,0 branch from\n... file1,0 //depot/main/a.c\n... srev1,0 #none\n... erev1,0 #1\n") {
		t.Errorf("branch record missing:\n%s", out)
	}

	d.Submit(&Change{User: "bob", Client: "ws", Desc: "move it\n", Files: []*File{
		{Path: "//depot/rel/b.c", Action: "move/add", Type: "text", From: "//depot/rel/a.c", Content: []byte("b\nc\n")},
		{Path: "//depot/rel/a.c", Action: "move/delete", Type: "text"}}})
	out, _, _ = run(t, d, nil, "-ztag", "filelog", "-m1", "//depot/rel/b.c#1", "//depot/rel/a.c#3")
	for _, want := range []string{
		"... depotFile //depot/rel/b.c\n... rev0 1\n... change0 4\n... action0 move/add\n",
		"... how0,0 moved from\n... file0,0 //depot/rel/a.c\n... srev0,0 #none\n... erev0,0 #2\n",
		"... action0 move/delete\n",
		"... how0,0 moved into\n... file0,0 //depot/rel/b.c\n... srev0,0 #none\n... erev0,0 #1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("filelog -m1 lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "rev1 ") {
		t.Errorf("-m1 listed more than one revision:\n%s", out)
	}
	_, stderr, _ = run(t, d, nil, "-ztag", "filelog", "//depot/nothing.c")
	if stderr != "//depot/nothing.c - no such file(s).\n" {
		t.Errorf("no such file: stderr %q", stderr)
	}
}

func sortedKeys(ks []string) []string {
	out := append([]string(nil), ks...)
	sort.Strings(out)
	return out
}
