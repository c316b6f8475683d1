package cli_test

// The harness every CLI's test uses: the real CLI installed from npm at
// its pinned version into a cache outside the repo, the static aicr
// binary as its MCP server, a run directory holding one change, and the
// scripted model server answering what a reviewing model would.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

// testKeyEnv holds the model server's key in the test process.
const (
	testKeyEnv = "AICR_TEST_CLI_KEY"
	testKey    = "sk-cli-test-6c1f0e"
	testModel  = "scripted-model"
)

// plantedFile holds the problem the scripted model reports.
const plantedFile = "src/calc.go"

// CacheDir is where tests install CLIs: outside the repo, kept between
// runs (AICR_CLI_CACHE overrides).
func cacheDir() string {
	if d := os.Getenv("AICR_CLI_CACHE"); d != "" {
		return d
	}
	return "/var/cache/aicr/agent-clis"
}

var (
	installMu   sync.Mutex
	installErrs = map[string]error{}
)

// installed installs kind's pinned package (once per process) and returns
// its prefix. When the npm registry cannot be reached the test is
// skipped with a clear message, except in CI (CI or AICR_REQUIRE_NPM
// set), where it fails: the adapters are only proven against the real CLIs.
func installed(t testing.TB, kind string) string {
	t.Helper()
	installMu.Lock()
	defer installMu.Unlock()
	a, _ := cli.Lookup(kind)
	prefix := cli.Prefix(cacheDir(), kind, a.Spec().Version)
	if err, done := installErrs[kind]; done {
		if err != nil {
			t.Fatal(err)
		}
		return prefix
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out strings.Builder
	_, err := cli.Install(ctx, cli.InstallOptions{Dir: cacheDir(), Kind: kind, Stdout: &out, Stderr: &out})
	if err != nil {
		if os.Getenv("CI") == "" && os.Getenv("AICR_REQUIRE_NPM") == "" && !registryReachable() {
			t.Skipf("the npm registry is unreachable, so %s cannot be installed (in CI this fails): %v", kind, err)
		}
		err = fmt.Errorf("install %s: %w\n%s", kind, err, out.String())
	}
	installErrs[kind] = err
	if err != nil {
		t.Fatal(err)
	}
	return prefix
}

func registryReachable() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "npm", "ping").Run() == nil
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// aicrBinary builds the static aicr binary once per test process.
func aicrBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "aicr-cli-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "aicr")
		cmd := exec.Command("go", "build", "-trimpath", "-o", binPath, "../../cmd/aicr")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("build aicr: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

const calcBefore = `package calc

// Sum adds the values.
func Sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total
}

// Mean is the average of xs.
`

const calcAfter = `package calc

// Sum adds the values.
func Sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total
}

// Mean is the average of xs.
func Mean(xs []int) int { return Sum(xs) / len(xs) }
`

// calcDiff adds line 13: Mean divides by zero for an empty slice.
const calcDiff = `Index: src/calc.go
===================================================================
--- src/calc.go	(revision 6)
+++ src/calc.go	(revision 7)
@@ -10,3 +10,4 @@
 }
 
 // Mean is the average of xs.
+func Mean(xs []int) int { return Sum(xs) / len(xs) }
`

// newRun is a run directory holding one SVN revision that adds Mean.
func newRun(t testing.TB) rundir.Layout {
	t.Helper()
	run := rundir.New(filepath.Join(t.TempDir(), "run"))
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	change := &vcs.Change{VCS: vcs.KindSVN, Repo: "calc", Revision: "7", Author: "alice",
		Date: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Description: "Add Mean",
		Files: []vcs.FileChange{{Path: plantedFile, Action: vcs.ActionModify, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 13, End: 13}}, Hunks: []vcs.LineRange{{Start: 10, End: 13}}}}}
	if err := run.WriteChange(change); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run.DiffPath(), []byte(calcDiff), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := run.SrcPath(plantedFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte(calcAfter), 0o644); err != nil {
		t.Fatal(err)
	}
	return run
}

