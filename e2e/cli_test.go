package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/doctor"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/internal/svntest"
	"github.com/aicr-dev/aicr/internal/testimage"
)

// cliCache is where agent CLIs are installed for tests: outside the repo
// and kept between runs (the agent/cli tests use the same one).
func cliCache() string {
	if d := os.Getenv("AICR_CLI_CACHE"); d != "" {
		return d
	}
	return "/var/cache/aicr/agent-clis"
}

// installCLI installs kind with `aicr agent install`, as an admin does.
// Without the npm registry the test is skipped, except in CI (CI or
// AICR_REQUIRE_NPM set), where it fails.
func installCLI(t *testing.T, e *env, kind string) {
	t.Helper()
	cmd := exec.Command(aicrBin, "agent", "install", kind, "--dir", cliCache())
	cmd.Dir = e.dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "" && os.Getenv("AICR_REQUIRE_NPM") == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if exec.CommandContext(ctx, "npm", "ping").Run() != nil {
			t.Skipf("the npm registry is unreachable, so %s cannot be installed (in CI this fails): %v\n%s", kind, err, out)
		}
	}
	t.Fatalf("aicr agent install %s: %v\n%s", kind, err, out)
}

// nodeImageForE2E is the image `make image-node` builds.
func nodeImageForE2E(t *testing.T) string {
	t.Helper()
	return testimage.Node(t)
}

// cliReviewer is the reviewing model behind any CLI: offered the aicr
// tools (under whatever name the CLI gives them), it reports the finding
// at path:line, then publishes a summary, then ends. Requests without the
// tools (titles, classifiers) get plain text.
func cliReviewer(path string, line int) func(modelsim.Request) modelsim.Step {
	return func(r modelsim.Request) modelsim.Step {
		report, summary := r.Offered("report_problem"), r.Offered("publish_summary")
		if report == "" || summary == "" {
			return modelsim.Step{Text: "aicr review"}
		}
		switch r.ToolResults() {
		case 0:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: report, Arguments: fmt.Sprintf(
				`{"file":%q,"line":%d,"severity":"medium","category":%q,"message":%q}`, path, line, modelCategory, modelMessage)}},
				Usage: modelsim.Usage{Input: 1800, Output: 120}}
		case 1:
			return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: summary,
				Arguments: `{"markdown":"Name() ignores the configuration."}`}}, Usage: modelsim.Usage{Input: 2000, Output: 40}}
		}
		return modelsim.Step{Text: "Done: one problem reported.", Usage: modelsim.Usage{Input: 2100, Output: 8}}
	}
}

// The CLIs proven end to end, with the API each needs from the model
// server.
var e2eCLIs = []struct{ kind, api string }{
	{"claude-code", llm.APIAnthropic},
	{"opencode", llm.APIOpenAIChat},
	{"kilo", llm.APIOpenAIChat},
	{"codex", llm.APIOpenAIResponses},
	{"qwen-code", llm.APIOpenAIChat},
	{"gemini-cli", llm.APIGemini},
}

// Each agent CLI reviews a real SVN revision inside Podman: post-commit
// hook → daemon → `aicr agent pass` in the node image → the CLI (installed
// by `aicr agent install`, mounted read-only) ⇄ the scripted model server
// through the llm-only egress proxy, and ⇄ aicr's MCP server → the
// finding in the file channel; the key never lands in a file.
func TestSVNCommitReviewedByEachAgentCLIInPodman(t *testing.T) {
	svntest.Require(t)
	for _, tc := range e2eCLIs {
		t.Run(tc.kind, func(t *testing.T) {
			e := newEnv(t, 1)
			image := nodeImageForE2E(t)
			installCLI(t, e, tc.kind)
			sim := modelsim.StartFunc(t, cliReviewer("src/config.go", 7))
			sim.RequireKey(e2eModelKey)
			base := sim.URL
			if tc.api == llm.APIGemini {
				base = strings.TrimSuffix(sim.URL, "/v1")
			}
			t.Setenv(e2eModelKeyEnv, e2eModelKey)
			f, err := os.OpenFile(e.config, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(f, `
[agent]
kind = %q
timeout = "3m"

[agent.llm]
api = %q
base_url = %q
model = "scripted-coder"
api_key_env = %q
max_turns = 8

[agent.cli]
install_dir = %q

[sandbox]
kind = "podman"
network = "llm-only"

[sandbox.podman]
runtime = "runc"
image = %q
containers_conf = %q
memory = "2g"
pids_limit = 1024
`, tc.kind, tc.api, base, e2eModelKeyEnv, cliCache(), image, sandboxContainersConf(t))
			f.Close()

			e.startDaemon()
			e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
			s := e.store()
			runs := e.waitFinished(s, 1, 300*time.Second)
			if runs[0].Status != audit.RunSucceeded {
				log, _ := os.ReadFile(e.daemonLog)
				t.Fatalf("run: %+v\ndaemon log:\n%s", runs[0], log)
			}
			lines := e.waitReports(60*time.Second, atLeast(1))
			found := false
			for _, p := range lines[0].Problems {
				if p.Category == modelCategory && p.File == "src/config.go" && p.Line == 7 && p.Message == modelMessage {
					found = true
				}
			}
			if !found {
				t.Errorf("the model's finding (through %s) is not in the file channel: %+v", tc.kind, lines[0].Problems)
			}
			detail, err := s.GetRun(context.Background(), runs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if a := detail.Agent; a == nil || a.Agent != tc.kind || a.Passes < 1 {
				t.Errorf("audited agent stats: %+v, want agent %s", a, tc.kind)
			}
			if err := sim.Err(); err != nil {
				t.Errorf("model server: %v", err)
			}
			if left := runContainers(t, e); left != "" {
				t.Errorf("containers left behind: %s", left)
			}
			e.stopDaemon()
			assertNoKey(t, e.dir)
		})
	}
}

// aicr doctor checks the configured agent CLI: missing → the install
// command as the fix; installed → its version runs in the sandbox's image.
func TestDoctorChecksTheAgentCLI(t *testing.T) {
	svntest.Require(t)
	e := newEnv(t, 1)
	image := nodeImageForE2E(t)
	installCLI(t, e, "claude-code")
	base, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	configure := func(installDir string) {
		t.Helper()
		cfg := string(base) + fmt.Sprintf(`
[agent]
kind = "claude-code"

[agent.llm]
api = "anthropic"
base_url = "http://127.0.0.1:9/v1"
model = "scripted-coder"

[agent.cli]
install_dir = %q

[sandbox]
kind = "podman"

[sandbox.podman]
runtime = "runc"
image = %q
containers_conf = %q
`, installDir, image, sandboxContainersConf(t))
		if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	configure(t.TempDir())
	rep, _, _ := runDoctor(t, e)
	c := findCheck(t, rep, doctor.CheckAgentCLI)
	if !c.Failed() || !strings.Contains(c.Fix, "aicr agent install claude-code") {
		t.Errorf("agent-cli check without an install: %+v", c)
	}

	configure(cliCache())
	rep, _, _ = runDoctor(t, e)
	if c := findCheck(t, rep, doctor.CheckAgentCLI); c.Status != doctor.StatusOK {
		t.Errorf("agent-cli check with the install: %+v", c)
	}
	runs := findCheck(t, rep, doctor.CheckAgentCLIRuns)
	if runs.Status != doctor.StatusOK || !strings.Contains(runs.Detail, "2.1.") {
		t.Errorf("agent-cli-runs: %+v", runs)
	}
}
