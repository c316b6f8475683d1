package p4emu

import (
	"fmt"
	"strings"
)

// FixtureUser is the user who submits the fixture changes.
const FixtureUser = "alice"

// Fixture numbers of the standard depot's changes.
const (
	ChangeAddAll    = 1 // adds one file of every type and every escaped name
	ChangeEdits     = 2 // edit, delete, branch, integrate, move/add+move/delete
	ChangeLifecycle = 3 // purge, archive, import
	ChangeBlankDesc = 4 // a description with blank lines; one edit
	ChangeBig       = 5 // BigFiles files added at once
	BigFiles        = 2000
)

// DepotPaths is the depot_paths setting the fixture is meant to be read
// with: two trees, one excluded subtree; //other/... is out of scope.
var DepotPaths = []string{"//depot/main/...", "//depot/rel/...", "-//depot/main/vendor/..."}

// Fixture returns the standard depot: every action, every file type,
// escaped and non-ASCII names, spaces, a description with blank lines
// and a 2,000-file changelist.
func Fixture() *Depot {
	d := &Depot{
		ClientRev: "2023.1/2468153 (2023/05/02)",
		Users: map[string]User{
			"alice": {Email: "alice@example.com", FullName: "Alice Admin", Update: 1690000000, Access: 1700000000},
			"bob":   {Email: "bob@example.com", FullName: "Bob Builder", Update: 1690000000, Access: 1700000000},
		},
		Counters: map[string]string{},
	}
	app1 := "#include <stdio.h>\n\nint main(void)\n{\n\treturn 0;\n}\n"
	d.Submit(&Change{Num: ChangeAddAll, User: "alice", Client: "alice-ws", Desc: "Initial import\n", Files: []*File{
		{Path: "//depot/main/src/app.c", Action: "add", Type: "text", Content: []byte(app1)},
		{Path: "//depot/main/src/old.c", Action: "add", Type: "text", Content: []byte("int old(void) { return 1; }\n")},
		{Path: "//depot/main/README.md", Action: "add", Type: "text", Content: []byte("# Readme\n")},
		{Path: "//depot/main/src/keyword.c", Action: "add", Type: "text+k", Content: []byte("/* $Id$ */\n/* $Change$ */\nint k;\n")},
		{Path: "//depot/main/vendor/lib.c", Action: "add", Type: "text", Content: []byte("int lib;\n")},
		{Path: "//other/tools/x.c", Action: "add", Type: "text", Content: []byte("int x;\n")},
		{Path: "//depot/main/bin/logo.png", Action: "add", Type: "binary", Content: []byte("\x89PNG\r\n\x1a\n\x00\x00")},
		{Path: "//depot/main/link", Action: "add", Type: "symlink", Content: []byte("src/app.c")},
		{Path: "//depot/main/mac.rsrc", Action: "add", Type: "resource", Content: []byte("\x00\x01rsrc")},
		{Path: "//depot/main/icon.icns", Action: "add", Type: "apple", Content: []byte("\x00\x05\x16\x07")},
		{Path: "//depot/main/i18n/greet_utf8.txt", Action: "add", Type: "utf8", Content: []byte("grüß dich\nsecond\n")},
		{Path: "//depot/main/i18n/greet_utf16.txt", Action: "add", Type: "utf16", Content: []byte("héllo wörld\nzwei\n")},
		{Path: "//depot/main/names/a@b.txt", Action: "add", Type: "text", Content: []byte("at\n")},
		{Path: "//depot/main/names/c#d.txt", Action: "add", Type: "text", Content: []byte("hash\n")},
		{Path: "//depot/main/names/e*f.txt", Action: "add", Type: "text", Content: []byte("star\n")},
		{Path: "//depot/main/names/100%.txt", Action: "add", Type: "text", Content: []byte("percent\n")},
		{Path: "//depot/main/names/with space.txt", Action: "add", Type: "text", Content: []byte("space\n")},
		{Path: "//depot/main/names/ünïcödé.txt", Action: "add", Type: "text", Content: []byte("nöt ascii\n")},
	}})
	app2 := "#include <stdio.h>\n\nint main(void)\n{\n\tconst char *password = \"hunter2hunter2\";\n\tputs(password);\n\treturn 0;\n}\n"
	d.Submit(&Change{Num: ChangeEdits, User: "bob", Client: "bob-ws", Desc: "Edits of every kind\n", Files: []*File{
		{Path: "//depot/main/src/app.c", Action: "edit", Type: "text", Content: []byte(app2)},
		{Path: "//depot/main/README.md", Action: "delete", Type: "text"},
		{Path: "//depot/rel/src/app.c", Action: "branch", Type: "text", From: "//depot/main/src/app.c"},
		{Path: "//depot/main/src/new.c", Action: "move/add", Type: "text", From: "//depot/main/src/old.c", Content: []byte("int old(void) { return 2; }\n")},
		{Path: "//depot/main/src/old.c", Action: "move/delete", Type: "text"},
		{Path: "//depot/main/names/with space.txt", Action: "edit", Type: "text", Content: []byte("space\nmore space\n")},
	}})
	d.Submit(&Change{Num: ChangeLifecycle, User: "alice", Client: "alice-ws", Desc: "Lifecycle\n", Files: []*File{
		{Path: "//depot/rel/src/app.c", Action: "integrate", Type: "text", From: "//depot/main/src/app.c",
			Content: []byte(app2 + "/* rel */\n")},
		{Path: "//depot/main/bin/logo.png", Action: "purge", Type: "binary"},
		{Path: "//depot/main/src/keyword.c", Action: "archive", Type: "text+k"},
		{Path: "//depot/main/imported/lib.h", Action: "import", Type: "text", Content: []byte("#define IMPORTED 1\n")},
	}})
	d.Submit(&Change{Num: ChangeBlankDesc, User: "alice", Client: "alice-ws",
		Desc: "Summary line\n\nParagraph after a blank line.\n\n\tIndented line.\n", Files: []*File{
			{Path: "//depot/main/src/new.c", Action: "edit", Type: "text", Content: []byte("int old(void) { return 3; }\nint extra;\n")},
		}})
	d.Submit(BigChange(ChangeBig, "alice", "//depot/main/big", BigFiles))
	return d
}

// BigChange adds n small text files under dir in one change.
func BigChange(num int, user, dir string, n int) *Change {
	c := &Change{Num: num, User: user, Client: user + "-ws", Desc: fmt.Sprintf("Add %d files\n", n)}
	for i := 0; i < n; i++ {
		c.Files = append(c.Files, &File{
			Path:    fmt.Sprintf("%s/f%04d.c", dir, i),
			Action:  "add",
			Type:    "text",
			Content: []byte(fmt.Sprintf("int f%d(void)\n{\n\treturn %d;\n}\n", i, i)),
		})
	}
	return c
}

// UnicodeFixture is a unicode server holding a "unicode" file.
func UnicodeFixture() *Depot {
	d := Fixture()
	d.Unicode = true
	d.Submit(&Change{User: "alice", Client: "alice-ws", Desc: "Unicode\n", Files: []*File{
		{Path: "//depot/main/i18n/日本語.txt", Action: "add", Type: "unicode", Content: []byte("こんにちは\n世界\n")},
	}})
	return d
}

func splitLinesKeep(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := strings.SplitAfter(string(b), "\n")
	if s[len(s)-1] == "" {
		s = s[:len(s)-1]
	}
	return s
}
