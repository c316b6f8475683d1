package svn

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/rundir"
)

// A dump as svnadmin writes it: revision properties, a file with
// properties and text, a property delta with a deletion, a text delta,
// and a delete with no content at all.
const sampleDump = "SVN-fs-dump-format-version: 3\n\nUUID: u\n\n" +
	"Revision-number: 7\nProp-content-length: 56\nContent-length: 56\n\n" +
	"K 10\nsvn:author\nV 5\nalice\nK 7\nsvn:log\nV 3\nmsg\nPROPS-END\n\n" +
	"Node-path: trunk/a.c\nNode-kind: file\nNode-action: add\nProp-content-length: 77\nText-content-length: 6\nText-content-md5: x\nContent-length: 83\n\n" +
	"K 13\nsvn:mime-type\nV 8\ntext/x-c\nK 13\nsvn:mergeinfo\nV 10\n/b:1-2\nxyz\nPROPS-END\na\nb\nc\n\n\n" +
	"Node-path: trunk/d\nNode-kind: dir\nNode-action: change\nProp-delta: true\nProp-content-length: 29\nContent-length: 29\n\n" +
	"D 13\nsvn:mime-type\nPROPS-END\n\n" +
	"Node-path: trunk/e.c\nNode-kind: file\nNode-action: change\nText-delta: true\nText-content-length: 16\nContent-length: 16\n\n" +
	"SVN\x00\x00\x00\x06\x01\x06\x86ab\nde\n\n\n" +
	"Node-path: trunk/gone.c\nNode-action: delete\n\n"

