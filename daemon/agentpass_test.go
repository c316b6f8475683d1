package daemon

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/triggers"
	"github.com/aicr-dev/aicr/vcs"
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

// dismissalsAgent records the dismissed.json its passes found and skips.
type dismissalsAgent struct {
	ignores bool
	seen    []prompt.Dismissal
	read    bool
}

func (a *dismissalsAgent) IgnoresRepoFiles() bool { return a.ignores }

func (a *dismissalsAgent) Review(_ context.Context, run rundir.Layout, _ pass.Pass) (pass.Stats, error) {
	ds, err := prompt.ReadDismissals(run.DismissedPath())
	if err != nil {
		return pass.Stats{}, err
	}
	a.seen, a.read = ds, true
	change, err := run.ReadChange()
	if err != nil {
		return pass.Stats{}, err
	}
	st := review.NewState()
	review.ApplyCalls(review.NewValidator(change, run.SrcDir(), review.Limits{}), st,
		[]review.ToolCall{{Name: review.ToolSkip, Arguments: []byte(`{"reason":"lgtm"}`)}})
	return pass.Stats{Agent: "scripted"}, review.SaveState(run.StatePath(), st)
}

// fakeDismissals answers DismissedIn as findings.Store does, recording
// what it was asked.
type fakeDismissals struct {
	found []findings.Finding
	err   error
	repo  string
	paths []string
	limit int
	calls int
}

func (f *fakeDismissals) DismissedIn(_ context.Context, repo string, paths []string, limit int) ([]findings.Finding, error) {
	f.calls++
	f.repo, f.paths, f.limit = repo, paths, limit
	return f.found, f.err
}

// Before a model-backed review the Reviewer asks the store for the repo's
// dismissed findings in the change's paths (and where its renamed files
// came from) and leaves them in the run directory for the prompt; the
// builtin checks are not asked about, a store that fails costs only the
// reminder, and no run reads a stale list.
func TestReviewerLeavesDismissalsForThePrompt(t *testing.T) {
	dir := rundir.New(t.TempDir())
	if err := dir.Create(); err != nil {
		t.Fatal(err)
	}
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "7", Files: []vcs.FileChange{
		{Path: "lib/new.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, CopyFromPath: "lib/old.go", CopyFromRev: "6"},
		{Path: "lib/old.go", Action: vcs.ActionDelete, NodeKind: vcs.NodeFile, Skipped: vcs.SkipDeleted},
		{Path: "main.go", Action: vcs.ActionModify, NodeKind: vcs.NodeFile},
		{Path: "logo.png", Action: vcs.ActionModify, NodeKind: vcs.NodeFile, Binary: true, Skipped: vcs.SkipBinary},
		{Path: "gone.go", Action: vcs.ActionDelete, NodeKind: vcs.NodeFile, Skipped: vcs.SkipDeleted},
	}}
	if err := dir.WriteChange(change); err != nil {
		t.Fatal(err)
	}
	store := &fakeDismissals{found: []findings.Finding{{ID: 3, Repo: "main", Path: "lib/old.go", Line: 12, Category: "security",
		Message: "Token logged \x1b[31mhere\x1b[0m.", State: findings.StateDismissed, Dismissal: findings.ActionFalsePositive, Note: "test key"}}}
	ag := &dismissalsAgent{}
	rv := &agentPass{ladder: &agent.Ladder{Agent: ag}, dismissals: store, log: slog.New(slog.DiscardHandler)}
	run := &audit.Run{RunSummary: audit.RunSummary{ID: 1, Repo: "main", Revision: "7"}}
	if _, err := rv.Review(context.Background(), run, dir); err != nil {
		t.Fatal(err)
	}
	if store.calls != 1 || store.repo != "main" || strings.Join(store.paths, ",") != "lib/new.go,lib/old.go,main.go" || store.limit != prompt.MaxDismissals {
		t.Errorf("DismissedIn asked %d times: repo %q paths %q limit %d", store.calls, store.repo, store.paths, store.limit)
	}
	want := []prompt.Dismissal{{Path: "lib/old.go", Line: 12, Category: "security", Message: "Token logged here.", Reason: "false_positive", Note: "test key"}}
	if !ag.read || !reflect.DeepEqual(ag.seen, want) {
		t.Errorf("the agent read %+v, want %+v", ag.seen, want)
	}

	// The store fails: the review goes on, with no list (not the last one).
	store.err, store.found = errors.New("database is locked"), nil
	ag.seen = nil
	if _, err := rv.Review(context.Background(), run, dir); err != nil {
		t.Fatalf("a store error failed the review: %v", err)
	}
	if ag.seen != nil {
		t.Errorf("a stale list was read after the store failed: %+v", ag.seen)
	}

	// The builtin checks: nothing asked, nothing written.
	store.err, store.calls = nil, 0
	if err := prompt.WriteDismissals(dir.DismissedPath(), want); err != nil {
		t.Fatal(err)
	}
	ag.ignores = true
	if _, err := rv.Review(context.Background(), run, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir.DismissedPath()); store.calls != 0 || !os.IsNotExist(err) {
		t.Errorf("builtin review: DismissedIn asked %d times, file: %v", store.calls, err)
	}
}

