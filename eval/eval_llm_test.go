package eval_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/eval"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/internal/svntest"
)

// scriptedSuite writes a suite of defects defect cases and clean clean
// cases, each adding one file of 30 lines (all of them in the diff, so
// the validator anchors any line); every defect case's golden finding is
// lines 5–6 of its file, keywords "bound".
func scriptedSuite(t *testing.T, defects, clean int) string {
	t.Helper()
	root := t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("suite.toml", "name = \"scripted\"\nversion = \"1\"\n")
	var body strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&body, "int v%d = %d;\n", i, i)
	}
	for i := range defects + clean {
		id := fmt.Sprintf("case-%02d", i)
		file := fmt.Sprintf("mod%02d/unit%02d.c", i, i)
		write(filepath.Join("cases", id, "after", file), body.String())
		if i < defects {
			write(filepath.Join("cases", id, "case.toml"), fmt.Sprintf(`id = %q
language = "c"
title = "defect %d"
message = "add unit %d"
[[golden]]
file = %q
start_line = 5
end_line = 6
category = "off-by-one"
keywords = ["bound"]
description = "the loop bound is one too far"
`, id, i, i, file))
		} else {
			write(filepath.Join("cases", id, "case.toml"), fmt.Sprintf("id = %q\nlanguage = \"c\"\ntitle = \"clean %d\"\nmessage = \"add unit %d\"\nclean = true\n", id, i, i))
		}
	}
	return root
}

func unitFile(i int) string { return fmt.Sprintf("mod%02d/unit%02d.c", i, i) }

func golden(i int) modelsim.EvalProblem {
	return modelsim.EvalProblem{File: unitFile(i), Line: 5, Category: "off-by-one", Message: "the loop bound runs one past the end"}
}

func wrongLine(i int) modelsim.EvalProblem {
	return modelsim.EvalProblem{File: unitFile(i), Line: 20, Category: "off-by-one", Message: "the loop bound runs one past the end [same]"}
}

func noise(i int) modelsim.EvalProblem {
	return modelsim.EvalProblem{File: unitFile(i), Line: 12, Category: "style", Message: "name this variable better"}
}

// llmColumn writes an agent config for the scripted model server.
func llmColumn(t *testing.T, sim *modelsim.Server, name string) eval.Column {
	t.Helper()
	t.Setenv("AICR_EVAL_TEST_KEY", "sk-eval-test")
	p := filepath.Join(t.TempDir(), name+".toml")
	cfg := fmt.Sprintf(`[agent]
kind = "llm"

[agent.llm]
api = "openai-chat"
base_url = %q
model = "scripted-%s"
api_key_env = "AICR_EVAL_TEST_KEY"
price_per_mtok_in = 2.0
price_per_mtok_out = 10.0
`, sim.URL, name)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cols, err := eval.Columns("", []string{p})
	if err != nil {
		t.Fatal(err)
	}
	return cols[0]
}

