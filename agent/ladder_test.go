package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/builtin"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// The reviewed file: lines 1-6 are all added; line 4 holds an AWS key.
const (
	leakedKey   = "AKIAQWERTYUIOPASDFGH"
	reviewedSrc = "package main\n\nfunc main() {\n\tkey := \"" + leakedKey + "\"\n\tprintln(key)\n}\n"
)

func newRun(t *testing.T) rundir.Layout {
	t.Helper()
	run := rundir.New(t.TempDir())
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run.SrcDir(), "main.go"), []byte(reviewedSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "demo", Revision: "7", Files: []vcs.FileChange{{
		Path: "main.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
		Added: []vcs.LineRange{{Start: 1, End: 6}}, Hunks: []vcs.LineRange{{Start: 1, End: 6}},
	}}}
	if err := run.WriteChange(change); err != nil {
		t.Fatal(err)
	}
	return run
}

// step is what the scripted agent does in one pass: check the request,
// record tool calls through the server's validation, print text, fail.
type step struct {
	check func(t *testing.T, p pass.Pass)
	calls []review.ToolCall
	text  string
	err   error
}

// scripted is an agent that plays one step per pass and records the
// passes it was given.
type scripted struct {
	t      *testing.T
	steps  []step
	passes []pass.Pass
}

func (s *scripted) Review(_ context.Context, run rundir.Layout, p pass.Pass) (pass.Stats, error) {
	s.passes = append(s.passes, p)
	stats := pass.Stats{Agent: "fake", Model: "fake-1", Turns: 1, InputTokens: 100, OutputTokens: 10}
	if len(s.passes) > len(s.steps) {
		s.t.Fatalf("pass %d (%s) beyond the script", len(s.passes), p.Kind)
	}
	st := s.steps[len(s.passes)-1]
	if st.check != nil {
		st.check(s.t, p)
	}
	if len(st.calls) > 0 {
		record(s.t, run, st.calls...)
	}
	stats.Text = st.text
	return stats, st.err
}

func record(t *testing.T, run rundir.Layout, calls ...review.ToolCall) []review.CallOutcome {
	t.Helper()
	st, err := review.LoadState(run.StatePath())
	if errors.Is(err, review.ErrNoState) {
		st, err = review.NewState(), nil
	}
	if err != nil {
		t.Fatal(err)
	}
	change, err := run.ReadChange()
	if err != nil {
		t.Fatal(err)
	}
	out := review.ApplyCalls(review.NewValidator(change, run.SrcDir(), review.Limits{}), st, calls)
	if err := review.SaveState(run.StatePath(), st); err != nil {
		t.Fatal(err)
	}
	return out
}

func call(name string, args map[string]any) review.ToolCall {
	b, _ := json.Marshal(args)
	return review.ToolCall{Name: name, Arguments: b}
}

var (
	summary   = call(review.ToolPublishSummary, map[string]any{"markdown": "Looked at main.go."})
	skipLGTM  = call(review.ToolSkip, map[string]any{"reason": "lgtm"})
	printlnUB = call(review.ToolReportProblem, map[string]any{"file": "main.go", "line": 5, "severity": "low",
		"category": "style", "message": "println writes to stderr; use fmt or log"})
)

// fakeRepo is the VCS as the replayer sees it.
type fakeRepo struct {
	files map[string]string
	blame map[string][]vcs.BlameLine
	asked []string
}

func (f *fakeRepo) Cat(_ context.Context, path, rev string, w io.Writer) error {
	f.asked = append(f.asked, "cat "+path+"@"+rev)
	c, ok := f.files[path]
	if !ok {
		return fmt.Errorf("%s@%s: %w", path, rev, vcs.ErrNoSuchPath)
	}
	_, err := io.WriteString(w, c)
	return err
}

func (f *fakeRepo) Blame(_ context.Context, path, rev string, start, end int) (vcs.BlameResult, error) {
	f.asked = append(f.asked, fmt.Sprintf("blame %s@%s:%d-%d", path, rev, start, end))
	lines, ok := f.blame[path]
	if !ok {
		return vcs.BlameResult{Path: path, Revision: rev, Status: vcs.BlameNotFound}, nil
	}
	return vcs.BlameResult{Path: path, Revision: rev, Status: vcs.BlameOK, Lines: lines}, nil
}