// Against the real store: a finding a person dismissed as a false
// positive in a path of the change reaches the agent's prompt input with
// its reason; one in a path the change does not touch does not, nor does
// one still open.
func TestReviewerReadsDismissalsFromTheStore(t *testing.T) {
	ctx := context.Background()
	store, err := audit.Open(ctx, filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src := map[string]string{
		"a.go":     "package a\n\nfunc f() {\n\tdb.Query(\"SELECT \" + name)\n}\n",
		"other.go": "package a\n\nvar x = 1\n",
	}
	ch := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "1", Author: "alice"}
	for p := range src {
		ch.Files = append(ch.Files, vcs.FileChange{Path: p, Action: vcs.ActionModify, NodeKind: vcs.NodeFile})
	}
	out, err := store.TrackFindings(ctx, findings.Review{Repo: "main", VCS: vcs.KindSVN, RunID: 1, Revision: "1", Author: "alice",
		Change: ch, Complete: true, Source: func(p string) ([]string, error) { return strings.Split(src[p], "\n"), nil },
		Problems: []review.Problem{
			{File: "a.go", Line: 4, Severity: review.SeverityHigh, Category: "security", Message: "SQL built from a string: injection"},
			{File: "a.go", Line: 3, Severity: review.SeverityLow, Category: "style", Message: "f is unexported"},
			{File: "other.go", Line: 3, Severity: review.SeverityLow, Category: "correctness", Message: "x is never read"},
		}})
	if err != nil || len(out.Seen) != 3 {
		t.Fatalf("track: %v %+v", err, out)
	}
	for _, i := range []int{0, 2} {
		if _, err := store.ActOnFinding(ctx, out.Seen[i].Finding.ID, findings.Act{Action: findings.ActionFalsePositive,
			Actor: "bob", Via: findings.ViaWeb, Note: "name is a constant", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}

	dir := rundir.New(t.TempDir())
	if err := dir.Create(); err != nil {
		t.Fatal(err)
	}
	if err := dir.WriteChange(&vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "2",
		Files: []vcs.FileChange{{Path: "a.go", Action: vcs.ActionModify, NodeKind: vcs.NodeFile}}}); err != nil {
		t.Fatal(err)
	}
	ag := &dismissalsAgent{}
	rv := &agentPass{ladder: &agent.Ladder{Agent: ag}, dismissals: dismissalsOf(store), log: slog.New(slog.DiscardHandler)}
	if _, err := rv.Review(ctx, &audit.Run{RunSummary: audit.RunSummary{ID: 2, Repo: "main", Revision: "2"}}, dir); err != nil {
		t.Fatal(err)
	}
	want := []prompt.Dismissal{{Path: "a.go", Line: 4, Category: "security", Message: "SQL built from a string: injection",
		Reason: "false_positive", Note: "name is a constant"}}
	if !reflect.DeepEqual(ag.seen, want) {
		t.Errorf("the agent read %+v, want %+v", ag.seen, want)
	}
	if dismissalsOf(nil) != nil {
		t.Error("no store must list nothing, not a nil store")
	}

	// A caller that runs the ladder itself (a session round) gets the
	// same file from the Components Build made.
	cfg, _ := newSVNConfig(t)
	cfg.Daemon.DataDir = t.TempDir()
	parts, err := Build(cfg, Deps{Store: store}, BuildOptions{NoChannels: true})
	if err != nil {
		t.Fatal(err)
	}
	parts.Ladder.Agent = &dismissalsAgent{}
	if err := os.Remove(dir.DismissedPath()); err != nil {
		t.Fatal(err)
	}
	parts.LeaveDismissals(ctx, "main", dir)
	if got, err := prompt.ReadDismissals(dir.DismissedPath()); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("LeaveDismissals wrote %+v (%v), want %+v", got, err, want)
	}
}

// cachingAgent answers in two passes whose turns read and write the
// provider's prompt cache, as a model with prompt caching reports them.
type cachingAgent struct{ turns [][]pass.TurnUsage }

func (a *cachingAgent) Review(_ context.Context, run rundir.Layout, p pass.Pass) (pass.Stats, error) {
	st := review.NewState()
	change, err := run.ReadChange()
	if err != nil {
		return pass.Stats{}, err
	}
	calls := []review.ToolCall{{Name: review.ToolReportProblem, Arguments: []byte(`{"file":"main.go","line":3,"severity":"low","category":"style","message":"m"}`)}}
	if p.Kind != pass.Review {
		calls = []review.ToolCall{{Name: review.ToolPublishSummary, Arguments: []byte(`{"markdown":"One problem."}`)}}
		if prev, err := review.LoadState(run.StatePath()); err == nil {
			st = prev
		}
	}
	review.ApplyCalls(review.NewValidator(change, run.SrcDir(), review.Limits{}), st, calls)
	s := pass.Stats{Agent: "llm", Model: "claude-x"}
	for _, t := range a.turns[min(p.Number, len(a.turns))-1] {
		s.Add(pass.Stats{Turns: 1, InputTokens: t.Input, CacheReadTokens: t.CacheRead, CacheWriteTokens: t.CacheWrite,
			OutputTokens: t.Output, TurnUsage: []pass.TurnUsage{t}})
	}
	return s, review.SaveState(run.StatePath(), st)
}

