package p4_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// shelfDepot is the fixture plus a pending change with an edit of app.c
// and a new file shelved.
func shelfDepot() (*p4emu.Depot, int) {
	d := p4emu.Fixture()
	app := "#include <stdio.h>\n\nint main(void)\n{\n\tconst char *password = \"hunter2hunter2\";\n\tputs(password);\n\tputs(\"shelved\");\n\treturn 0;\n}\n"
	c := d.Shelve(&p4emu.Change{User: "bob", Client: "bob-ws", Desc: "Not submitted yet\n", Files: []*p4emu.File{
		{Path: "//depot/main/src/app.c", Action: "edit", Type: "text", Content: []byte(app)},
		{Path: "//depot/main/src/shelved_new.c", Action: "add", Type: "text", Content: []byte("int fresh(void) { return 2; }\n")},
	}})
	return d, c.Num
}

// A shelved change reads like a submitted one: the edit's added line at
// its new-file number with the shelved content in src/, the new file
// whole, through describe -S and print @=N.
func TestFetchShelf(t *testing.T) {
	d, n := shelfDepot()
	e := newEmu(t, d)
	a := e.adapter(t)
	dir := t.TempDir()
	run := rundir.New(dir)
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	c, err := a.FetchShelf(context.Background(), itoa(n), run)
	if err != nil {
		t.Fatal(err)
	}
	fs := files(c)
	app := fs["depot/main/src/app.c"]
	if app.Action != vcs.ActionModify || !app.IsAdded(7) || app.IsAdded(5) || app.Skipped != "" {
		t.Errorf("shelved edit: %+v", app)
	}
	if !strings.Contains(src(t, dir, "depot/main/src/app.c"), `puts("shelved")`) {
		t.Error("the shelved content is not in src/")
	}
	if f := fs["depot/main/src/shelved_new.c"]; f.Action != vcs.ActionAdd || !f.IsAdded(1) {
		t.Errorf("shelved add: %+v", f)
	}
	if c.Author != "bob" || c.Description != "Not submitted yet\n" {
		t.Errorf("change %+v", c)
	}
	var sawS bool
	for _, call := range e.calls() {
		if strings.Contains(call, "describe -S -s") {
			sawS = true
		}
	}
	if !sawS {
		t.Errorf("no describe -S: %v", e.calls())
	}
	// Fetch (submitted only) refuses the pending change, and FetchShelf a
	// submitted one, each saying what to do.
	if _, err := a.Fetch(context.Background(), itoa(n), rundir.New(t.TempDir())); !errors.Is(err, vcs.ErrNoSuchRevision) || !strings.Contains(err.Error(), "pending") {
		t.Errorf("Fetch of a shelf: %v", err)
	}
	if _, err := a.FetchShelf(context.Background(), "2", rundir.New(t.TempDir())); !errors.Is(err, vcs.ErrNoSuchRevision) || !strings.Contains(err.Error(), "p4-change:2") {
		t.Errorf("FetchShelf of a submitted change: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
