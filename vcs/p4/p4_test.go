package p4_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
	. "github.com/aicr-dev/aicr/vcs/p4"
)

func fetch(t *testing.T, a *Adapter, rev string) (*vcs.Change, string) {
	t.Helper()
	dir := t.TempDir()
	run := rundir.New(dir)
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	c, err := a.Fetch(context.Background(), rev, run)
	if err != nil {
		t.Fatalf("fetch %s: %v", rev, err)
	}
	return c, dir
}

func files(c *vcs.Change) map[string]vcs.FileChange {
	m := map[string]vcs.FileChange{}
	for _, f := range c.Files {
		m[f.Path] = f
	}
	return m
}

func src(t *testing.T, dir, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "src", filepath.FromSlash(path)))
	if err != nil {
		t.Fatalf("src %s: %v", path, err)
	}
	return string(b)
}

// Every file type and every escaped name of the add-everything change.
func TestFetchTypesAndNames(t *testing.T) {
	e := newEmu(t, p4emu.Fixture())
	c, dir := fetch(t, e.adapter(t), "1")
	if c.Author != "alice" || c.Description != "Initial import\n" || c.VCS != vcs.KindP4 {
		t.Errorf("meta: %+v", c)
	}
	fs := files(c)
	skips := map[string]string{
		"depot/main/bin/logo.png":   vcs.SkipBinary,
		"depot/main/link":           SkipSymlink,
		"depot/main/mac.rsrc":       vcs.SkipBinary,
		"depot/main/icon.icns":      vcs.SkipBinary,
		"depot/main/vendor/lib.c":   SkipOutOfScope,
		"other/tools/x.c":           SkipOutOfScope,
		"depot/main/src/app.c":      "",
		"depot/main/names/a@b.txt":  "",
		"depot/main/names/c#d.txt":  "",
		"depot/main/names/e*f.txt":  "",
		"depot/main/names/100%.txt": "",
	}
	for p, want := range skips {
		f, ok := fs[p]
		if !ok {
			t.Errorf("%s not listed", p)
			continue
		}
		if f.Skipped != want {
			t.Errorf("%s: skipped %q, want %q", p, f.Skipped, want)
		}
	}
	for p, want := range map[string]string{
		"depot/main/names/a@b.txt":        "at\n",
		"depot/main/names/c#d.txt":        "hash\n",
		"depot/main/names/e*f.txt":        "star\n",
		"depot/main/names/100%.txt":       "percent\n",
		"depot/main/names/with space.txt": "space\n",
		"depot/main/names/ünïcödé.txt":    "nöt ascii\n",
		"depot/main/i18n/greet_utf8.txt":  "grüß dich\nsecond\n",
		"depot/main/i18n/greet_utf16.txt": "héllo wörld\nzwei\n",
		"depot/main/src/keyword.c":        "/* $Id: //depot/main/src/keyword.c#1 $ */\n/* $Change: 1 $ */\nint k;\n",
	} {
		if got := src(t, dir, p); got != want {
			t.Errorf("%s: content %q, want %q", p, got, want)
		}
		if f := fs[p]; f.Action != vcs.ActionAdd || len(f.Added) != 1 || f.Added[0].Start != 1 {
			t.Errorf("%s: action %s added %v", p, f.Action, f.Added)
		}
	}
	if f := fs["depot/main/i18n/greet_utf16.txt"]; f.Added[0].End != 2 {
		t.Errorf("utf16 added lines %v, want 1-2", f.Added)
	}
	patch, _ := os.ReadFile(filepath.Join(dir, "diff.patch"))
	if !strings.Contains(string(patch), "+++ depot/main/names/with space.txt\t") {
		t.Errorf("diff.patch lacks the spaced name:\n%.500s", patch)
	}
}

