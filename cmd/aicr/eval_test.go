package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aicr-dev/aicr/eval"
	"github.com/aicr-dev/aicr/eval/builtin"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/internal/svntest"
)

func TestEvalFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"builtin"}, 0, ""},
		{[]string{"builtin", "--format", "table", "--repeat", "3", "--agent-config", "a.toml", "--agent-config", "b.toml"}, 0, ""},
		{[]string{}, 2, "accepts 1 arg"},
		{[]string{"builtin", "--repeat", "0"}, 2, "--repeat must be at least 1"},
		{[]string{"builtin", "--format", "yaml"}, 2, "--format must be text or json"},
		{[]string{"builtin", "--judge-config", "j.toml"}, 2, "--judge-config needs --judge"},
		{[]string{"builtin", "--min-f1", "1.5"}, 2, "--min-f1 1.500: a score is between 0 and 1"},
		{[]string{"builtin", "--parallel", "0"}, 2, "--parallel must be at least 1"},
	} {
		opts, _, code, errOut := parseOpts(t, newCmdEval, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, want %d; stderr %q", tc.args, code, tc.code, errOut)
			continue
		}
		if code == 0 && len(tc.args) > 1 && tc.args[1] == "--format" {
			if opts.Format != formatText || opts.Repeat != 3 || len(opts.AgentConfigs) != 2 || opts.MinF1 != -1 {
				t.Errorf("options %+v", opts)
			}
		}
	}
}