func TestReadDump(t *testing.T) {
	var revProps map[string]string
	var got []string
	err := readDump(strings.NewReader(sampleDump), func(p map[string]string) error {
		revProps = p
		return nil
	}, func(n *dumpNode, text io.Reader) error {
		s := n.path + " " + n.kind + " " + n.action
		if n.propsKnown {
			s += " props=" + n.props["svn:mime-type"]
		}
		if _, kept := n.props["svn:mergeinfo"]; kept {
			t.Errorf("%s: svn:mergeinfo kept; only the wanted properties are", n.path)
		}
		switch {
		case n.hasText && n.textDelta:
			size, err := svndiffTargetSize(text)
			if err != nil {
				return err
			}
			s += " delta-size=" + strings.Repeat("#", int(size))
		case n.hasText:
			b, _ := io.ReadAll(text)
			s += " text=" + strings.ReplaceAll(string(b), "\n", "|")
		}
		got = append(got, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if revProps["svn:author"] != "alice" || revProps["svn:log"] != "msg" {
		t.Errorf("revision properties %v", revProps)
	}
	want := []string{
		"trunk/a.c file add props=text/x-c text=a|b|c|",
		"trunk/d dir change props=",
		"trunk/e.c file change delta-size=######",
		"trunk/gone.c  delete",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("nodes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Damaged streams fail with errDumpFormat, naming what is wrong, never
// by hanging or allocating what a corrupt length asks for.
func TestReadDumpMalformed(t *testing.T) {
	for name, in := range map[string]string{
		"bad length":        "Node-path: a\nContent-length: x\n\n",
		"parts over total":  "Node-path: a\nProp-content-length: 10\nText-content-length: 10\nContent-length: 5\n\n",
		"no colon":          "Node-path a\n\n",
		"truncated props":   "Node-path: a\nProp-content-length: 20\nContent-length: 20\n\nK 3\nabc\nV 40\n",
		"huge property":     "Node-path: a\nProp-content-length: 60\nContent-length: 60\n\nK 13\nsvn:mime-type\nV 999999999999\n",
		"ends in a header":  "Node-path: a",
		"long header line":  "Node-path: " + strings.Repeat("x", maxDumpHeader+10) + "\n\n",
		"text cut short":    "Node-path: a\nText-content-length: 10\nContent-length: 10\n\nabc",
		"not svndiff":       "Node-path: a\nText-delta: true\nText-content-length: 4\nContent-length: 4\n\nABCD",
		"svndiff truncated": "Node-path: a\nText-delta: true\nText-content-length: 6\nContent-length: 6\n\nSVN\x00\x00\x80",
	} {
		t.Run(name, func(t *testing.T) {
			err := readDump(strings.NewReader(in), nil, func(n *dumpNode, text io.Reader) error {
				if text == nil {
					return nil
				}
				if n.textDelta {
					_, err := svndiffTargetSize(text)
					return err
				}
				_, err := io.ReadAll(text)
				return err
			})
			if !errors.Is(err, errDumpFormat) {
				t.Errorf("err = %v, want errDumpFormat", err)
			}
		})
	}
}

// svn prints each named target's section under its base name; the
// sections go back to their full paths in target order, including two
// files with one base name, a stub, and a property section, and hunk
// lines that look like headers are left alone.
func TestRelabelDiff(t *testing.T) {
	in := "Index: f.txt\n===\n--- f.txt\t(revision 1)\n+++ f.txt\t(revision 2)\n@@ -1,2 +1,2 @@\n-Index: f.txt\n+--- f.txt\t(x)\n Property changes on: f.txt\n" +
		"Index: f.txt\n===\n--- f.txt\t(revision 1)\n+++ f.txt\t(revision 2)\n\nProperty changes on: f.txt\n___\nAdded: p\n## -0,0 +1 ##\n+v\n" +
		"Index: c.go (added)\n"
	var out bytes.Buffer
	if err := relabelDiff(strings.NewReader(in), &out, []string{"a/f.txt", "b/x.go", "b/f.txt", "new/c.go"}); err != nil {
		t.Fatal(err)
	}
	want := "Index: a/f.txt\n===\n--- a/f.txt\t(revision 1)\n+++ a/f.txt\t(revision 2)\n@@ -1,2 +1,2 @@\n-Index: f.txt\n+--- f.txt\t(x)\n Property changes on: f.txt\n" +
		"Index: b/f.txt\n===\n--- b/f.txt\t(revision 1)\n+++ b/f.txt\t(revision 2)\n\nProperty changes on: b/f.txt\n___\nAdded: p\n## -0,0 +1 ##\n+v\n" +
		"Index: new/c.go (added)\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if err := relabelDiff(strings.NewReader("Index: z.c\n"), io.Discard, []string{"a.c"}); err == nil || !strings.Contains(err.Error(), "z.c") {
		t.Errorf("a section for no target: err = %v, want one naming z.c", err)
	}
}

// The batched cat's stream is cut by the dumped sizes; a text whose MD5
// is not the dumped one stops the batch and leaves no file behind, so
// the per-file cat takes it and the rest. Empty files print nothing.
func TestCatSplitter(t *testing.T) {
	sum := func(s string) string { return fmt.Sprintf("%x", md5.Sum([]byte(s))) }
	files := func(md5a string) []batchFile {
		return []batchFile{
			{rel: "a.txt", d: &dumpedFile{size: 4, md5: md5a}},
			{rel: "empty.txt", d: &dumpedFile{size: 0, md5: sum("")}},
			{rel: "b/c.txt", d: &dumpedFile{size: 3, md5: sum("x\ny")}},
		}
	}
	t.Run("ok", func(t *testing.T) {
		dst := rundir.New(t.TempDir())
		fs := files(sum("a\nb\n"))
		sp := &catSplitter{files: fs, dst: dst, cancel: func() {}}
		for _, chunk := range []string{"a\n", "b\nx", "\ny"} {
			if _, err := sp.Write([]byte(chunk)); err != nil {
				t.Fatal(err)
			}
		}
		if err := sp.finish(); err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if !f.d.written {
				t.Errorf("%s not written", f.rel)
			}
		}
		if got := readSrc(t, dst.Dir(), "b/c.txt"); got != "x\ny" || fs[2].d.lines != 2 || fs[0].d.lines != 2 {
			t.Errorf("b/c.txt = %q, lines %d, %d", got, fs[2].d.lines, fs[0].d.lines)
		}
	})
	t.Run("mismatch", func(t *testing.T) {
		dst := rundir.New(t.TempDir())
		fs := files(sum("a\nb\n"))
		cancelled := false
		sp := &catSplitter{files: fs, dst: dst, cancel: func() { cancelled = true }}
		_, err := sp.Write([]byte("a\r\nb\r\n"))
		sp.abort()
		if err == nil || !strings.Contains(err.Error(), "a.txt") || !cancelled {
			t.Errorf("err = %v, cancelled %v: want a.txt named and the cat stopped", err, cancelled)
		}
		for _, f := range fs {
			if f.d.written {
				t.Errorf("%s written after a mismatch", f.rel)
			}
		}
		assertNoSrc(t, dst.Dir(), "a.txt")
	})
}

// A dump that fails for a reason of its own (here a tool that refuses)
// costs speed, not the review: every file is fetched on its own.
func TestFetchFallsBackWhenDumpFails(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "refuse")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\necho 'dump: E000013: Permission denied' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, m := range benchModes() {
		t.Run(m.name, func(t *testing.T) {
			a := newModeAdapter(t, m, func(c *Config) { c.SvnadminPath, c.SvnrdumpPath = bad, bad })
			c, dir := fetch(t, a, fx.rTen)
			if got := readSrc(t, dir, "many10/f0009.txt"); got != "file 9 of 10\nsecond line\n" {
				t.Errorf("f0009 = %q", got)
			}
			_, cats := splitCounts(a.ProcessCounts())
			if a.ProcessCounts()["refuse dump"] != 1 || cats != 10 {
				t.Errorf("processes %v: want the refused dump, then 10 cats", a.ProcessCounts())
			}
			checkPatchAgrees(t, m.name, c, dir)
		})
	}
}