func runLadder(t *testing.T, a agent.Agent, tgt agent.Target) (rundir.Layout, agent.Outcome, error) {
	t.Helper()
	run := newRun(t)
	out, err := (&agent.Ladder{Agent: a}).Run(context.Background(), run, tgt)
	return run, out, err
}

func TestLadderOnePassWithResult(t *testing.T) {
	s := &scripted{t: t, steps: []step{{calls: []review.ToolCall{printlnUB, summary}}}}
	_, out, err := runLadder(t, s, agent.Target{Revision: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Passes != 1 || len(out.Result.Problems) != 1 || len(out.Result.Summaries) != 1 {
		t.Errorf("passes %d, result %+v", out.Passes, out.Result)
	}
	if s.passes[0].Kind != pass.Review || s.passes[0].Number != 1 {
		t.Errorf("first pass %+v", s.passes[0])
	}
	if out.Stats.Agent != "fake" || out.Stats.Model != "fake-1" || out.Stats.InputTokens != 100 {
		t.Errorf("stats %+v", out.Stats)
	}
}

// The agent's context and blame requests are answered at the reviewed
// revision in a follow-up pass.
func TestLadderFollowUpAnswersRequests(t *testing.T) {
	repo := &fakeRepo{
		files: map[string]string{"lib/util.go": "package lib\n\nfunc Secret() string { return vault() }\n"},
		blame: map[string][]vcs.BlameLine{"main.go": {{Line: 4, Revision: "6", Author: "alice", Date: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}}},
	}
	s := &scripted{t: t, steps: []step{
		{calls: []review.ToolCall{
			call(review.ToolFetchMoreContext, map[string]any{"path": "lib/util.go", "range": map[string]int{"start_line": 3, "end_line": 3}, "reason": "what does Secret do"}),
			call(review.ToolTryBlame, map[string]any{"path": "main.go", "range": map[string]int{"start_line": 4, "end_line": 4}, "reason": "who added the key"}),
		}},
		{check: func(t *testing.T, p pass.Pass) {
			if p.Kind != pass.FollowUp || p.Number != 2 || len(p.Context) != 2 {
				t.Fatalf("follow-up pass %+v", p)
			}
			if a := p.Context[0]; a.Request != "aicr.fetch_more_context lib/util.go:3-3" || !strings.Contains(a.Text, "3  func Secret()") || a.Error != "" {
				t.Errorf("context answer %+v", a)
			}
			if a := p.Context[1]; !strings.Contains(a.Text, "4  6  alice  2026-01-02") {
				t.Errorf("blame answer %+v", a)
			}
		}, calls: []review.ToolCall{summary}},
	}}
	_, out, err := runLadder(t, s, agent.Target{Revision: "7", Replayer: repo})
	if err != nil {
		t.Fatal(err)
	}
	if out.Passes != 2 || strings.Join(out.Steps, ",") != "review,follow-up" {
		t.Errorf("passes %d steps %v", out.Passes, out.Steps)
	}
	if want := "cat lib/util.go@7"; !containsString(repo.asked, want) {
		t.Errorf("replayer asked %v, want %s at the reviewed revision", repo.asked, want)
	}
}

// A request the VCS cannot answer is answered with the reason; only new
// requests are replayed; after two follow-ups the ladder moves on.
func TestLadderFollowUpsAreBounded(t *testing.T) {
	ask := func(path string) review.ToolCall {
		return call(review.ToolFetchMoreContext, map[string]any{"path": path, "reason": "need it"})
	}
	s := &scripted{t: t, steps: []step{
		{calls: []review.ToolCall{ask("a.go")}},
		{check: func(t *testing.T, p pass.Pass) {
			if len(p.Context) != 1 || !strings.Contains(p.Context[0].Error, "no such path") {
				t.Errorf("answer to a missing file: %+v", p.Context)
			}
		}, calls: []review.ToolCall{ask("b.go")}},
		{check: func(t *testing.T, p pass.Pass) {
			if len(p.Context) != 1 || p.Context[0].Request != "aicr.fetch_more_context b.go" {
				t.Errorf("second follow-up replays only the new request: %+v", p.Context)
			}
		}, calls: []review.ToolCall{ask("c.go")}},
		{check: func(t *testing.T, p pass.Pass) {
			if p.Kind != pass.Repair {
				t.Errorf("pass 4 is %s, want repair after two follow-ups", p.Kind)
			}
		}, calls: []review.ToolCall{skipLGTM}},
	}}
	_, out, err := runLadder(t, s, agent.Target{Revision: "7", Replayer: &fakeRepo{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(out.Steps, ","); got != "review,follow-up,follow-up,repair" {
		t.Errorf("steps %s", got)
	}
}

func TestLadderRepairSaysWhatIsMissing(t *testing.T) {
	s := &scripted{t: t, steps: []step{
		{text: "I had a look."},
		{check: func(t *testing.T, p pass.Pass) {
			if p.Kind != pass.Repair || !strings.Contains(p.Missing, "no result was recorded") || !strings.Contains(p.Missing, review.ToolSkip) {
				t.Errorf("repair pass %+v", p)
			}
		}, calls: []review.ToolCall{skipLGTM}},
	}}
	_, out, err := runLadder(t, s, agent.Target{Revision: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Skip == nil || out.Result.Skip.Reason != "lgtm" {
		t.Errorf("result %+v", out.Result)
	}
}

// A summary that claims problems without any report_problem gets a repair
// pass; the claim is withdrawn until the agent backs it.
func TestLadderRepairsDishonestSummary(t *testing.T) {
	claim := call(review.ToolPublishSummary, map[string]any{"markdown": "Found 2 critical bugs in main.go."})
	s := &scripted{t: t, steps: []step{
		{calls: []review.ToolCall{claim}},
		{check: func(t *testing.T, p pass.Pass) {
			if p.Kind != pass.Repair || !strings.Contains(p.Missing, "claims problems") || !strings.Contains(p.Missing, review.ToolReportProblem) {
				t.Errorf("repair pass %+v", p)
			}
		}, calls: []review.ToolCall{printlnUB}},
	}}
	_, out, err := runLadder(t, s, agent.Target{Revision: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Result.Problems) != 1 || len(out.Result.Summaries) != 0 {
		t.Errorf("result %+v", out.Result)
	}
}

// Prose after the repair pass is normalized: "no problems" is a skip, and
// printed tool calls are recorded through the server's validation.
func TestLadderNormalizesProse(t *testing.T) {
	s := &scripted{t: t, steps: []step{{text: "Looking."}, {text: "LGTM, no issues found."}}}
	_, out, err := runLadder(t, s, agent.Target{Revision: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Skip == nil || out.Result.Skip.Reason != review.SkipReasonLGTM || !containsString(out.Steps, "prose:lgtm") {
		t.Errorf("result %+v steps %v", out.Result, out.Steps)
	}

	printed := `Here you go: {"toolCalls":[` +
		`{"name":"aicr.report_problem","arguments":{"file":"main.go","line":4,"severity":"critical","category":"secret","message":"hard-coded key"}},` +
		`{"name":"aicr.report_problem","arguments":{"file":"main.go","line":99,"severity":"low","category":"style","message":"not in the diff"}},` +
		`{"name":"aicr.publish_summary","arguments":{"markdown":"One leaked key."}}]}`
	s = &scripted{t: t, steps: []step{{text: "Looking."}, {text: printed}}}
	run, out, err := runLadder(t, s, agent.Target{Revision: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Result.Problems) != 1 || out.Result.Problems[0].Line != 4 || len(out.Result.Summaries) != 1 || out.Rejected != 1 {
		t.Errorf("result %+v rejected %d", out.Result, out.Rejected)
	}
	st, err := review.LoadState(run.StatePath())
	if err != nil || len(st.Rejected) != 1 || st.Rejected[0].Code != review.CodeLineNotInDiff {
		t.Errorf("refused call not recorded: %+v %v", st, err)
	}
}

func TestLadderFailsWithoutStructuredResult(t *testing.T) {
	s := &scripted{t: t, steps: []step{{text: "Hmm."}, {text: "No issues, but line 4 leaks a key."}}}
	_, out, err := runLadder(t, s, agent.Target{Revision: "7"})
	if !errors.Is(err, agent.ErrNoResult) || !strings.Contains(err.Error(), "after 2 passes: no result was recorded") {
		t.Fatalf("err %v", err)
	}
	if out.Passes != 2 || out.Stats.InputTokens != 200 {
		t.Errorf("a failed ladder still reports its cost: %+v", out)
	}
}

func TestLadderRetriesContextOverflowClipped(t *testing.T) {
	overflow := fmt.Errorf("openai-chat: 400 context_length_exceeded: %w", llm.ErrContextOverflow)
	s := &scripted{t: t, steps: []step{
		{err: overflow},
		{check: func(t *testing.T, p pass.Pass) {
			if p.Kind != pass.Review || p.Scale() != 0.5 {
				t.Errorf("retry pass %+v, want the review again with half the budget", p)
			}
		}, calls: []review.ToolCall{skipLGTM}},
	}}
	_, out, err := runLadder(t, s, agent.Target{Revision: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Passes != 2 || !containsString(out.Steps, "clip-retry") {
		t.Errorf("passes %d steps %v", out.Passes, out.Steps)
	}

	s = &scripted{t: t, steps: []step{{err: overflow}, {err: overflow}}}
	_, _, err = runLadder(t, s, agent.Target{Revision: "7"})
	if !errors.Is(err, agent.ErrContextOverflow) || !errors.Is(err, llm.ErrContextOverflow) || !strings.Contains(err.Error(), "context_overflow") {
		t.Errorf("second overflow: %v", err)
	}
}

func TestLadderAuthFailsAtOnce(t *testing.T) {
	s := &scripted{t: t, steps: []step{{err: fmt.Errorf("401 invalid key: %w", llm.ErrAuth)}}}
	_, out, err := runLadder(t, s, agent.Target{Revision: "7"})
	// The agent names the remedy (with the key's file); the ladder adds no
	// second one.
	if !errors.Is(err, llm.ErrAuth) || strings.Contains(err.Error(), "[agent.llm]") || out.Passes != 1 {
		t.Errorf("err %v after %d passes", err, out.Passes)
	}
	s = &scripted{t: t, steps: []step{{err: fmt.Errorf("429: %w", llm.ErrTransient)}}}
	if _, _, err := runLadder(t, s, agent.Target{Revision: "7"}); !errors.Is(err, llm.ErrTransient) {
		t.Errorf("transient error not passed on for the pipeline to retry: %v", err)
	}
}

// The builtin pre-pass reports the leaked key the model missed; a finding
// the model reported too (same file, line, category) is not doubled; a
// "nothing to report" skip does not survive it.
func TestLadderPrePassMergesBuiltinFindings(t *testing.T) {
	s := &scripted{t: t, steps: []step{{calls: []review.ToolCall{skipLGTM}}}}
	run := newRun(t)
	l := agent.NewLadder(agent.Config{Kind: "llm"}, s, nil)
	out, err := l.Run(context.Background(), run, agent.Target{Revision: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Result.Problems) != 1 || out.Result.Problems[0].Line != 4 || out.Result.Problems[0].Category != builtin.CategoryCredential {
		t.Fatalf("problems %+v", out.Result.Problems)
	}
	if out.Result.Skip != nil {
		t.Errorf("lgtm skip kept beside a leaked key: %+v", out.Result.Skip)
	}

	same := call(review.ToolReportProblem, map[string]any{"file": "main.go", "line": 4, "severity": "high",
		"category": builtin.CategoryCredential, "message": "the model's words for the key"})
	s = &scripted{t: t, steps: []step{{calls: []review.ToolCall{same, printlnUB, summary}}}}
	out, err = agent.NewLadder(agent.Config{Kind: "llm"}, s, nil).Run(context.Background(), newRun(t), agent.Target{Revision: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Result.Problems) != 2 || out.Result.Problems[0].Message != "the model's words for the key" {
		t.Errorf("duplicate merged: %+v", out.Result.Problems)
	}
	if l := agent.NewLadder(agent.Config{Kind: builtin.Kind}, s, nil); l.PrePass != nil {
		t.Errorf("the builtin agent runs the builtin checks twice")
	}
}

func TestLadderRepoRules(t *testing.T) {
	repo := &fakeRepo{files: map[string]string{agent.RepoRulesFile: "Flag every TODO.\n"}}
	s := &scripted{t: t, steps: []step{{calls: []review.ToolCall{skipLGTM}}}}
	run, out, err := runLadder(t, s, agent.Target{Revision: "7", Replayer: repo})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(run.RepoRulesPath())
	if err != nil || string(got) != "Flag every TODO.\n" || !out.RepoRules {
		t.Errorf("rules %q %v %v", got, err, out.RepoRules)
	}
	if !containsString(repo.asked, "cat "+agent.RepoRulesFile+"@7") {
		t.Errorf("rules not read at the reviewed revision: %v", repo.asked)
	}

	repo = &fakeRepo{files: map[string]string{agent.RepoRulesFile: strings.Repeat("x", 100<<10)}}
	s = &scripted{t: t, steps: []step{{calls: []review.ToolCall{skipLGTM}}}}
	run, _, err = runLadder(t, s, agent.Target{Revision: "7", Replayer: repo})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(run.RepoRulesPath()); err != nil || fi.Size() != 16<<10 {
		t.Errorf("oversized rules not capped: %v %v", fi, err)
	}

	s = &scripted{t: t, steps: []step{{calls: []review.ToolCall{skipLGTM}}}}
	run, out, err = runLadder(t, s, agent.Target{Revision: "7", Replayer: &fakeRepo{}})
	if _, serr := os.Stat(run.RepoRulesPath()); err != nil || !errors.Is(serr, os.ErrNotExist) || out.RepoRules {
		t.Errorf("rules file without rules: %v %v", serr, err)
	}
}

// The real builtin agent with its review tools: one pass, the key found.
func TestLadderWithBuiltinAgent(t *testing.T) {
	b, err := builtin.New(builtin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := newRun(t)
	// The repository has instructions, but the builtin checks never read
	// them: fetching them cost three VCS processes per review for nothing.
	repo := &fakeRepo{files: map[string]string{agent.RepoRulesFile: "Flag every TODO.\n"}}
	timed := agent.WithTimeout(b, time.Hour)
	out, err := agent.NewLadder(agent.Config{Kind: builtin.Kind}, timed, nil).Run(ctx, run, agent.Target{Revision: "7", Replayer: repo})
	if err != nil {
		t.Fatal(err)
	}
	if out.Passes != 1 || out.Stats.Agent != builtin.Kind || len(out.Result.Problems) != 1 || out.Result.Problems[0].Line != 4 {
		t.Errorf("outcome %+v", out)
	}
	if len(repo.asked) != 0 || out.RepoRules {
		t.Errorf("the builtin ladder read the repository: %v (repo rules %v)", repo.asked, out.RepoRules)
	}
	if bytes.Contains(mustRead(t, run.StatePath()), []byte(leakedKey)) {
		t.Errorf("the state file quotes the key")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A model that used up max_problems does not crowd out the pre-pass's
// credential finding.
func TestLadderPrePassGetsRoomAboveTheProblemLimit(t *testing.T) {
	s := &scripted{t: t, steps: []step{{calls: []review.ToolCall{printlnUB, summary}}}}
	l := agent.NewLadder(agent.Config{Kind: "llm", MaxProblems: 1}, s, nil)
	out, err := l.Run(context.Background(), newRun(t), agent.Target{Revision: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Result.Problems) != 2 || out.Rejected != 0 {
		t.Errorf("problems %+v, rejected %d", out.Result.Problems, out.Rejected)
	}
}

// A repair that repeats the unbacked claim gets no report published.
func TestLadderFailsWhenTheClaimIsRepeated(t *testing.T) {
	claim := call(review.ToolPublishSummary, map[string]any{"markdown": "Found 2 critical bugs in main.go."})
	again := call(review.ToolPublishSummary, map[string]any{"markdown": "There are several serious issues."})
	s := &scripted{t: t, steps: []step{{calls: []review.ToolCall{claim}}, {calls: []review.ToolCall{again}}}}
	_, out, err := runLadder(t, s, agent.Target{Revision: "7"})
	if !errors.Is(err, agent.ErrNoResult) || !strings.Contains(err.Error(), "claims problems") {
		t.Fatalf("err %v", err)
	}
	if !containsString(out.Steps, "summary-withdrawn") {
		t.Errorf("steps %v", out.Steps)
	}
}

// A model pass that fails (a refused key, a refused request, no result)
// hands back the pre-pass findings, validated, for the pipeline's partial
// review; what the model recorded before failing is not among them, and a
// ladder without a pre-pass has none.
func TestLadderFailureKeepsThePrePassFindings(t *testing.T) {
	modelFinding := call(review.ToolReportProblem, map[string]any{"file": "main.go", "line": 2, "severity": "medium",
		"category": "logic", "message": "the model's finding"})
	for name, steps := range map[string][]step{
		"refused key":     {{err: fmt.Errorf("401 invalid key: %w", llm.ErrAuth)}},
		"refused request": {{err: fmt.Errorf("404 no such model: %w", llm.ErrBadRequest)}},
		"no result":       {{text: "hmm"}, {text: "still thinking"}},
		"failed follow-up": {{calls: []review.ToolCall{modelFinding, call(review.ToolFetchMoreContext, map[string]any{"path": "main.go", "reason": "more"})}},
			{err: fmt.Errorf("503: %w", llm.ErrTransient)}},
	} {
		s := &scripted{t: t, steps: steps}
		out, err := agent.NewLadder(agent.Config{Kind: "llm"}, s, nil).Run(context.Background(), newRun(t), agent.Target{Revision: "7"})
		if err == nil {
			t.Fatalf("%s: the ladder succeeded", name)
		}
		if out.Partial == nil || len(out.Partial.Problems) != 1 || out.Partial.Problems[0].Line != 4 ||
			out.Partial.Problems[0].Category != builtin.CategoryCredential || out.Partial.Problems[0].Fingerprint == "" {
			t.Errorf("%s: partial = %+v", name, out.Partial)
		}
	}
	s := &scripted{t: t, steps: []step{{err: fmt.Errorf("401 invalid key: %w", llm.ErrAuth)}}}
	if _, out, err := runLadder(t, s, agent.Target{Revision: "7"}); err == nil || out.Partial != nil {
		t.Errorf("no pre-pass, yet a partial result: %+v (%v)", out.Partial, err)
	}
}

// A review that has spent its max_input_tokens_per_review starts no
// further pass: what the first pass recorded is the result, with the
// reason, and the pass got the cap as its allowance to stop between turns.
func TestLadderStopsAtTheReviewCap(t *testing.T) {
	s := &scripted{t: t, steps: []step{{
		check: func(t *testing.T, p pass.Pass) {
			if p.Allowance.PromptTokens != 100 || p.Allowance.CostUSD != 0 {
				t.Errorf("allowance %+v, want the whole cap of 100 prompt tokens", p.Allowance)
			}
		},
		// A problem and a request for context, but no summary: without the
		// cap the ladder would run a follow-up and then a repair pass.
		calls: []review.ToolCall{printlnUB, call(review.ToolFetchMoreContext, map[string]any{"path": "main.go",
			"range": map[string]int{"start_line": 1, "end_line": 2}, "reason": "more"})},
	}}}
	run := newRun(t)
	// The scripted pass sends 100 prompt tokens: the cap is spent.
	l := &agent.Ladder{Agent: s, Caps: agent.Caps{MaxPromptTokens: 100}}
	out, err := l.Run(context.Background(), run, agent.Target{Revision: "7", Replayer: &fakeRepo{files: map[string]string{"main.go": "x\n"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.passes) != 1 || out.Passes != 1 {
		t.Fatalf("%d passes, want 1", len(s.passes))
	}
	if want := "stopped at the review's limit of 100 prompt tokens (agent.max_input_tokens_per_review)"; out.Stopped != want {
		t.Errorf("stopped %q, want %q", out.Stopped, want)
	}
	if len(out.Result.Problems) != 1 || out.Result.Problems[0].Line != 5 {
		t.Errorf("result %+v, want the first pass's problem", out.Result)
	}
	// A cost cap prices the passes at the caps' prices.
	s = &scripted{t: t, steps: []step{{calls: []review.ToolCall{printlnUB}}}}
	l = &agent.Ladder{Agent: s, Caps: agent.Caps{MaxCostUSD: 0.0002, Prices: agent.Prices{PerMTokIn: 1, PerMTokOut: 10}}}
	out, err = l.Run(context.Background(), newRun(t), agent.Target{Revision: "7"})
	if err != nil || len(s.passes) != 1 || out.Stopped != "stopped at the review's cost limit of $0.0002 (agent.max_cost_per_review)" {
		t.Errorf("cost cap: %d passes, stopped %q, %v", len(s.passes), out.Stopped, err)
	}
}
