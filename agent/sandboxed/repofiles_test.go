package sandboxed_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/sandboxed"
	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/vcs/p4"
	"github.com/aicr-dev/aicr/vcs/svn"
)

// The repository's instructions and skills at the reviewed revision reach
// the runtime bundle: read through the real adapter (svn client, svnlook,
// the p4 emulator), kept in the run dir, materialised by the host side.
// Marker strings name each file so the assertions show where text came
// from.
const (
	instrMarker    = "INSTR-RULE: flag every TODO"
	rootMarker     = "ROOT-AGENTS: errors are wrapped"
	srcMarker      = "SRC-AGENTS: no panics in lib"
	docsMarker     = "DOCS-AGENTS: irrelevant to the change"
	skillMarker    = "GO-REVIEW-SKILL: check the error paths"
	newSkillMarker = "ADDED-LATER-SKILL: not at the reviewed revision"
)

type repoFile struct {
	path, content string
	symlink       bool
}

// repoLayout is the same tree for every VCS, relative to the reviewed
// root; the change under review touches src/lib/x.go.
var repoLayout = []repoFile{
	{path: ".aicr/instructions.md", content: instrMarker + "\n"},
	{path: "AGENTS.md", content: rootMarker + "\n"},
	{path: "src/AGENTS.md", content: srcMarker + "\n"},
	{path: "docs/AGENTS.md", content: docsMarker + "\n"},
	{path: ".agents/skills/go-review/SKILL.md", content: "---\nname: go-review\n---\n" + skillMarker + "\n"},
	// A link to the root's AGENTS.md: it must be refused, not followed.
	{path: "src/lib/AGENTS.md", content: "../../AGENTS.md", symlink: true},
	{path: "src/lib/x.go", content: "package lib\n"},
}

func TestRepoInstructionsAndSkillsReachTheBundle(t *testing.T) {
	for _, access := range []string{svn.AccessSVN, svn.AccessSvnlook} {
		t.Run("svn-"+access, func(t *testing.T) {
			if _, err := exec.LookPath("svnadmin"); err != nil {
				t.Skip("svnadmin not installed (apt-get install subversion)")
			}
			repo, rev := svnRepo(t)
			cfg := svn.Config{URL: (&url.URL{Scheme: "file", Path: filepath.ToSlash(repo)}).String(), Access: access}
			if access == svn.AccessSvnlook {
				cfg.LocalPath = repo
			}
			cfg.SetStateDir(filepath.Join(t.TempDir(), "state"))
			a, err := svn.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkRepoBundle(t, a, rev, "")
		})
	}
	t.Run("p4", func(t *testing.T) {
		a, rev := p4Repo(t)
		checkRepoBundle(t, a, rev, "depot/main/")
	})
}

type reviewedAdapter interface {
	vcs.Adapter
	agent.Replayer
}