// reviewLine is where Mean is in calcAfter.
const reviewLine = 13

// reportScenario is a reviewing model: offered the aicr tools, it reports
// the division by zero, then (seeing one tool result) publishes a
// summary, then ends with prose. A request without the aicr tools (a
// title, a classifier, a memory pass) gets plain text.
func reportScenario() func(modelsim.Request) modelsim.Step {
	return func(r modelsim.Request) modelsim.Step {
		report := r.Offered("report_problem")
		summary := r.Offered("publish_summary")
		if report == "" || summary == "" {
			return modelsim.Step{Text: "aicr review", Usage: modelsim.Usage{Input: 50, Output: 3}}
		}
		switch r.ToolResults() {
		case 0:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: report, Arguments: fmt.Sprintf(
				`{"file":%q,"line":%d,"severity":"high","category":"correctness","message":"Mean divides by len(xs), which is zero for an empty slice."}`,
				plantedFile, reviewLine)}}, Usage: modelsim.Usage{Input: 1200, Output: 80}}
		case 1:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: summary,
				Arguments: `{"markdown":"One problem: Mean panics on an empty slice."}`}}, Usage: modelsim.Usage{Input: 1400, Output: 40}}
		}
		return modelsim.Step{Text: "Review done: one problem reported.", Usage: modelsim.Usage{Input: 1500, Output: 10}}
	}
}

// nativeAgent is the CLI agent run directly on this machine
// ([sandbox] kind = "none"), against sim speaking api.
func nativeAgent(t testing.TB, kind, api, baseURL string) *cli.Agent {
	t.Helper()
	t.Setenv(testKeyEnv, testKey)
	a, err := cli.New(cli.Options{Kind: kind, LLM: llm.Config{API: api, BaseURL: baseURL, Model: testModel,
		APIKeyEnv: testKeyEnv, MaxTurns: 8}, KeyEnv: testKeyEnv, Prefix: installed(t, kind), Binary: aicrBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// reviewPass runs pass 1 of a (native or sandboxed) and returns what the state file holds.
func reviewPass(t testing.TB, a agent.Agent, run rundir.Layout) (pass.Stats, *review.State, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stats, err := a.Review(ctx, run, pass.Pass{Number: 1, Kind: pass.Review})
	st, lerr := review.LoadState(run.StatePath())
	if lerr != nil {
		st = review.NewState()
	}
	return stats, st, err
}

// requireReported checks the state holds exactly the planted problem and
// a summary.
func requireReported(t testing.TB, st *review.State) {
	t.Helper()
	if len(st.Problems) != 1 || st.Problems[0].File != plantedFile || st.Problems[0].Line != reviewLine {
		t.Fatalf("state problems = %+v, want one at %s:%d (rejected: %+v)", st.Problems, plantedFile, reviewLine, st.Rejected)
	}
	if len(st.Summaries) != 1 {
		t.Fatalf("state summaries = %+v, want one", st.Summaries)
	}
}

// requireUnreportedMCPFailure checks a pass whose aicr MCP server never
// started, run by a CLI whose stream does not say so: no error, nothing
// recorded (the ladder's repair pass follows), and the model was offered
// no tool at all (every other tool is off).
func requireUnreportedMCPFailure(t testing.TB, sim *modelsim.Server, st *review.State, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("err = %v, want nil: the CLI does not report a missing MCP server", err)
	}
	if len(st.Problems)+len(st.Summaries) != 0 {
		t.Fatalf("state = %+v, want nothing recorded", st)
	}
	reqs := sim.Requests()
	if len(reqs) == 0 {
		t.Fatal("the CLI made no model request")
	}
	for _, r := range reqs {
		if len(r.Tools) != 0 {
			t.Errorf("offered %v without an MCP server", r.Tools)
		}
	}
}