// The audit's cost for a run is what the provider bills: uncached input,
// cache reads and cache writes each at their rate (Anthropic's defaults:
// 0.1× and 1.25× the input price), output at its own; the split and every
// turn are in the trail, and the metrics count tokens by kind.
func TestRunCostIsWhatTheProviderBills(t *testing.T) {
	cfg, repos := newSVNConfig(t)
	commitFile(t, repos, "main.go", "package main\n\nfunc main() {}\n")
	cfg.Agent.Kind = agent.KindLLM
	cfg.Agent.LLM.API, cfg.Agent.LLM.Model = "anthropic", "claude-x"
	cfg.Agent.LLM.PricePerMTokIn, cfg.Agent.LLM.PricePerMTokOut = 3, 15
	store, err := audit.Open(context.Background(), filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg.Daemon.DataDir = t.TempDir()
	m := NewMetrics(store, "test")
	parts, err := Build(cfg, Deps{Store: store, Metrics: m}, BuildOptions{NoChannels: true})
	if err != nil {
		t.Fatal(err)
	}
	turns := [][]pass.TurnUsage{
		{{Input: 40, CacheWrite: 7000, Output: 120}, {Input: 300, CacheRead: 7000, CacheWrite: 160, Output: 80}},
		{{Input: 900, CacheRead: 7000, Output: 60}},
	}
	parts.Ladder.Agent = &cachingAgent{turns: turns}
	run, err := store.EnqueueClaimedWith(context.Background(), triggers.Event{V: triggers.ProtocolVersion, VCS: "svn", Repo: "main",
		Revision: "1", Source: triggers.SourceManual}, time.Now(), audit.ClaimOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := parts.Pipeline.Process(context.Background(), run, ProcessOptions{DryRun: true, Foreground: true})
	if err != nil || rep.Status != audit.RunSucceeded {
		t.Fatalf("process: %v %+v", err, rep)
	}
	d, err := store.GetRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	a := d.Agent
	var in, read, write, out float64
	var want []audit.TurnUsage
	for p, ts := range turns {
		for i, tu := range ts {
			in, read, write, out = in+float64(tu.Input), read+float64(tu.CacheRead), write+float64(tu.CacheWrite), out+float64(tu.Output)
			want = append(want, audit.TurnUsage{Attempt: 1, Pass: p + 1, Turn: i + 1, InputTokens: tu.Input,
				CacheReadTokens: tu.CacheRead, CacheWriteTokens: tu.CacheWrite, OutputTokens: tu.Output})
		}
	}
	billed := (in*3 + read*0.3 + write*3.75 + out*15) / 1e6
	if a == nil || a.CostUSD == nil || math.Abs(*a.CostUSD-billed) > 1e-12 {
		t.Fatalf("audit cost %+v, want %v (billed)", a, billed)
	}
	if a.InputTokens != int(in) || a.CacheReadTokens != int(read) || a.CacheWriteTokens != int(write) || a.OutputTokens != int(out) {
		t.Errorf("split %+v, want %v/%v/%v/%v", a, in, read, write, out)
	}
	if !reflect.DeepEqual(a.PerTurn, want) {
		t.Errorf("turns %+v\nwant %+v", a.PerTurn, want)
	}
	for kind, n := range map[string]float64{"input": in, "cache_read": read, "cache_write": write, "output": out} {
		if got := counterValue(t, m, "aicr_agent_tokens_total", "kind", kind); got != n {
			t.Errorf("aicr_agent_tokens_total{kind=%q} = %v, want %v", kind, got, n)
		}
	}
	if got := counterValue(t, m, "aicr_agent_cost_usd_total", "model", "claude-x"); math.Abs(got-billed) > 1e-12 {
		t.Errorf("aicr_agent_cost_usd_total = %v, want %v", got, billed)
	}
}

// commitFile commits name with content to the repository at repos as
// alice, through a scratch working copy.
func commitFile(t *testing.T, repos, name, content string) {
	t.Helper()
	wc := filepath.Join(t.TempDir(), "wc")
	if out, err := exec.Command("svn", "checkout", "--non-interactive", "file://"+repos, wc).CombinedOutput(); err != nil {
		t.Fatalf("checkout: %v %s", err, out)
	}
	p := filepath.Join(wc, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "--parents", name}, {"commit", "--username", "alice", "-m", "change " + name}} {
		cmd := exec.Command("svn", append(args, "--non-interactive")...)
		cmd.Dir = wc
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("svn %v: %v\n%s", args, err, out)
		}
	}
}

// counterValue is the counter name's value at the series whose label is
// value, as /metrics would serve it.
func counterValue(t *testing.T, m *Metrics, name, label, value string) float64 {
	t.Helper()
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return s.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{%s=%q}", name, label, value)
	return 0
}
