package rundir_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/internal/atomicfile"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

var _ vcs.Dest = rundir.Layout{}

func TestLayout(t *testing.T) {
	l := rundir.New("/data/runs/r1")
	for got, want := range map[string]string{
		l.Dir():        "/data/runs/r1",
		l.ChangePath(): "/data/runs/r1/change.json",
		l.DiffPath():   "/data/runs/r1/diff.patch",
		l.SrcDir():     "/data/runs/r1/src",
		l.AgentDir():   "/data/runs/r1/agent",
		l.HomeDir():    "/data/runs/r1/home",
		l.StatePath():  "/data/runs/r1/agent/.aicr-output-state.json",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	// `aicr mcp serve` run in the agent directory finds the run from the
	// state file alone.
	if got := rundir.FromStatePath(rundir.StateFileName).ChangePath(); got != "../change.json" {
		t.Errorf("FromStatePath(bare name).ChangePath() = %s, want ../change.json", got)
	}
	if got := rundir.FromStatePath(l.StatePath()); got != l {
		t.Errorf("FromStatePath(StatePath()) = %s, want %s", got.Dir(), l.Dir())
	}
}

func TestSrcPath(t *testing.T) {
	l := rundir.New(t.TempDir())
	for _, ok := range []string{"a.c", "dir/sub/b.go", "with space/x [1]*?.txt", "中文 目录/文件@2x.txt", "..hidden", "a..b"} {
		p, err := l.SrcPath(ok)
		if err != nil {
			t.Errorf("SrcPath(%q): %v", ok, err)
			continue
		}
		if want := filepath.Join(l.SrcDir(), filepath.FromSlash(ok)); p != want {
			t.Errorf("SrcPath(%q) = %s, want %s", ok, p, want)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a/.", "a\x00b", ".."} {
		if p, err := l.SrcPath(bad); err == nil {
			t.Errorf("SrcPath(%q) = %s, want an error", bad, p)
		}
	}
}

func TestChangeRoundTrip(t *testing.T) {
	l := rundir.New(t.TempDir())
	if _, err := l.ReadChange(); !errors.Is(err, rundir.ErrNoChange) {
		t.Fatalf("ReadChange before WriteChange = %v, want ErrNoChange", err)
	}
	if err := l.Create(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{l.SrcDir(), l.AgentDir(), l.HomeDir()} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			t.Errorf("Create did not make %s: %v", d, err)
		}
	}
	in := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "7", Author: "ann", Date: time.Unix(1700000000, 0).UTC(),
		Files: []vcs.FileChange{{Path: "a.c", Action: vcs.ActionModify, NodeKind: vcs.NodeFile, Added: []vcs.LineRange{{Start: 2, End: 3}}}}}
	if err := l.WriteChange(in); err != nil {
		t.Fatal(err)
	}
	out, err := l.ReadChange()
	if err != nil {
		t.Fatal(err)
	}
	if out.Revision != "7" || out.Author != "ann" || !out.Date.Equal(in.Date) || len(out.Files) != 1 || !out.Files[0].IsAdded(3) {
		t.Errorf("round trip = %+v, want %+v", out, in)
	}
	if left, _ := filepath.Glob(atomicfile.TempGlob(l.ChangePath())); len(left) != 0 {
		t.Errorf("WriteChange left %v behind", left)
	}
	if err := os.WriteFile(l.ChangePath(), []byte("{torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadChange(); err == nil || !strings.Contains(err.Error(), "decode change") {
		t.Errorf("ReadChange of a torn file = %v, want a decode error", err)
	}
}

func TestRepoIndexRoundTripAndEscapes(t *testing.T) {
	run := rundir.New(t.TempDir())
	for _, bad := range []string{"../x", "/etc/passwd", "a/../../b", ""} {
		if _, err := run.RepoFilePath(bad); err == nil {
			t.Errorf("RepoFilePath(%q) accepted", bad)
		}
	}
	p, err := run.RepoFilePath(".agents/skills/go/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("skill"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := run.WriteRepoIndex(rundir.RepoIndex{Files: []string{".agents/skills/go/SKILL.md"}, Symlinks: []string{"src/AGENTS.md"}}); err != nil {
		t.Fatal(err)
	}
	ix, files, err := run.ReadRepoIndex()
	if err != nil || string(files[".agents/skills/go/SKILL.md"]) != "skill" || len(ix.Symlinks) != 1 {
		t.Errorf("read back: %+v %q %v", ix, files, err)
	}
	if err := run.WriteRepoIndex(rundir.RepoIndex{Files: []string{"../../etc/passwd"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run.ReadRepoIndex(); err == nil {
		t.Errorf("an index naming a path outside repo/ was read")
	}
}

// change.json outlives the run by the retention period: a credential the
// committer pasted into the message is blanked there, and the rest of the
// change (sources, paths) is written as fetched (issue 22 C10).
func TestWriteChangeRedactsTheCommitMessage(t *testing.T) {
	l := rundir.New(t.TempDir())
	if err := l.Create(); err != nil {
		t.Fatal(err)
	}
	const key = "AKIAZ3MHQ4XW7PLR2N5K"
	in := &vcs.Change{VCS: vcs.KindSVN, Revision: "9", Author: "bob",
		Description: "temporary: aws_access_key_id = " + key + "\n", Files: []vcs.FileChange{{Path: "deploy/" + key + ".txt"}}}
	if err := l.WriteChange(in); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(l.ChangePath())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.SplitN(string(b), `"files"`, 2)[0], key) {
		t.Errorf("change.json keeps the key in the description:\n%s", b)
	}
	if !strings.Contains(in.Description, key) {
		t.Error("WriteChange changed the caller's Change")
	}
	got, err := l.ReadChange()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Description, "<redacted>") || got.Files[0].Path != "deploy/"+key+".txt" {
		t.Errorf("read back: %+v", got)
	}
}

func TestForRunAndRunID(t *testing.T) {
	l := rundir.ForRun("/var/lib/aicr", 42)
	if l.Dir() != "/var/lib/aicr/runs/42" {
		t.Fatalf("ForRun = %s", l.Dir())
	}
	if id, ok := l.RunID(); !ok || id != 42 {
		t.Fatalf("RunID = %d, %v", id, ok)
	}
	for _, name := range []string{"workspace", "0", "-3", "007", "12x", ""} {
		if id, ok := rundir.ParseRunID(name); ok {
			t.Errorf("ParseRunID(%q) = %d, want not ok", name, id)
		}
	}
	out, errp := l.SandboxOutputPaths(2)
	if out != "/var/lib/aicr/runs/42/pass-2.stdout" || errp != "/var/lib/aicr/runs/42/pass-2.stderr" {
		t.Errorf("SandboxOutputPaths = %s %s", out, errp)
	}
	ev, se := l.CLIEventsPaths("codex", 1)
	if ev != "/var/lib/aicr/runs/42/agent/codex-pass-1.jsonl" || se != "/var/lib/aicr/runs/42/agent/codex-pass-1.stderr" {
		t.Errorf("CLIEventsPaths = %s %s", ev, se)
	}
	if p := l.PassPromptPath(3); p != "/var/lib/aicr/runs/42/agent/prompt-pass-3.md" {
		t.Errorf("PassPromptPath = %s", p)
	}
}
