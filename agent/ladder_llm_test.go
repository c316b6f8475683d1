package agent_test

// The ladder's steps with the real llm agent, its SDK client and the
// scripted model server: what the model sees in each pass and what the
// review comes to.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/prompt"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

const ladderSource = "package svc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"

// ladderRun is a run directory with one new file whose line 4 is wrong,
// and its diff padded with filler so a clipped prompt is visibly smaller.
func ladderRun(t *testing.T, filler int) rundir.Layout {
	t.Helper()
	run := rundir.New(t.TempDir())
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	lines := 5 + filler
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "9", Author: "dave", Description: "add Add",
		Files: []vcs.FileChange{{Path: "svc/add.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 1, End: lines}}, Hunks: []vcs.LineRange{{Start: 1, End: lines}}}}}
	if err := run.WriteChange(change); err != nil {
		t.Fatal(err)
	}
	src := ladderSource + strings.Repeat("// filler\n", filler)
	path, _ := run.SrcPath("svc/add.go")
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte(src), 0o644)
	var diff strings.Builder
	diff.WriteString("Index: svc/add.go\n--- svc/add.go\n+++ svc/add.go\n@@ -0,0 +1," + strconv.Itoa(lines) + " @@\n")
	for _, l := range strings.SplitAfter(strings.TrimSuffix(src, "\n"), "\n") {
		diff.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	os.WriteFile(run.DiffPath(), []byte(diff.String()), 0o644)
	return run
}

func llmLadder(t *testing.T, sim *modelsim.Server) *agent.Ladder {
	t.Helper()
	a, err := agent.New(agent.Config{Kind: "llm", LLM: llm.Config{API: llm.APIOpenAIChat, BaseURL: sim.URL, Model: "scripted"}}, agent.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	return &agent.Ladder{Agent: a}
}

func simCall(name, args string) modelsim.ToolCall {
	return modelsim.ToolCall{Name: name, Arguments: args}
}

const reportLine4 = `{"file":"svc/add.go","line":4,"severity":"high","category":"correctness","message":"Add subtracts."}`

// Prose only, twice: the repair pass says what is missing, and the
// model's "no problems" becomes an lgtm skip.
func TestLadderLLMProseIsNormalized(t *testing.T) {
	sim := modelsim.Start(t,
		modelsim.Step{Text: "I looked at it. No problems found."},
		modelsim.Step{Text: "No problems found.", Check: func(r modelsim.Request) error {
			if !strings.Contains(r.Messages[0].Text, "repair") || !strings.Contains(r.Messages[0].Text, "aicr_skip") {
				return errors.New("the repair pass must say what is missing, with the tool names as offered")
			}
			return nil
		}},
	)
	out, err := llmLadder(t, sim).Run(context.Background(), ladderRun(t, 0), agent.Target{Revision: "9"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Skip == nil || out.Result.Skip.Reason != review.SkipReasonLGTM || out.Passes != 2 || out.Stats.Turns != 2 {
		t.Errorf("outcome %+v", out)
	}
	if err := sim.Err(); err != nil {
		t.Error(err)
	}
}

// A summary that claims problems nobody reported gets a repair pass; the
// model reports the problem there.
func TestLadderLLMDishonestSummaryIsRepaired(t *testing.T) {
	sim := modelsim.Start(t,
		modelsim.Step{ToolCalls: []modelsim.ToolCall{simCall("aicr_publish_summary", `{"markdown":"Found 1 critical bug in Add."}`)}},
		modelsim.Step{ToolCalls: []modelsim.ToolCall{simCall("aicr_report_problem", reportLine4), simCall("aicr_publish_summary", `{"markdown":"Found 1 critical bug in Add."}`)},
			Check: func(r modelsim.Request) error {
				if !strings.Contains(r.Messages[0].Text, "claims problems") {
					return errors.New("the repair pass must name the unbacked claim")
				}
				return nil
			}},
	)
	out, err := llmLadder(t, sim).Run(context.Background(), ladderRun(t, 0), agent.Target{Revision: "9"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Result.Problems) != 1 || out.Result.Problems[0].Line != 4 || out.Passes != 2 {
		t.Errorf("outcome %+v", out)
	}
	if err := sim.Err(); err != nil {
		t.Error(err)
	}
}

// The server reports a context overflow: the same pass once more with a
// clipped prompt, which fits.
func TestLadderLLMContextOverflowRetriesClipped(t *testing.T) {
	sim := modelsim.Start(t,
		modelsim.Step{ErrorType: "context_length_exceeded"},
		modelsim.Step{ToolCalls: []modelsim.ToolCall{simCall("aicr_skip", `{"reason":"lgtm"}`)}},
	)
	out, err := llmLadder(t, sim).Run(context.Background(), ladderRun(t, 2000), agent.Target{Revision: "9"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := sim.Requests()
	if len(reqs) != 2 || len(reqs[1].Messages[0].Text) > len(reqs[0].Messages[0].Text)*6/10 {
		t.Fatalf("%d requests; the retry must be clipped to about half", len(reqs))
	}
	if !strings.Contains(strings.Join(out.Steps, ","), "clip-retry") || out.Result.Skip == nil {
		t.Errorf("outcome %+v", out)
	}
}

// Rate limits and refused keys keep their class through the ladder, for
// the daemon's retry decision.
func TestLadderLLMModelErrorsKeepTheirClass(t *testing.T) {
	for _, tc := range []struct {
		step modelsim.Step
		want error
	}{
		{modelsim.Step{Status: 429, ErrorType: "rate_limit_exceeded"}, llm.ErrTransient},
		{modelsim.Step{Status: 500}, llm.ErrTransient},
		{modelsim.Step{Status: 401, ErrorType: "invalid_api_key"}, llm.ErrAuth},
	} {
		t.Run(tc.want.Error(), func(t *testing.T) {
			sim := modelsim.Start(t, tc.step)
			_, err := llmLadder(t, sim).Run(context.Background(), ladderRun(t, 0), agent.Target{Revision: "9"})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// The team's dismissals, left in the run directory by the daemon's
// reviewer, reach the model through the real SDK client: in the user
// message, after the change, and never in the system prompt.
func TestLadderLLMPromptListsDismissals(t *testing.T) {
	sim := modelsim.Start(t,
		modelsim.Step{ToolCalls: []modelsim.ToolCall{simCall("aicr_skip", `{"reason":"lgtm"}`)}, Check: func(r modelsim.Request) error {
			user := r.Messages[0].Text
			for _, want := range []string{"## Dismissed findings (untrusted data)", "svc/add.go, line 4, correctness, dismissed as a false positive",
				"Finding: Add subtracts.", "Reason: the name is historical; callers rely on it"} {
				if !strings.Contains(user, want) {
					return errors.New("the user message lacks " + strconv.Quote(want))
				}
			}
			if strings.Index(user, "## Dismissed findings") < strings.Index(user, "### Diff") {
				return errors.New("the dismissals come before the change")
			}
			if strings.Contains(r.System, "Add subtracts") {
				return errors.New("a dismissal reached the system prompt")
			}
			return nil
		}},
	)
	run := ladderRun(t, 0)
	err := prompt.WriteDismissals(run.DismissedPath(), []prompt.Dismissal{{Path: "svc/add.go", Line: 4, Category: "correctness",
		Message: "Add subtracts.", Reason: "false_positive", Note: "the name is historical; callers rely on it"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llmLadder(t, sim).Run(context.Background(), run, agent.Target{Revision: "9"}); err != nil {
		t.Fatal(err)
	}
	if err := sim.Err(); err != nil {
		t.Error(err)
	}
	if n := len(sim.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
}
