package session

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/daemon"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// env is a real svn repository with one commit, a working copy of it
// with local changes, a config naming it, and an audit store.
type env struct {
	cfg   *config.Config
	store *audit.Store
	wc    string
	out   string // the file channel's output
}

func sh(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

func put(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	for _, tool := range []string{"svn", "svnadmin"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	t.Setenv("AICR_SESSION_TEST_SECRET", "session-test-secret")
	dir := t.TempDir()
	repo, seed, wc, svnConf := filepath.Join(dir, "repo"), filepath.Join(dir, "seed"), filepath.Join(dir, "wc"), filepath.Join(dir, "svnconf")
	svn := func(d string, args ...string) {
		t.Helper()
		sh(t, d, "svn", append([]string{"--non-interactive", "--config-dir", svnConf}, args...)...)
	}
	sh(t, dir, "svnadmin", "create", repo)
	u := (&url.URL{Scheme: "file", Path: repo}).String()
	put(t, seed, "calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	put(t, seed, "vendor/dep.go", "package dep\n")
	svn(dir, "import", "-q", "-m", "initial import", seed, u)
	svn(dir, "checkout", "-q", u, wc)
	put(t, wc, "calc.go", "package calc\n\nfunc Add(a, b int) int { return a - b }\n")
	put(t, wc, "loose.go", "package calc\n\nvar token = \"x\"\n")
	put(t, wc, "vendor/dep.go", "package dep\n\nvar changed = 1\n")

	out := filepath.Join(dir, "reviews.jsonl")
	toml := `[daemon]
data_dir = "` + filepath.Join(dir, "data") + `"
secret_env = "AICR_SESSION_TEST_SECRET"

[agent]
kind = "builtin"

[[repo]]
name = "main"
kind = "svn"
url = "` + u + `"
config_dir = "` + svnConf + `"
exclude = ["vendor/**"]
channels = ["archive"]

[[channel]]
name = "archive"
kind = "file"
path = "` + out + `"
`
	cfg, err := config.Parse("aicr.toml", filepath.Join(dir, "aicr.toml"), []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	store, err := audit.Open(context.Background(), filepath.Join(dir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &env{cfg: cfg, store: store, wc: wc, out: out}
}

func (e *env) adapters(t *testing.T) map[string]vcs.Adapter {
	t.Helper()
	parts, err := daemon.Build(e.cfg, daemon.Deps{Store: e.store}, daemon.BuildOptions{NoChannels: true})
	if err != nil {
		t.Fatal(err)
	}
	return parts.Adapters
}

func layoutIn(t *testing.T) rundir.Layout {
	t.Helper()
	l := rundir.New(filepath.Join(t.TempDir(), "round"))
	if err := l.Create(); err != nil {
		t.Fatal(err)
	}
	return l
}

func filesByPath(c *vcs.Change) map[string]vcs.FileChange {
	m := map[string]vcs.FileChange{}
	for _, f := range c.Files {
		m[f.Path] = f
	}
	return m
}

// svn-wc: read through the repo's adapter, so its exclude applies, an
// unversioned file is reviewed as added, and the repo is found from the
// working copy's url when the session names none.
func TestWorkingCopyTarget(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if got := workingCopyRepo(ctx, e.cfg, e.wc); got != "main" {
		t.Errorf("workingCopyRepo = %q, want main", got)
	}
	tgt, err := ParseTarget("svn-wc:" + e.wc)
	if err != nil {
		t.Fatal(err)
	}
	layout := layoutIn(t)
	f, err := tgt.fetch(ctx, e.adapters(t), "main", layout)
	if err != nil {
		t.Fatal(err)
	}
	files := filesByPath(f.change)
	if c := files["calc.go"]; c.Action != vcs.ActionModify || c.Skipped != "" || !c.IsAdded(3) {
		t.Errorf("calc.go: %+v", c)
	}
	if l := files["loose.go"]; l.Action != vcs.ActionAdd || l.Skipped != "" {
		t.Errorf("loose.go (unversioned): %+v", l)
	}
	if d := files["vendor/dep.go"]; d.Skipped != vcs.SkipExcluded {
		t.Errorf("vendor/dep.go: skipped %q, want the repo's exclude", d.Skipped)
	}
	if f.revision != "1+local" || f.replayer == nil {
		t.Errorf("revision %q replayer %v", f.revision, f.replayer)
	}
	var b strings.Builder
	if err := f.replayer.Cat(ctx, "calc.go", f.revision, &b); err != nil || !strings.Contains(b.String(), "a - b") {
		t.Errorf("context request of calc.go: %q, %v", b.String(), err)
	}
	if err := f.replayer.Cat(ctx, "vendor/dep.go", f.revision, &b); err == nil {
		t.Error("context request of an excluded file answered")
	}

	// No repo: svn from PATH and the default scope.
	f, err = tgt.fetch(ctx, nil, "", layoutIn(t))
	if err != nil {
		t.Fatal(err)
	}
	if d := filesByPath(f.change)["vendor/dep.go"]; d.Skipped != "" {
		t.Errorf("without a repo vendor/dep.go: skipped %q, want reviewed", d.Skipped)
	}
}

// svn-rev, patch and the adapter errors of the targets that need a repo.
func TestRevisionAndPatchTargets(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ads := e.adapters(t)
	rev, _ := ParseTarget("svn-rev:1")
	f, err := rev.fetch(ctx, ads, "main", layoutIn(t))
	if err != nil {
		t.Fatal(err)
	}
	files := filesByPath(f.change)
	if c := files["calc.go"]; c.Action != vcs.ActionAdd || f.change.Repo != "main" || f.revision != "1" || f.replayer == nil {
		t.Errorf("svn-rev:1: calc.go %+v repo %q revision %q", c, f.change.Repo, f.revision)
	}
	if d := files["vendor/dep.go"]; d.Skipped != vcs.SkipExcluded {
		t.Errorf("svn-rev:1: vendor/dep.go skipped %q", d.Skipped)
	}
	if _, err := rev.fetch(ctx, ads, "other", layoutIn(t)); err == nil || !strings.Contains(err.Error(), "no adapter") {
		t.Errorf("unknown repo: %v", err)
	}
	shelf, _ := ParseTarget("p4-shelf:7")
	if _, err := shelf.fetch(ctx, ads, "main", layoutIn(t)); err == nil || !strings.Contains(err.Error(), "cannot read shelved changes") {
		t.Errorf("a shelf through an svn repo: %v", err)
	}

	patchFile := filepath.Join(t.TempDir(), "fix.patch")
	put(t, filepath.Dir(patchFile), "fix.patch", "--- calc.go\n+++ calc.go\n@@ -3 +3 @@\n-func Add(a, b int) int { return a + b }\n+func Add(a, b int) int { return a * b }\n")
	p, err := ParseTarget("patch:" + patchFile)
	if err != nil {
		t.Fatal(err)
	}
	f, err = p.fetch(ctx, nil, "", layoutIn(t))
	if err != nil {
		t.Fatal(err)
	}
	if c := filesByPath(f.change)["calc.go"]; !c.IsAdded(3) || f.replayer != nil {
		t.Errorf("patch: calc.go %+v replayer %v", c, f.replayer)
	}
}

// resolveRepo: a named repo is checked against the target's kind, and a
// target that needs a repo takes the only one of its kind.
func TestResolveRepo(t *testing.T) {
	e := newEnv(t)
	rev, _ := ParseTarget("svn-rev:1")
	if got, err := resolveRepo(e.cfg, rev, ""); err != nil || got != "main" {
		t.Errorf("the only svn repo: %q, %v", got, err)
	}
	change, _ := ParseTarget("p4-change:1")
	if _, err := resolveRepo(e.cfg, change, ""); err == nil || !strings.Contains(err.Error(), "has none") {
		t.Errorf("no p4 repo: %v", err)
	}
	if _, err := resolveRepo(e.cfg, change, "main"); err == nil || !strings.Contains(err.Error(), "needs a p4 repo") {
		t.Errorf("svn repo for a p4 target: %v", err)
	}
	if _, err := resolveRepo(e.cfg, rev, "nope"); err == nil || !strings.Contains(err.Error(), "not in") {
		t.Errorf("unknown repo: %v", err)
	}
}

// A round under another process's live lease is left alone; once the
// lease has expired, run-round takes it, reviews the target into the
// round directory and records the outcome. The completed round is then
// published through the daemon's pipeline to the repo's file channel.
func TestRoundLeaseAndPublication(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id, err := e.store.CreateSession(ctx, audit.ReviewSession{Target: "svn-wc:" + e.wc, Repo: "main", ConfigPath: e.cfg.Path}, "first look", StartGrace)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.store.ClaimRound(ctx, id, 1, time.Hour); err != nil || !ok {
		t.Fatalf("the other process's claim: %v %v", ok, err)
	}
	if err := RunRound(ctx, e.cfg, e.store, id, 1, nil); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.store.SessionRound(ctx, id, 1); r.Status != audit.RoundRunning || r.RunDir != "" {
		t.Fatalf("a round under a live lease was run: %+v", r)
	}

	// The other process's lease runs out.
	if ok, err := e.store.RenewRound(ctx, id, 1, time.Millisecond); err != nil || !ok {
		t.Fatalf("shorten the lease: %v %v", ok, err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := RunRound(ctx, e.cfg, e.store, id, 1, nil); err != nil {
		t.Fatal(err)
	}
	r, err := e.store.SessionRound(ctx, id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != audit.RoundCompleted || r.Result == nil || r.RunDir != RoundDir(e.cfg, id, 1) {
		t.Fatalf("round after the lease expired: %+v", r)
	}
	c, err := rundir.New(r.RunDir).ReadChange()
	if err != nil || !strings.Contains(c.Description, "first look") {
		t.Errorf("round change: %v, description %q", err, c.Description)
	}

	svc := &Service{Config: e.cfg, Store: e.store, Start: func(context.Context, int64, int) error { return nil }}
	w, err := svc.Wait(ctx, WaitInput{SessionID: FormatID(id)})
	if err != nil || w.Next == NextRunning || w.Round != 1 {
		t.Errorf("wait after the round: %+v %v", w, err)
	}
	ended, err := svc.End(ctx, EndInput{SessionID: FormatID(id), Publish: true})
	if err != nil {
		t.Fatal(err)
	}
	if !ended.Finalized || !ended.Published || ended.PublishedRunID == 0 || ended.PublishError != "" {
		t.Fatalf("end with publish: %+v", ended)
	}
	out, err := os.ReadFile(e.out)
	if err != nil || !strings.Contains(string(out), "1+local") {
		t.Errorf("file channel: %q, %v", out, err)
	}
	run, err := e.store.GetRun(ctx, ended.PublishedRunID)
	if err != nil || run.Repo != "main" {
		t.Errorf("publication run: %+v %v", run, err)
	}
}