func TestFetchActions(t *testing.T) {
	e := newEmu(t, p4emu.Fixture())
	a := e.adapter(t)
	c, dir := fetch(t, a, "2")
	fs := files(c)
	app := fs["depot/main/src/app.c"]
	if app.Action != vcs.ActionModify || !app.IsAdded(5) || !app.IsAdded(6) || app.IsAdded(4) || !app.IsCommentable(4) {
		t.Errorf("edit: %+v", app)
	}
	if !strings.Contains(src(t, dir, "depot/main/src/app.c"), "hunter2hunter2") {
		t.Error("edit content missing")
	}
	for p, want := range map[string]struct {
		action vcs.Action
		skip   string
	}{
		"depot/main/README.md":            {vcs.ActionDelete, vcs.SkipDeleted},
		"depot/rel/src/app.c":             {vcs.ActionAdd, ""},
		"depot/main/src/new.c":            {vcs.ActionAdd, ""},
		"depot/main/src/old.c":            {vcs.ActionDelete, vcs.SkipDeleted},
		"depot/main/names/with space.txt": {vcs.ActionModify, ""},
	} {
		f := fs[p]
		if f.Action != want.action || f.Skipped != want.skip {
			t.Errorf("%s: %s/%q, want %s/%q", p, f.Action, f.Skipped, want.action, want.skip)
		}
	}
	if f := fs["depot/rel/src/app.c"]; len(f.Added) != 1 || f.Added[0] != (vcs.LineRange{Start: 1, End: 8}) {
		t.Errorf("branch: all lines added, got %v", f.Added)
	}
	// The moved file names its source, so its findings follow it; the
	// source half of the move is a plain delete.
	if f := fs["depot/main/src/new.c"]; f.CopyFromPath != "depot/main/src/old.c" {
		t.Errorf("move/add: copied from %q, want depot/main/src/old.c", f.CopyFromPath)
	}
	if f := fs["depot/main/src/old.c"]; f.CopyFromPath != "" {
		t.Errorf("move/delete: copied from %q", f.CopyFromPath)
	}
	if n := countCalls(e, "filelog"); n != 1 {
		t.Errorf("%d filelog processes for one change with a move, want 1:\n%s", n, strings.Join(e.calls(), "\n"))
	}
	if f := fs["depot/main/names/with space.txt"]; !f.IsAdded(2) || f.IsAdded(1) {
		t.Errorf("spaced edit: %v", f.Added)
	}

	e.reset()
	c, _ = fetch(t, a, "3")
	fs = files(c)
	if n := countCalls(e, "filelog"); n != 0 {
		t.Errorf("%d filelog processes for a change without a move", n)
	}
	if f := fs["depot/rel/src/app.c"]; f.Action != vcs.ActionModify || !f.IsAdded(9) || f.IsAdded(1) {
		t.Errorf("integrate: %+v", f)
	}
	if f := fs["depot/main/bin/logo.png"]; f.Skipped != SkipPurged {
		t.Errorf("purge: %+v", f)
	}
	if f := fs["depot/main/src/keyword.c"]; f.Skipped != SkipArchived {
		t.Errorf("archive: %+v", f)
	}
	if f := fs["depot/main/imported/lib.h"]; f.Action != vcs.ActionAdd || f.Skipped != "" || !f.IsAdded(1) {
		t.Errorf("import: %+v", f)
	}

	c, _ = fetch(t, a, "4")
	if c.Description != "Summary line\n\nParagraph after a blank line.\n\n\tIndented line.\n" {
		t.Errorf("description %q", c.Description)
	}
}

// A 2,000-file changelist takes the same number of p4 processes as a
// one-file one: describe -s, print (and info for the charset).
func TestFetchBigChangeConstantProcesses(t *testing.T) {
	e := newEmu(t, p4emu.Fixture())
	a := e.adapter(t)
	c, dir := fetch(t, a, "5")
	if len(c.Files) != p4emu.BigFiles {
		t.Fatalf("%d files", len(c.Files))
	}
	if got := src(t, dir, "depot/main/big/f1999.c"); got != "int f1999(void)\n{\n\treturn 1999;\n}\n" {
		t.Errorf("content %q", got)
	}
	calls := e.calls()
	if len(calls) != 3 {
		t.Errorf("%d p4 processes, want 3 (info, describe, print):\n%s", len(calls), strings.Join(calls, "\n"))
	}
	for _, c := range calls {
		if len(c) > 300 {
			t.Errorf("argv grows with the file count: %.100s...", c)
		}
	}
}

func TestFetchBatchesWhenConfigured(t *testing.T) {
	e := newEmu(t, p4emu.Fixture())
	e.cfg.BatchSize = 500
	e.cfg.Charset = "none"
	c, _ := fetch(t, e.adapter(t), "5")
	if len(c.Files) != 2000 || c.Files[1999].Skipped != "" {
		t.Fatalf("files %d", len(c.Files))
	}
	if n := len(e.calls()); n != 1+4 {
		t.Errorf("%d processes, want describe + 4 prints", n)
	}
}