func checkRepoBundle(t *testing.T, a reviewedAdapter, rev, root string) {
	ctx := context.Background()
	run := rundir.New(filepath.Join(t.TempDir(), "runs", "9"))
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	c, err := a.Fetch(ctx, rev, run)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.WriteChange(c); err != nil {
		t.Fatal(err)
	}
	r := &recordingRunner{}
	sb, err := sandboxed.New(sandboxed.Options{Config: agent.Config{Kind: agent.KindBuiltin}, Runner: r, Binary: "/bin/aicr"})
	if err != nil {
		t.Fatal(err)
	}
	// The stand-in container records nothing: the ladder ends without a
	// result, after the bundle was built for its first pass.
	out, _ := (&agent.Ladder{Agent: sb}).Run(ctx, run, agent.Target{Revision: rev, Replayer: a})
	if !out.RepoRules {
		t.Errorf("the ladder found no repository instructions")
	}

	agents := readFile(t, filepath.Join(run.AgentDir(), bundle.AgentsName))
	for _, want := range []string{instrMarker, rootMarker, srcMarker} {
		if !strings.Contains(agents, want) {
			t.Errorf("bundle AGENTS.md lacks %q:\n%s", want, agents)
		}
	}
	if strings.Contains(agents, docsMarker) {
		t.Errorf("bundle AGENTS.md has the AGENTS.md of a directory the change does not touch")
	}
	if i, j := strings.Index(agents, rootMarker), strings.Index(agents, srcMarker); i > j {
		t.Errorf("the most specific AGENTS.md is not last")
	}
	if got := readFile(t, filepath.Join(run.AgentDir(), bundle.SkillsDir, "go-review", "SKILL.md")); !strings.Contains(got, skillMarker) {
		t.Errorf("repo skill in the bundle: %q", got)
	}
	if _, err := os.Stat(filepath.Join(run.AgentDir(), bundle.SkillsDir, "added-later")); err == nil {
		t.Errorf("a skill added after the reviewed revision is in the bundle")
	}
	var m bundle.Manifest
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(run.AgentDir(), bundle.ManifestName))), &m); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range m.Skills {
		found = found || (s.Layer == bundle.LayerRepo && s.Name == "go-review" && s.Source == ".agents/skills/go-review/SKILL.md")
	}
	if !found {
		t.Errorf("manifest skills: %+v", m.Skills)
	}
	// Perforce prints a symlink's target as its content and Cat refuses
	// it as not text, so the link is never read; Subversion's is recorded.
	if root == "" {
		refused := false
		for _, d := range m.Dropped {
			refused = refused || (d.Source == "src/lib/AGENTS.md" && strings.Contains(d.Reason, "symlink"))
		}
		if !refused {
			t.Errorf("the symlinked AGENTS.md is not recorded as refused: %+v", m.Dropped)
		}
	}
	// aicr's own model agent reads the same instructions as its repo layer.
	rules := readFile(t, run.RepoRulesPath())
	for _, want := range []string{instrMarker, rootMarker, srcMarker} {
		if !strings.Contains(rules, want) {
			t.Errorf("repo-rules.md lacks %q:\n%s", want, rules)
		}
	}
	if strings.Contains(rules, docsMarker) || strings.Count(rules, rootMarker) != 1 {
		t.Errorf("repo-rules.md:\n%s", rules)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// svnRepo commits repoLayout as r1, the change src/lib/x.go as r2 and a
// new skill as r3, with the real svn client; the review is of r2.
func svnRepo(t *testing.T) (string, string) {
	dir := t.TempDir()
	repo, wc := filepath.Join(dir, "repo"), filepath.Join(dir, "wc")
	run := func(d string, args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = d
		cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	run("", "svnadmin", "create", repo)
	run("", "svn", "checkout", "-q", "--config-dir", filepath.Join(dir, "cfg"), "file://"+repo, wc)
	write := func(f repoFile) {
		p := filepath.Join(wc, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if f.symlink {
			if err := os.Symlink(f.content, p); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(p, []byte(f.content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range repoLayout[:len(repoLayout)-1] {
		write(f)
	}
	svnCmd := func(args ...string) {
		run(wc, append([]string{"svn", "--config-dir", filepath.Join(dir, "cfg")}, args...)...)
	}
	svnCmd("add", "-q", "--force", ".")
	svnCmd("commit", "-q", "-m", "instructions")
	write(repoLayout[len(repoLayout)-1])
	svnCmd("add", "-q", "--parents", "src/lib/x.go")
	svnCmd("commit", "-q", "-m", "the change")
	write(repoFile{path: ".agents/skills/added-later/SKILL.md", content: newSkillMarker + "\n"})
	svnCmd("add", "-q", "--force", ".")
	svnCmd("commit", "-q", "-m", "later")
	return repo, "2"
}

var p4EmuBin string

// p4Repo is the same tree under //depot/main in the p4 emulator, which a
// wrapper script points at its depot file.
func p4Repo(t *testing.T) (*p4.Adapter, string) {
	dir := t.TempDir()
	if p4EmuBin == "" {
		p4EmuBin = filepath.Join(t.TempDir(), "p4")
		build := exec.Command("go", "build", "-o", p4EmuBin, "github.com/aicr-dev/aicr/internal/p4emu/p4")
		if out, err := build.CombinedOutput(); err != nil {
			p4EmuBin = ""
			t.Fatalf("build the p4 emulator: %v\n%s", err, out)
		}
	}
	d := &p4emu.Depot{}
	var files []*p4emu.File
	for _, f := range repoLayout[:len(repoLayout)-1] {
		typ := "text"
		if f.symlink {
			typ = "symlink"
		}
		files = append(files, &p4emu.File{Path: "//depot/main/" + f.path, Action: "add", Type: typ, Content: []byte(f.content)})
	}
	d.Submit(&p4emu.Change{User: "ann", Client: "ann-ws", Desc: "instructions\n", Files: files})
	last := repoLayout[len(repoLayout)-1]
	c := d.Submit(&p4emu.Change{User: "ann", Client: "ann-ws", Desc: "the change\n", Files: []*p4emu.File{
		{Path: "//depot/main/" + last.path, Action: "add", Type: "text", Content: []byte(last.content)}}})
	d.Submit(&p4emu.Change{User: "ann", Client: "ann-ws", Desc: "later\n", Files: []*p4emu.File{
		{Path: "//depot/main/.agents/skills/added-later/SKILL.md", Action: "add", Type: "text", Content: []byte(newSkillMarker + "\n")}}})
	depot := filepath.Join(dir, "depot.json")
	if err := d.Save(depot); err != nil {
		t.Fatal(err)
	}
	wrapper, err := p4emu.WriteWrapper(filepath.Join(dir, "bin"), p4EmuBin, depot, "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := p4.New(p4.Config{Port: "localhost:1666", User: "aicr", P4Path: wrapper, DepotPaths: []string{"//depot/main/..."}})
	if err != nil {
		t.Fatal(err)
	}
	return a, strconv.Itoa(c.Num)
}
