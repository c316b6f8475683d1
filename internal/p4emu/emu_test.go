package p4emu

import (
	"bytes"
	"os"
	"path/filepath"
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
