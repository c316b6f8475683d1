package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs/p4"
	"github.com/aicr-dev/aicr/vcs/svn"
)

// Both adapters answer the ladder's requests as they are; the Reviewer
// finds the Replayer by a type assertion, so losing a method would only
// show as unanswered requests without these.
var (
	_ agent.Replayer = (*svn.Adapter)(nil)
	_ agent.Replayer = (*p4.Adapter)(nil)
)

// askingAgent asks for context and blame in its first pass and publishes a
// summary in the follow-up, keeping what it was given.
type askingAgent struct {
	passes []pass.Pass
	rules  string
}

func (a *askingAgent) Review(_ context.Context, run rundir.Layout, p pass.Pass) (pass.Stats, error) {
	a.passes = append(a.passes, p)
	st, err := review.LoadState(run.StatePath())
	if err != nil {
		st = review.NewState()
	}
	change, err := run.ReadChange()
	if err != nil {
		return pass.Stats{}, err
	}
	calls := []review.ToolCall{{Name: review.ToolPublishSummary, Arguments: []byte(`{"markdown":"Checked against lib/util.go."}`)}}
	if p.Kind == pass.Review {
		if b, err := os.ReadFile(run.RepoRulesPath()); err == nil {
			a.rules = string(b)
		}
		calls = []review.ToolCall{
			{Name: review.ToolFetchMoreContext, Arguments: []byte(`{"path":"lib/util.go","range":{"start_line":1,"end_line":2},"reason":"callee"}`)},
			{Name: review.ToolTryBlame, Arguments: []byte(`{"path":"main.go","range":{"start_line":1,"end_line":1},"reason":"who wrote it"}`)},
		}
	}
	review.ApplyCalls(review.NewValidator(change, run.SrcDir(), review.Limits{}), st, calls)
	return pass.Stats{Agent: "scripted", Model: "m-1", Turns: 2, InputTokens: 300, OutputTokens: 30}, review.SaveState(run.StatePath(), st)
}

// The Reviewer Build wires answers the agent's requests through the repo's
// real svn adapter at the reviewed revision, hands it the repo's rules as
// of that revision, and records what the agent cost in the run.
func TestReviewerReplaysRequestsThroughTheRepoAdapter(t *testing.T) {
	cfg, repos := newSVNConfig(t)
	wc := filepath.Join(t.TempDir(), "wc")
	svn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("svn", append(args, "--non-interactive")...)
		cmd.Dir = wc
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("svn %v: %v\n%s", args, err, out)
		}
	}
	if out, err := exec.Command("svn", "checkout", "file://"+repos, wc).CombinedOutput(); err != nil {
		t.Fatalf("checkout: %v %s", err, out)
	}
	write := func(name, content string) {
		p := filepath.Join(wc, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".aicr/instructions.md", "Old rules.\n")
	write("lib/util.go", "package lib\n// old helper\n")
	write("main.go", "package main\n")
	svn("add", ".aicr", "lib", "main.go")
	svn("commit", "--username", "alice", "-m", "r1")
	write(".aicr/instructions.md", "Flag every TODO.\n")
	write("lib/util.go", "package lib\nfunc Helper() {}\n")
	write("main.go", "package main\n\nfunc main() {}\n")
	svn("commit", "--username", "bob", "-m", "r2")
	write(".aicr/instructions.md", "Rules from the future.\n")
	svn("commit", "--username", "carol", "-m", "r3")

	store, err := audit.Open(context.Background(), filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg.Daemon.DataDir = t.TempDir()
	parts, err := Build(cfg, Deps{Store: store}, BuildOptions{NoChannels: true})
	if err != nil {
		t.Fatal(err)
	}
	ag := &askingAgent{}
	parts.Ladder.Agent = ag
	run, err := store.EnqueueClaimedWith(context.Background(), triggers.Event{V: triggers.ProtocolVersion, VCS: "svn", Repo: "main",
		Revision: "2", Source: triggers.SourceManual}, time.Now(), audit.ClaimOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := parts.Pipeline.Process(context.Background(), run, ProcessOptions{DryRun: true, Foreground: true})
	if err != nil || rep.Status != audit.RunSucceeded {
		t.Fatalf("process: %v %+v", err, rep)
	}
	if ag.rules != "Flag every TODO.\n" {
		t.Errorf("repo rules %q, want r2's", ag.rules)
	}
	if len(ag.passes) != 2 || ag.passes[1].Kind != pass.FollowUp || len(ag.passes[1].Context) != 2 {
		t.Fatalf("passes %+v", ag.passes)
	}
	ctxAns, blame := ag.passes[1].Context[0], ag.passes[1].Context[1]
	if !strings.Contains(ctxAns.Text, "2  func Helper() {}") || ctxAns.Error != "" {
		t.Errorf("context answer is not lib/util.go at r2: %+v", ctxAns)
	}
	if !strings.Contains(blame.Text, "1  1  alice") || blame.Error != "" {
		t.Errorf("blame answer %+v", blame)
	}
	d, err := store.GetRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Agent; a == nil || a.Agent != "scripted" || a.Model != "m-1" || a.Passes != 2 || a.Turns != 4 || a.InputTokens != 600 {
		t.Errorf("agent stats %+v", d.Agent)
	}
}