func TestFetchLimits(t *testing.T) {
	e := newEmu(t, p4emu.Fixture())
	e.cfg.MaxFiles = 10
	e.cfg.MaxFileBytes = 5
	e.cfg.Include = []string{"depot/main/**"}
	e.cfg.Exclude = []string{"**/*.md"}
	c, _ := fetch(t, e.adapter(t), "1")
	fs := files(c)
	if f := fs["depot/main/src/app.c"]; f.Skipped != vcs.SkipTooLarge {
		t.Errorf("too large: %+v", f)
	}
	if f := fs["depot/main/README.md"]; f.Skipped != vcs.SkipExcluded {
		t.Errorf("excluded: %+v", f)
	}
	c, _ = fetch(t, e.adapter(t), "5")
	if c.Files[9].Skipped != vcs.SkipTooLarge && c.Files[9].Skipped != "" {
		t.Errorf("file 10: %q", c.Files[9].Skipped)
	}
	if c.Files[1999].Skipped != vcs.SkipFileCap && c.Files[1999].Skipped != vcs.SkipTooLarge {
		t.Errorf("file 2000: %q", c.Files[1999].Skipped)
	}
}

func TestFetchErrors(t *testing.T) {
	e := newEmu(t, p4emu.Fixture())
	a := e.adapter(t)
	if _, err := a.Fetch(context.Background(), "999", rundir.New(t.TempDir())); !errors.Is(err, vcs.ErrNoSuchRevision) {
		t.Errorf("unknown change: %v", err)
	}
	if _, err := a.Fetch(context.Background(), "-1", rundir.New(t.TempDir())); !errors.Is(err, vcs.ErrBadRevision) {
		t.Errorf("bad change: %v", err)
	}
}