// Done-when: `aicr eval builtin` with the builtin agent: it finds only
// credentials and conflict markers, every review succeeds, and the
// figures come out as JSON; --min-f1 above them fails with exit 3
// naming the config and the figure.
func TestEvalBuiltinSuiteWithBuiltinAgent(t *testing.T) {
	svntest.Require(t)
	start := time.Now()
	out, errOut, code := runCLI(t, "eval", "builtin", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	t.Logf("aicr eval builtin (builtin agent): %s wall", time.Since(start).Round(time.Millisecond))
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s, err := eval.LoadSuite(builtin.FS())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Suite != "builtin" || rep.Cases != len(s.Cases) || len(rep.Columns) != 1 || rep.Columns[0].Agent != "builtin" {
		t.Fatalf("report %+v", rep)
	}
	c := rep.Columns[0]
	if c.Failed != 0 {
		t.Errorf("%d reviews failed", c.Failed)
	}
	sc := c.Heuristic.First
	for cat, cs := range sc.Categories {
		rules := cat == "leaked-credential" || cat == "conflict-marker"
		if !rules && cs.Found != 0 {
			t.Errorf("the builtin agent found %d %s findings: it has no rule for them", cs.Found, cat)
		}
		if rules && cs.Found == 0 {
			t.Errorf("the builtin agent found none of the %d %s findings", cs.Golden, cat)
		}
	}
	if sc.TP+sc.FN != rep.Golden || sc.TP == 0 {
		t.Errorf("score %+v of %d golden", sc, rep.Golden)
	}
	if c.Cost.Requests != 0 || c.Cost.USD == nil || *c.Cost.USD != 0 || c.Cost.Passes != rep.Cases {
		t.Errorf("cost %+v: the builtin agent makes no request and costs nothing", c.Cost)
	}

	_, errOut, code = runCLI(t, "eval", "builtin", "--min-f1", "0.99", "--min-recall", "0")
	if code != exitGate {
		t.Fatalf("gate: exit %d, want %d\n%s", code, exitGate, errOut)
	}
	if !regexp.MustCompile(`gate failed: base: f1 0\.\d{3} \(heuristic\) is below --min-f1 0\.990`).MatchString(errOut) || strings.Contains(errOut, "recall") {
		t.Errorf("gate message:\n%s", errOut)
	}
}

// Two llm configs on the simulator beside the builtin agent, with the
// HTML page:
// "careful" reports the golden finding of every other defect case and
// nothing else, "noisy" every golden finding plus a style remark on
// every case: careful has the better precision, noisy the recall of 1
// and every clean case flagged. The page is self-contained and shows both plots.
func TestEvalCompareTwoModelsHTML(t *testing.T) {
	svntest.Require(t)
	s, err := eval.LoadSuite(builtin.FS())
	if err != nil {
		t.Fatal(err)
	}
	careful := &modelsim.EvalReviewer{First: modelsim.Usage{Input: 3000, Output: 120}}
	noisy := &modelsim.EvalReviewer{First: modelsim.Usage{Input: 5200, Output: 400}}
	seen := map[string]bool{}
	defects := 0
	for _, c := range s.Cases {
		match := strings.SplitN(c.Message, "\n", 2)[0]
		if seen[match] {
			t.Fatalf("two cases share the commit subject %q: the script cannot tell them apart", match)
		}
		seen[match] = true
		var found, all []modelsim.EvalProblem
		for _, g := range c.Golden {
			p := modelsim.EvalProblem{File: g.File, Line: g.StartLine, Severity: "high", Category: g.Category,
				Message: g.Description + " " + strings.Join(g.Keywords, " ")}
			all = append(all, p)
			if defects%2 == 0 {
				found = append(found, p)
			}
		}
		if !c.Clean {
			defects++
		}
		first := firstChangedFile(t, c)
		noise := modelsim.EvalProblem{File: first.file, Line: first.line, Severity: "low", Category: "style", Message: "consider a clearer name here"}
		careful.Cases = append(careful.Cases, modelsim.EvalCase{Match: match, Answers: [][]modelsim.EvalProblem{found}})
		noisy.Cases = append(noisy.Cases, modelsim.EvalCase{Match: match, Answers: [][]modelsim.EvalProblem{append(all, noise)}})
	}
	dir := t.TempDir()
	cfgA := evalLLMConfig(t, dir, "careful", modelsim.StartFunc(t, careful.Respond), 0.4, 1.6)
	cfgB := evalLLMConfig(t, dir, "noisy", modelsim.StartFunc(t, noisy.Respond), 3, 15)
	rules := filepath.Join(dir, "rules-only.toml")
	if err := os.WriteFile(rules, []byte("[agent]\nkind = \"builtin\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	htmlDir := filepath.Join(dir, "html")
	start := time.Now()
	out, errOut, code := runCLI(t, "eval", "builtin", "--agent-config", rules, "--agent-config", cfgA, "--agent-config", cfgB, "--html", htmlDir, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	t.Logf("aicr eval builtin, two llm configs on the simulator, %d cases each: %s wall", len(s.Cases), time.Since(start).Round(time.Millisecond))
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Columns) != 3 || rep.Columns[0].Name != "rules-only" || rep.Columns[1].Name != "careful" || rep.Columns[2].Name != "noisy" {
		t.Fatalf("columns %+v", rep.Columns)
	}
	rep.Columns = rep.Columns[1:]
	a, b := rep.Columns[0].Heuristic.First, rep.Columns[1].Heuristic.First
	// Both also carry the builtin pre-pass's findings (every conflict
	// marker line, a credential), as production does.
	if a.TP == 0 || a.TP >= b.TP || a.Recall >= 1 || b.FN != 0 || a.FP >= b.FP || a.Precision <= b.Precision ||
		a.CleanFlagged != 0 || b.CleanFlagged != b.CleanCases {
		t.Errorf("careful %+v\nnoisy %+v", a, b)
	}
	if rep.Columns[0].Cost.USD == nil || rep.Columns[1].Cost.USD == nil || *rep.Columns[0].Cost.USD >= *rep.Columns[1].Cost.USD {
		t.Errorf("costs %+v %+v", rep.Columns[0].Cost, rep.Columns[1].Cost)
	}
	page, err := os.ReadFile(filepath.Join(htmlDir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	if strings.Count(html, "<svg") != 2 || !strings.Contains(html, "<td>rules-only</td>") || !strings.Contains(html, "<td>careful</td>") || !strings.Contains(html, "<td>noisy</td>") {
		t.Errorf("page lacks the plots or the configs:\n%.2000s", html)
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?https?:|@import`).FindString(html); m != "" {
		t.Errorf("the page fetches an external asset: %q", m)
	}
	screenshotEval(t, filepath.Join(htmlDir, "index.html"))
}

type place struct {
	file string
	line int
}

// firstChangedFile is a line the validator anchors: the last line of the
// first file the change adds or alters.
func firstChangedFile(t *testing.T, c *eval.Case) place {
	t.Helper()
	var p place
	err := walkFiles(c, func(name string, after, before []byte, inBefore bool) bool {
		if inBefore && string(after) == string(before) {
			return true
		}
		lines := strings.Split(strings.TrimRight(string(after), "\n"), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if !inBefore || !strings.Contains(string(before), lines[i]) {
				p = place{name, i + 1}
				return false
			}
		}
		return true
	})
	if err != nil || p.file == "" {
		t.Fatalf("case %s: no changed line found (%v)", c.ID, err)
	}
	return p
}

// walkFiles calls f for each file of c's after tree with its before
// version, in path order, until f returns false.
func walkFiles(c *eval.Case, f func(name string, after, before []byte, inBefore bool) bool) error {
	stop := errors.New("stop")
	err := fs.WalkDir(c.After, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		after, err := fs.ReadFile(c.After, p)
		if err != nil {
			return err
		}
		before, berr := fs.ReadFile(c.Before, p)
		if !f(p, after, before, berr == nil) {
			return stop
		}
		return nil
	})
	if errors.Is(err, stop) {
		return nil
	}
	return err
}

func evalLLMConfig(t *testing.T, dir, name string, sim *modelsim.Server, in, out float64) string {
	t.Helper()
	t.Setenv("AICR_EVAL_KEY_"+strings.ToUpper(name), "sk-"+name)
	p := filepath.Join(dir, name+".toml")
	body := fmt.Sprintf("[agent]\nkind = \"llm\"\n\n[agent.llm]\napi = \"openai-chat\"\nbase_url = %q\nmodel = %q\napi_key_env = %q\nprice_per_mtok_in = %g\nprice_per_mtok_out = %g\n",
		sim.URL, "sim-"+name, "AICR_EVAL_KEY_"+strings.ToUpper(name), in, out)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// screenshotEval opens the page in headless Chromium and checks that
// both plots render; with AICR_UPDATE_SCREENSHOTS=1 the screenshot is
// the README's docs/img/eval-compare.png.
func screenshotEval(t *testing.T, page string) {
	t.Helper()
	exe := ""
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		if os.Getenv("AICR_REQUIRE_BROWSER") == "1" {
			t.Fatal("chromium is not installed; AICR_REQUIRE_BROWSER=1 makes that a failure")
		}
		t.Log("chromium is not installed: the page is not rendered")
		return
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless,
		chromedp.WindowSize(1140, 900), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(bctx, 60*time.Second)
	defer cancelT()
	if _, err := chromedp.Run(ctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	widths, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`Array.from(document.querySelectorAll("svg")).map(s => s.getBoundingClientRect().width)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(widths) != 2 || widths[0] < 200 || widths[1] < 200 {
		t.Errorf("rendered plots %v", widths)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("AICR_UPDATE_SCREENSHOTS") == "1" {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "img", "eval-compare.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The offline benchmark's layout: golden comments that name no file or
// line are refused without --judge, and with it scored by the judge on
// the simulator; the PR without trees is named and left out.
func TestEvalBenchmarkWithJudge(t *testing.T) {
	svntest.Require(t)
	bench := t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(bench, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("golden_comments/grafana.json", `[
 {"pr_title": "Limiter: count devices", "url": "https://github.com/grafana/grafana/pull/7",
  "comments": [{"comment": "Two requests can pass the device limit check at once.", "severity": "High", "category": "concurrency"},
               {"comment": "The error from Tag is dropped.", "severity": "Low", "category": "bug"}]},
 {"pr_title": "Not downloaded", "url": "https://github.com/grafana/grafana/pull/8", "comments": [{"comment": "x", "severity": "Low"}]}
]`)
	write("trees/grafana/7/base/pkg/anon/limit.go", "package anon\n\nconst limit = 10\n")
	write("trees/grafana/7/head/pkg/anon/limit.go", "package anon\n\nconst limit = 10\n\nfunc allow(n int) bool {\n\treturn n < limit\n}\n")
	rev := &modelsim.EvalReviewer{First: modelsim.Usage{Input: 800, Output: 60},
		Cases: []modelsim.EvalCase{{Match: "pkg/anon/limit.go", Answers: [][]modelsim.EvalProblem{{
			{File: "pkg/anon/limit.go", Line: 6, Category: "race", Message: "concurrent callers can both pass the limit check"},
			{File: "pkg/anon/limit.go", Line: 5, Category: "style", Message: "allow needs a doc comment"},
		}}}},
		Judge: func(prompt string) bool {
			return strings.Contains(prompt, "device limit check") && strings.Contains(prompt, "both pass the limit check")
		}}
	cfg := evalLLMConfig(t, t.TempDir(), "judged", modelsim.StartFunc(t, rev.Respond), 1, 4)

	if _, errOut, code := runCLI(t, "eval", bench, "--config", cfg); code != exitUsage || !strings.Contains(errOut, "only --judge can score them") {
		t.Fatalf("without --judge: exit %d\n%s", code, errOut)
	}
	out, errOut, code := runCLI(t, "eval", bench, "--config", cfg, "--judge")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "left out grafana PR 8") {
		t.Errorf("the missing PR is not named:\n%s", errOut)
	}
	// Judge: 1 of 2 comments found, 1 of 2 reports right; heuristic: 0.
	if !regexp.MustCompile(`base\s+llm\s+0\s+2\s+2\s+0\.000\s+0\.000\s+0\.000\s+0\.500\s+0\.500\s+0\.500`).MatchString(out) ||
		!strings.Contains(out, "prompt "+eval.JudgePromptVersion) {
		t.Errorf("table:\n%s", out)
	}
}

// A mistake in an agent config is a usage error naming the file and the
// line before anything is replayed; a file with other tables is refused.
func TestEvalBadAgentConfig(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[agent]\nkind = \"llm\"\n\n[agent.llm]\napi = \"openai-chat\"\nmodel = \"m\"\nbase_url = \"not a url\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCLI(t, "eval", "builtin", "--agent-config", bad)
	if code != exitUsage || !strings.Contains(errOut, bad+":7") || !strings.Contains(errOut, "agent.llm.base_url") {
		t.Errorf("exit %d\n%s", code, errOut)
	}
	other := filepath.Join(dir, "other.toml")
	if err := os.WriteFile(other, []byte("[agent]\nkind = \"builtin\"\n[[channel]]\nname = \"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, "eval", "builtin", "--agent-config", other); code != exitUsage || !strings.Contains(errOut, "an agent config holds only [agent], [agent.llm] and [sandbox]") {
		t.Errorf("exit %d\n%s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "eval", filepath.Join(dir, "nope")); code != exitUsage || !strings.Contains(errOut, "give a suite directory or \"builtin\"") {
		t.Errorf("exit %d\n%s", code, errOut)
	}
}

// A column whose reviews fail (the model server refuses the key) exits
// 1, each failure named: figures that count failures as "found nothing"
// must not pass a CI gate.
func TestEvalFailedReviewsExitOne(t *testing.T) {
	svntest.Require(t)
	sim := modelsim.StartFunc(t, (&modelsim.EvalReviewer{}).Respond)
	sim.RequireKey("sk-the-right-one")
	cfg := evalLLMConfig(t, t.TempDir(), "refused", sim, 1, 1)
	out, errOut, code := runCLI(t, "eval", "builtin", "--cases", "c-clean-*", "--agent-config", cfg, "--min-f1", "0")
	if code != exitError {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	if !regexp.MustCompile(`failed: refused repeat 1 case c-clean-\S+: .*api_key_env`).MatchString(out) || !strings.Contains(errOut, "review(s) failed") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errOut)
	}
	if strings.Contains(out+errOut, "sk-refused") {
		t.Error("the key is printed")
	}
}
