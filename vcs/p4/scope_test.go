package p4_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/vcs"
)

// max_review_bytes used to exist only for svn; p4 applies the shared
// vcs.Scope from describe's sizes, so nothing past the cap is printed.
func TestFetchMaxReviewBytes(t *testing.T) {
	d := p4emu.Fixture()
	ten := []byte("123456789\n")
	c := d.Submit(&p4emu.Change{User: "ann", Client: "ann-ws", Desc: "three files\n", Files: []*p4emu.File{
		{Path: "//depot/main/cap/a.txt", Action: "add", Type: "text", Content: ten},
		{Path: "//depot/main/cap/b.txt", Action: "add", Type: "text", Content: ten},
		{Path: "//depot/main/cap/c.txt", Action: "add", Type: "text", Content: ten},
	}})
	e := newEmu(t, d)
	e.cfg.MaxReviewBytes = 15
	change, dir := fetch(t, e.adapter(t), strconv.Itoa(c.Num))
	fs := files(change)
	if f := fs["depot/main/cap/a.txt"]; f.Skipped != "" {
		t.Errorf("a.txt, within the cap: Skipped %q", f.Skipped)
	}
	for _, p := range []string{"depot/main/cap/b.txt", "depot/main/cap/c.txt"} {
		if f := fs[p]; f.Skipped != vcs.SkipReviewBytesCap {
			t.Errorf("%s past the cap: Skipped %q, want %q", p, f.Skipped, vcs.SkipReviewBytesCap)
		}
		if _, err := os.Stat(filepath.Join(dir, "src", filepath.FromSlash(p))); err == nil {
			t.Errorf("%s past the cap was fetched", p)
		}
	}
	for _, call := range e.calls() {
		if strings.Contains(call, "print") && strings.Contains(call, "b.txt") {
			t.Errorf("p4 print named a file past the cap: %s", call)
		}
	}
}
