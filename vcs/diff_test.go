package vcs

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func lr(start, end int) LineRange { return LineRange{Start: start, End: end} }

// TestParseDiffSvnCaptures pins what ParseDiff makes of real `svn diff -c`
// output (see testdata/svndiff/gen.sh).
func TestParseDiffSvnCaptures(t *testing.T) {
	tests := []struct {
		capture string
		want    map[string]FileDiff
	}{
		{"add", map[string]FileDiff{
			"a.txt":           {Added: []LineRange{lr(1, 10)}, Hunks: []LineRange{lr(1, 10)}},
			"empty.txt":       {},
			"中文 目录/文件@2x.txt": {Added: []LineRange{lr(1, 2)}, Hunks: []LineRange{lr(1, 2)}},
		}},
		{"modify", map[string]FileDiff{
			"a.txt": {Added: []LineRange{lr(2, 2), lr(11, 11)}, Hunks: []LineRange{lr(1, 5), lr(8, 11)}},
		}},
		{"delete", map[string]FileDiff{
			"中文 目录/文件@2x.txt": {Deleted: true},
		}},
		{"binary", map[string]FileDiff{
			"img.png": {Binary: true, MimeType: "application/octet-stream", PropMimeType: "application/octet-stream", PropsChanged: true},
			"nul.dat": {Binary: true, MimeType: "application/octet-stream", PropMimeType: "application/octet-stream", PropsChanged: true},
		}},
		{"propsonly", map[string]FileDiff{
			"a.txt": {PropsChanged: true},
			".":     {PropsChanged: true},
		}},
		{"propsandcontent", map[string]FileDiff{
			"a.txt": {Added: []LineRange{lr(12, 12)}, Hunks: []LineRange{lr(9, 12)}, PropsChanged: true},
		}},
		{"copy", map[string]FileDiff{
			"c.txt": {Added: []LineRange{lr(1, 13)}, Hunks: []LineRange{lr(1, 13)}, PropsChanged: true},
		}},
		{"nonewline", map[string]FileDiff{
			"nn.txt": {Added: []LineRange{lr(1, 2)}, Hunks: []LineRange{lr(1, 2)}},
		}},
		{"tricky", map[string]FileDiff{
			// "--- old comment"/"+++ counter" are content, not a file header.
			"q.sql": {Added: []LineRange{lr(2, 7)}, Hunks: []LineRange{lr(1, 8)}},
		}},
		{"replace", map[string]FileDiff{
			"c.txt": {Added: []LineRange{lr(1, 1)}, Hunks: []LineRange{lr(1, 1)}, PropsChanged: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			patch, err := os.ReadFile(filepath.Join("testdata", "svndiff", tt.capture+".patch"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseDiff(patch)
			if err != nil {
				t.Fatalf("ParseDiff: %v", err)
			}
			checkSections(t, patch, got)
			for path, f := range got {
				f.Start, f.End = 0, 0
				got[path] = f
			}
			for path, f := range tt.want {
				f.Path = path
				tt.want[path] = f
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseDiff:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// checkSections asserts that svn's per-file sections tile the patch and
// each starts with its own Index line, which is what callers rely on to
// drop sections.
func checkSections(t *testing.T, patch []byte, files map[string]FileDiff) {
	t.Helper()
	var fs []FileDiff
	for _, f := range files {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
	off := 0
	for _, f := range fs {
		if f.Start != off {
			t.Errorf("section of %q starts at %d, want %d", f.Path, f.Start, off)
		}
		if !strings.HasPrefix(string(patch[f.Start:f.End]), "Index: "+f.Path+"\n") {
			t.Errorf("section of %q does not start with its Index line: %q", f.Path, patch[f.Start:f.End])
		}
		off = f.End
	}
	if off != len(patch) {
		t.Errorf("sections end at %d, patch is %d bytes", off, len(patch))
	}
}

func TestParseDiffPlain(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		want  map[string]FileDiff
	}{
		{
			name:  "empty",
			patch: "",
			want:  map[string]FileDiff{},
		},
		{
			name: "diff -u with timestamps and CRLF",
			patch: "--- a.c\t2024-01-01 00:00:00 +0000\r\n+++ a.c\t2024-01-02 00:00:00 +0000\r\n" +
				"@@ -1,2 +1,3 @@\r\n x\r\n+y\r\n z\r\n",
			want: map[string]FileDiff{"a.c": {Added: []LineRange{lr(2, 2)}, Hunks: []LineRange{lr(1, 3)}}},
		},
		{
			name:  "deleted against /dev/null",
			patch: "--- old.c\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
			want:  map[string]FileDiff{"old.c": {Deleted: true}},
		},
		{
			name:  "context line whose space was stripped",
			patch: "--- a\n+++ a\n@@ -1,3 +1,4 @@\n x\n\n+y\n z\n",
			want:  map[string]FileDiff{"a": {Added: []LineRange{lr(3, 3)}, Hunks: []LineRange{lr(1, 4)}}},
		},
		{
			name:  "binary files differ",
			patch: "Index: b.bin\n===\n--- b.bin\n+++ b.bin\nBinary files b.bin and b.bin differ\n",
			want:  map[string]FileDiff{"b.bin": {Binary: true}},
		},
		{
			name: "svn 1.6 property section",
			patch: "Index: a.c\n===\n--- a.c\t(revision 1)\n+++ a.c\t(working copy)\n\n" +
				"Property changes on: a.c\n___\nAdded: svn:eol-style\n   + native\n\n" +
				"Index: b.c\n===\n--- b.c\t(revision 0)\n+++ b.c\t(revision 2)\n@@ -0,0 +1 @@\n+x\n",
			want: map[string]FileDiff{
				"a.c": {PropsChanged: true},
				"b.c": {Added: []LineRange{lr(1, 1)}, Hunks: []LineRange{lr(1, 1)}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDiff([]byte(tt.patch))
			if err != nil {
				t.Fatalf("ParseDiff: %v", err)
			}
			for path, f := range got {
				f.Start, f.End = 0, 0
				got[path] = f
			}
			for path, f := range tt.want {
				f.Path = path
				tt.want[path] = f
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseDiff:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseDiffErrors(t *testing.T) {
	tests := []struct {
		name, patch, wantErr string
	}{
		{"truncated hunk", "Index: a\n===\n--- a\n+++ a\n@@ -1,3 +1,3 @@\n a\n", `diff ends inside hunk of "a"`},
		{"hunk cut by next file", "Index: a\n===\n--- a\n+++ a\n@@ -1,3 +1,3 @@\n a\nIndex: b\n", `hunk of "a" ends early`},
		{"too many added lines", "--- a\n+++ a\n@@ -1 +1 @@\n+x\n+y\n", "more added lines"},
		{"bad header", "--- a\n+++ a\n@@ -x +1 @@\n", "malformed hunk header"},
		{"hunk without file", "@@ -1 +1 @@\n-a\n+b\n", "hunk before any file header"},
		{"truncated property hunk", "Index: a\n===\n\nProperty changes on: a\n___\nAdded: p\n## -0,0 +1,2 ##\n+v\n", "inside property hunk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDiff([]byte(tt.patch))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseDiff error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func FuzzParseDiff(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "svndiff", "*.patch"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, patch []byte) {
		files, err := ParseDiff(patch)
		if err != nil {
			return
		}
		for path, fd := range files {
			if fd.Start < 0 || fd.Start > fd.End || fd.End > len(patch) {
				t.Fatalf("%q: section [%d,%d) outside patch of %d bytes", path, fd.Start, fd.End, len(patch))
			}
			for _, rs := range [][]LineRange{fd.Added, fd.Hunks} {
				for i, r := range rs {
					if r.Start > r.End || (i > 0 && rs[i-1].End+1 >= r.Start) {
						t.Fatalf("%q: ranges not sorted and merged: %v", path, rs)
					}
				}
			}
			for _, a := range fd.Added {
				if !inRanges(fd.Hunks, a.Start) || !inRanges(fd.Hunks, a.End) {
					t.Fatalf("%q: added %v outside hunks %v", path, a, fd.Hunks)
				}
			}
		}
	})
}

// The new value of svn:mime-type in a property section is kept, so a diff
// that leaves out added files' text (svnlook diff --no-diff-added) still
// tells binaries; other properties and deleted values are not taken.
func TestParseDiffPropMimeType(t *testing.T) {
	patch := "Index: a.png\n" +
		"===================================================================\n" +
		"--- a.png\t(revision 1)\n+++ a.png\t(revision 2)\n\n" +
		"Property changes on: a.png\n" +
		"___________________________________________________________________\n" +
		"Added: custom\n## -0,0 +1 ##\n+text/plain\n\\ No newline at end of property\n" +
		"Added: svn:mime-type\n## -0,0 +1 ##\n+image/png\n\\ No newline at end of property\n" +
		"Index: b.txt\n" +
		"===================================================================\n" +
		"--- b.txt\t(revision 1)\n+++ b.txt\t(revision 2)\n\n" +
		"Property changes on: b.txt\n" +
		"___________________________________________________________________\n" +
		"Deleted: svn:mime-type\n## -1 +0,0 ##\n-image/png\n\\ No newline at end of property\n" +
		"Added: other\n## -0,0 +1 ##\n+x\n\\ No newline at end of property\n"
	got, err := ParseDiff([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	if m := got["a.png"].PropMimeType; m != "image/png" {
		t.Errorf("a.png PropMimeType = %q, want image/png", m)
	}
	if m := got["b.txt"].PropMimeType; m != "" {
		t.Errorf("b.txt PropMimeType = %q, want empty", m)
	}
}