// The scripted model reports the golden finding on half the defect
// cases, the right file but a wrong line on a quarter, nothing on the
// last quarter, and one finding on one clean case of four:
// TP 4, FP 2+1, FN 4 → precision 4/7, recall 1/2.
func TestEvaluateScriptedModel(t *testing.T) {
	svntest.Require(t)
	suite, err := eval.LoadSuite(os.DirFS(scriptedSuite(t, 8, 4)))
	if err != nil {
		t.Fatal(err)
	}
	rev := &modelsim.EvalReviewer{First: modelsim.Usage{Input: 1000, Output: 80}, Closing: modelsim.Usage{Input: 1300, Output: 5}}
	for i := range 12 {
		c := modelsim.EvalCase{Match: unitFile(i)}
		switch {
		case i < 4:
			c.Answers = [][]modelsim.EvalProblem{{golden(i)}}
		case i < 6:
			c.Answers = [][]modelsim.EvalProblem{{wrongLine(i)}}
		case i == 8:
			c.Answers = [][]modelsim.EvalProblem{{noise(i)}}
		}
		rev.Cases = append(rev.Cases, c)
	}
	sim := modelsim.StartFunc(t, rev.Respond)
	col := llmColumn(t, sim, "model-a")
	rep, err := eval.Evaluate(context.Background(), suite, eval.Plan{Columns: []eval.Column{col}}, eval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Err(); err != nil {
		t.Fatal(err)
	}
	c := rep.Columns[0]
	s := c.Heuristic.First
	if c.Failed != 0 {
		t.Fatalf("failed reviews: %+v", c.Repeats[0].Cases)
	}
	if s.TP != 4 || s.FP != 3 || s.FN != 4 || s.CleanCases != 4 || s.CleanFlagged != 1 || s.CleanFP != 1 {
		t.Fatalf("score %+v", s)
	}
	p, r := 4.0/7, 0.5
	if !near(s.Precision, p) || !near(s.Recall, r) || !near(s.F1, 2*p*r/(p+r)) || !near(s.CleanShare, 0.25) {
		t.Errorf("P %.4f R %.4f F1 %.4f clean share %.2f", s.Precision, s.Recall, s.F1, s.CleanShare)
	}
	if cs := s.Categories["off-by-one"]; cs.Golden != 8 || cs.Found != 4 {
		t.Errorf("off-by-one %+v", cs)
	}

	// Every review is one pass of one request: every call and the
	// summary in one answer, which ends the pass. The prompt tokens may
	// be split into cached and not by the server; together they are what
	// the script reported.
	const reviews = 12
	if c.Cost.Passes != reviews || c.Cost.Requests != reviews {
		t.Errorf("passes %d requests %d, want %d of each", c.Cost.Passes, c.Cost.Requests, reviews)
	}
	if got := c.Cost.Input + c.Cost.CacheRead + c.Cost.CacheWrite; got != reviews*1000 {
		t.Errorf("prompt tokens %d, want %d", got, reviews*1000)
	}
	if c.Cost.Output != reviews*80 {
		t.Errorf("output tokens %d, want %d", c.Cost.Output, reviews*80)
	}
	if c.Cost.USD == nil {
		t.Fatal("no cost with prices configured")
	}
	// Priced as production prices it (agent.Prices.Cost); with no cached
	// tokens that is 2 $/Mtok in and 10 $/Mtok out.
	if c.Cost.CacheRead == 0 && c.Cost.CacheWrite == 0 {
		if want := float64(reviews*1000)*2/1e6 + float64(reviews*80)*10/1e6; !near(*c.Cost.USD, want) {
			t.Errorf("cost %.6f, want %.6f", *c.Cost.USD, want)
		}
	}
	if c.PerReview.Requests != 1 || c.PerReview.Wall <= 0 {
		t.Errorf("per review %+v", c.PerReview)
	}

	// The gate: F1 0.533 passes 0.5 and fails 0.6; recall 0.5 fails 0.51.
	if f := rep.Gate(0.5, 0.5); len(f) != 0 {
		t.Errorf("gate at 0.5: %v", f)
	}
	f := rep.Gate(0.6, 0.51)
	if len(f) != 2 || f[0].Figure != "f1" || f[1].Figure != "recall" || f[0].Column != "model-a" {
		t.Fatalf("gate %v", f)
	}
	if got := f[0].String(); got != "model-a: f1 0.533 (heuristic) is below --min-f1 0.600" {
		t.Errorf("gate message %q", got)
	}
}

// --repeat: a model that finds the golden finding on its first review of
// every case and misses it on its second has recall 1 then 0: mean 0.5,
// min 0, max 1, stddev 0.5.
func TestEvaluateRepeatSpread(t *testing.T) {
	svntest.Require(t)
	suite, err := eval.LoadSuite(os.DirFS(scriptedSuite(t, 2, 0)))
	if err != nil {
		t.Fatal(err)
	}
	rev := &modelsim.EvalReviewer{First: modelsim.Usage{Input: 100, Output: 10}, Closing: modelsim.Usage{Input: 110, Output: 1}}
	for i := range 2 {
		rev.Cases = append(rev.Cases, modelsim.EvalCase{Match: unitFile(i), Answers: [][]modelsim.EvalProblem{{golden(i)}, {}}})
	}
	sim := modelsim.StartFunc(t, rev.Respond)
	rep, err := eval.Evaluate(context.Background(), suite, eval.Plan{Columns: []eval.Column{llmColumn(t, sim, "flaky")}, Repeat: 2}, eval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Columns[0]
	if len(c.Repeats) != 2 || c.Repeats[0].Heuristic.Recall != 1 || c.Repeats[1].Heuristic.Recall != 0 {
		t.Fatalf("repeats %+v", c.Repeats)
	}
	r := c.Heuristic.Recall
	if r.Mean != 0.5 || r.Min != 0 || r.Max != 1 || r.Stddev != 0.5 {
		t.Errorf("recall spread %+v", r)
	}
	if c.Cost.Passes != 4 {
		t.Errorf("passes %d over 2 cases × 2 repeats", c.Cost.Passes)
	}
}

// The judge decides from the descriptions only: it accepts the wrong-line
// reports the heuristic refuses, and both scores are reported.
func TestEvaluateJudge(t *testing.T) {
	svntest.Require(t)
	suite, err := eval.LoadSuite(os.DirFS(scriptedSuite(t, 2, 0)))
	if err != nil {
		t.Fatal(err)
	}
	rev := &modelsim.EvalReviewer{First: modelsim.Usage{Input: 100, Output: 10}, Closing: modelsim.Usage{Input: 110, Output: 1},
		Judge: func(prompt string) bool { return strings.Contains(prompt, "[same]") }}
	rev.Cases = []modelsim.EvalCase{
		{Match: unitFile(0), Answers: [][]modelsim.EvalProblem{{wrongLine(0)}}},
		{Match: unitFile(1), Answers: [][]modelsim.EvalProblem{{noise(1)}}},
	}
	sim := modelsim.StartFunc(t, rev.Respond)
	col := llmColumn(t, sim, "judged")
	jc, err := eval.JudgeConfig(col.Path)
	if err != nil {
		t.Fatal(err)
	}
	judge, err := eval.NewJudge(jc)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eval.Evaluate(context.Background(), suite, eval.Plan{Columns: []eval.Column{col}, Judge: judge}, eval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Columns[0]
	if h := c.Heuristic.First; h.TP != 0 || h.FP != 2 {
		t.Errorf("heuristic %+v", h)
	}
	if c.Judged == nil {
		t.Fatal("no judged score")
	}
	if j := c.Judged.First; j.TP != 1 || j.FP != 1 || j.FN != 1 {
		t.Errorf("judged %+v", j)
	}
	if rep.Judge == nil || rep.Judge.PromptVersion != eval.JudgePromptVersion || rep.Judge.Calls != 2 {
		t.Errorf("judge info %+v", rep.Judge)
	}
	if sp, how := c.Score(); how != "judge" || sp.F1.Mean != 0.5 {
		t.Errorf("headline %s %+v", how, sp.F1)
	}
	// The judge saw both texts as data, with the fixed prompt.
	judged := 0
	for _, r := range sim.Requests() {
		if r.System == eval.JudgePrompt {
			judged++
			if !strings.Contains(r.Messages[0].Text, `"description": "the loop bound is one too far"`) {
				t.Errorf("judge prompt %q", r.Messages[0].Text)
			}
		}
	}
	if judged != 2 {
		t.Errorf("%d judge requests", judged)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