func TestExpiredTicketSaysRunLogin(t *testing.T) {
	d := p4emu.Fixture()
	d.Ticket = "ABCDEF0123456789"
	d.TicketExpired = true
	e := newEmu(t, d)
	t.Setenv("AICR_TEST_P4PASSWD", "not-the-ticket-xyz")
	e.cfg.PasswordEnv = "AICR_TEST_P4PASSWD"
	_, err := e.adapter(t).Fetch(context.Background(), "1", rundir.New(t.TempDir()))
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("want ErrAuth, got %v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "Your session has expired, please login again.") || !strings.Contains(msg, "login` as the service user") {
		t.Errorf("message: %s", msg)
	}
	if strings.Contains(msg, "not-the-ticket-xyz") {
		t.Error("secret in error")
	}
	for _, c := range e.calls() {
		if strings.Contains(c, "not-the-ticket-xyz") {
			t.Errorf("secret on argv: %s", c)
		}
	}
}

func TestPasswordReachesP4OnlyThroughEnv(t *testing.T) {
	d := p4emu.Fixture()
	d.Password = "pw-only-in-env"
	e := newEmu(t, d)
	if _, err := e.adapter(t).Fetch(context.Background(), "4", rundir.New(t.TempDir())); !errors.Is(err, ErrAuth) ||
		!strings.Contains(err.Error(), "Perforce password (P4PASSWD) invalid or unset.") {
		t.Fatalf("no password: %v", err)
	}
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte("pw-only-in-env\n"), 0o600)
	e.cfg.PasswordFile = pwFile
	if _, err := e.adapter(t).Fetch(context.Background(), "4", rundir.New(t.TempDir())); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.calls() {
		if strings.Contains(c, "pw-only-in-env") {
			t.Errorf("password on argv: %s", c)
		}
	}
}

func TestTicketFile(t *testing.T) {
	d := p4emu.Fixture()
	d.Ticket = "TICKET0123"
	e := newEmu(t, d)
	tf := filepath.Join(t.TempDir(), "tickets")
	os.WriteFile(tf, []byte("localhost:1666=aicr:TICKET0123\n"), 0o600)
	e.cfg.TicketFile = tf
	if _, err := e.adapter(t).Fetch(context.Background(), "4", rundir.New(t.TempDir())); err != nil {
		t.Fatal(err)
	}
}

func TestUnicodeServerUsesCUTF8(t *testing.T) {
	d := p4emu.UnicodeFixture()
	e := newEmu(t, d)
	a := e.adapter(t)
	c, dir := fetch(t, a, "6")
	if got := src(t, dir, "depot/main/i18n/日本語.txt"); got != "こんにちは\n世界\n" {
		t.Errorf("content %q", got)
	}
	if f := files(c)["depot/main/i18n/日本語.txt"]; len(f.Added) != 1 || f.Added[0].End != 2 {
		t.Errorf("added %v", f.Added)
	}
	fetch(t, a, "1")
	calls := e.calls()
	infos := 0
	for _, c := range calls {
		if strings.Contains(c, " info") {
			infos++
			continue
		}
		if !strings.Contains(c, "-C utf8") {
			t.Errorf("no -C utf8: %s", c)
		}
	}
	if infos != 1 {
		t.Errorf("info asked %d times, want once (cached)", infos)
	}
	// Forcing charset none on a unicode server fails with p4's own words.
	e.cfg.Charset = "none"
	_, err := e.adapter(t).Fetch(context.Background(), "1", rundir.New(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "Unicode server permits only unicode enabled clients.") {
		t.Errorf("charset none: %v", err)
	}
}

func TestCatScopeAndInjection(t *testing.T) {
	e := newEmu(t, p4emu.Fixture())
	a := e.adapter(t)
	ctx := context.Background()
	var b bytes.Buffer
	if err := a.Cat(ctx, "depot/main/src/app.c", "1", &b); err != nil || !strings.HasPrefix(b.String(), "#include") || strings.Contains(b.String(), "password") {
		t.Errorf("cat @1: %v %q", err, b.String())
	}
	b.Reset()
	if err := a.Cat(ctx, "depot/main/names/a@b.txt", "3", &b); err != nil || b.String() != "at\n" {
		t.Errorf("cat escaped: %v %q", err, b.String())
	}
	for _, p := range []string{"depot/main/...", "depot/main/../../other/tools/x.c", "other/tools/x.c",
		"depot/main/vendor/lib.c", "/etc/passwd", "depot/main/src/app.c\n"} {
		if err := a.Cat(ctx, p, "1", &b); !errors.Is(err, vcs.ErrPathOutOfScope) {
			t.Errorf("cat %q: %v, want out of scope", p, err)
		}
	}
	// '@' and '#' are escaped, so they cannot pick another revision.
	if err := a.Cat(ctx, "depot/main/src/app.c@2", "1", &b); !errors.Is(err, vcs.ErrNoSuchPath) {
		t.Errorf("@ injection: %v", err)
	}
	if err := a.Cat(ctx, "depot/main/src/app.c#2", "1", &b); !errors.Is(err, vcs.ErrNoSuchPath) {
		t.Errorf("# injection: %v", err)
	}
	if err := a.Cat(ctx, "depot/main/README.md", "2", &b); !errors.Is(err, vcs.ErrNoSuchPath) {
		t.Errorf("deleted: %v", err)
	}
}

func TestBlame(t *testing.T) {
	e := newEmu(t, p4emu.Fixture())
	a := e.adapter(t)
	e.reset()
	res, err := a.Blame(context.Background(), "depot/main/src/app.c", "2", 1, 20)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != vcs.BlamePartial || len(res.Lines) != 8 {
		t.Fatalf("status %s, %d lines", res.Status, len(res.Lines))
	}
	if l := res.Lines[0]; l.Revision != "1" || l.Author != "alice" || l.Date.IsZero() {
		t.Errorf("line 1: %+v", l)
	}
	if l := res.Lines[4]; l.Revision != "2" || l.Author != "bob" {
		t.Errorf("line 5: %+v", l)
	}
	if n := len(e.calls()); n != 3 {
		t.Errorf("%d processes, want info + annotate + one describe", n)
	}
	res, err = a.Blame(context.Background(), "depot/main/nope.c", "2", 1, 2)
	if err != nil || res.Status != vcs.BlameNotFound {
		t.Errorf("missing: %v %s", err, res.Status)
	}
	if _, err := a.Blame(context.Background(), "other/tools/x.c", "2", 1, 2); !errors.Is(err, vcs.ErrPathOutOfScope) {
		t.Errorf("outside: %v", err)
	}
}

func TestListerAndCounters(t *testing.T) {
	e := newEmu(t, p4emu.Fixture())
	a := e.adapter(t)
	ctx := context.Background()
	head, err := a.Head(ctx)
	if err != nil || head != "5" {
		t.Errorf("head %q %v", head, err)
	}
	got, err := a.ChangesAfter(ctx, "1", 2)
	if err != nil || strings.Join(got, ",") != "2,3" {
		t.Errorf("after 1: %v %v", got, err)
	}
	if n, err := a.MaxCommitChange(ctx); err != nil || n != 5 {
		t.Errorf("maxCommitChange %d %v", n, err)
	}
	if err := a.SetReviewCounter(ctx, "aicr-review", 4); err != nil {
		t.Fatal(err)
	}
	if n, err := a.ReviewCounter(ctx, "aicr-review"); err != nil || n != 4 {
		t.Errorf("counter %d %v", n, err)
	}
	if err := a.SetReviewCounter(ctx, "-d", 4); err == nil {
		t.Error("flag as counter name accepted")
	}
}

func TestUserEmailCached(t *testing.T) {
	e := newEmu(t, p4emu.Fixture())
	a := e.adapter(t)
	for i := 0; i < 3; i++ {
		if m, err := a.UserEmail(context.Background(), "bob"); err != nil || m != "bob@example.com" {
			t.Fatalf("email %q %v", m, err)
		}
	}
	if n := len(e.calls()); n != 2 {
		t.Errorf("%d processes, want info + one user -o", n)
	}
	if _, err := a.UserEmail(context.Background(), "nobody"); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("unknown: %v", err)
	}
}

func TestVersionGate(t *testing.T) {
	v, build, err := ParseVersion("Perforce - The Fast Software Configuration Management System.\nRev. P4/LINUX26X86_64/2023.1/2468153 (2023/05/02).\n")
	if err != nil || v.String() != "2023.1.0" || build != "2468153" {
		t.Errorf("%v %s %v", v, build, err)
	}
	// From the fixtures' README: a 2013.1 client.
	if v, _, _ := ParseVersion("Rev. P4/LINUX26X86_64/2013.1/610569 (2013/03/19)."); v == nil || v.Major() != 2013 {
		t.Errorf("2013.1: %v", v)
	}
	d := p4emu.Fixture()
	e := newEmu(t, d)
	if rel, err := e.adapter(t).CheckVersion(context.Background()); err != nil || rel != "2023.1/2468153" {
		t.Errorf("current: %s %v", rel, err)
	}
	d.ClientRev = "2013.1/610569 (2013/03/19)"
	e = newEmu(t, d)
	if _, err := e.adapter(t).CheckVersion(context.Background()); !errors.Is(err, ErrOldClient) || !strings.Contains(err.Error(), "2017.1") {
		t.Errorf("old: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	err := Config{DepotPaths: []string{"depot/x", "-//a/...", "//b/...@5"}, Charset: "latin1", PasswordEnv: "A", PasswordFile: "b"}.Validate()
	for _, want := range []string{"port is required", "user is required", "set one, not both", `charset "latin1"`,
		`depot_paths "depot/x": must start with "//"`, `"//b/...@5": must not contain a revision`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if err := (Config{Port: "1666", User: "u", DepotPaths: []string{"//depot/..."}}).Validate(); err != nil {
		t.Error(err)
	}
}

// Moves are looked up in batches of batch_size, whatever their number.
func TestFetchMovesBatched(t *testing.T) {
	d := p4emu.Fixture()
	c := &p4emu.Change{User: "ann", Client: "ann-ws", Desc: "move three\n"}
	for _, n := range []string{"x", "y", "z"} {
		from := "//depot/main/mv/" + n + ".c"
		d.Submit(&p4emu.Change{User: "ann", Client: "ann-ws", Desc: "add\n", Files: []*p4emu.File{
			{Path: from, Action: "add", Type: "text", Content: []byte(n + "\n")}}})
		c.Files = append(c.Files,
			&p4emu.File{Path: "//depot/main/moved/" + n + ".c", Action: "move/add", Type: "text", From: from, Content: []byte(n + "\n" + n + "\n")},
			&p4emu.File{Path: from, Action: "move/delete", Type: "text"})
	}
	d.Submit(c)
	e := newEmu(t, d)
	e.cfg.BatchSize = 2
	got, _ := fetch(t, e.adapter(t), strconv.Itoa(c.Num))
	fs := files(got)
	for _, n := range []string{"x", "y", "z"} {
		if f := fs["depot/main/moved/"+n+".c"]; f.CopyFromPath != "depot/main/mv/"+n+".c" || f.Action != vcs.ActionAdd || f.Skipped != "" {
			t.Errorf("moved %s.c = %+v", n, f)
		}
	}
	if n := countCalls(e, "filelog"); n != 2 {
		t.Errorf("%d filelog processes for 3 moves in batches of 2, want 2", n)
	}
}
