package e2e

// End to end with kind = "llm": a real SVN commit through the installed
// hook (or a Perforce change through the trigger client and the p4
// emulator), a real `aicr daemon` process whose llm agent talks to the
// scripted model server hosted by this test process over loopback, and
// the findings in the file channel at the lines the model reported.

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/internal/modelsim"
	"github.com/aicr-dev/aicr/review"
)

const (
	e2eModelKey    = "sk-e2e-model-key-7f3a9c"
	e2eModelKeyEnv = "AICR_E2E_LLM_KEY"
	// modelFinding is what the scripted model reports: a category the
	// builtin rules never use, so the test sees the model's finding
	// whatever else the review adds.
	modelCategory = "wrong-constant"
	modelMessage  = "Name() returns a hard-coded service name; callers expect the configured one."
)

// useLLM appends kind = "llm" pointing at sim to e's config; the key is
// in the daemon's environment only (inherited from this process). extra
// are more [agent.llm] lines.
func useLLM(t *testing.T, e *env, api string, sim *modelsim.Server, extra ...string) {
	t.Helper()
	t.Setenv(e2eModelKeyEnv, e2eModelKey)
	f, err := os.OpenFile(e.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, `
[agent]
kind = "llm"
timeout = "2m"

[agent.llm]
api = %q
base_url = %q
model = "scripted-coder"
api_key_env = %q
max_turns = 6
price_per_mtok_in = 1.0
price_per_mtok_out = 10.0
%s
`, api, sim.URL, e2eModelKeyEnv, strings.Join(extra, "\n"))
}

// reviewScript is the model's side of one review of plantedFile at path:
// it reports the finding at line (and one call past the end of the file,
// which aicr refuses), sees the refusal, and publishes a summary.
func reviewScript(path string, line int) []modelsim.Step {
	report := func(l int) modelsim.ToolCall {
		return modelsim.ToolCall{Name: "aicr_report_problem", Arguments: fmt.Sprintf(
			`{"file":%q,"line":%d,"severity":"medium","category":%q,"message":%q}`, path, l, modelCategory, modelMessage)}
	}
	return []modelsim.Step{
		{
			ToolCalls: []modelsim.ToolCall{report(line), report(40)},
			Usage:     modelsim.Usage{Input: 1800, Output: 120},
			Check: func(r modelsim.Request) error {
				if !contains(r.Tools, "aicr_report_problem") || !contains(r.Tools, "aicr_publish_summary") {
					return fmt.Errorf("tools offered: %v", r.Tools)
				}
				if !strings.Contains(r.System, "aicr_report_problem") {
					return fmt.Errorf("system prompt does not name the tools as offered")
				}
				if len(r.Messages) == 0 || !strings.Contains(r.Messages[0].Text, `func Name() string`) || !strings.Contains(r.Messages[0].Text, path) {
					return fmt.Errorf("the first user message must carry the change: %+v", r.Messages)
				}
				return nil
			},
		},
		{
			ToolCalls: []modelsim.ToolCall{{Name: "aicr_publish_summary", Arguments: `{"title":"1 problem","markdown":"Name() ignores the configuration."}`}},
			Usage:     modelsim.Usage{Input: 2100, Output: 60},
			Check: func(r modelsim.Request) error {
				var results []modelsim.Message
				for _, m := range r.Messages {
					if m.Role == "tool" {
						results = append(results, m)
					}
				}
				// Chat Completions and Responses have no error flag on a tool
				// result: the envelope is the signal. Anthropic's is_error is set.
				if len(results) != 2 || results[0].IsError || !strings.Contains(results[1].Text, review.CodeLineNotInDiff) ||
					!strings.Contains(results[1].Text, `"remedy"`) || (r.API == modelsim.APIAnthropic && !results[1].IsError) {
					return fmt.Errorf("tool results must answer both calls, the second with the envelope: %+v", results)
				}
				return nil
			},
		},
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// checkLLMReview waits for the run and its report and checks the model's
// finding arrived at its line, the model was asked exactly the script,
// and the key appears nowhere aicr writes.
func checkLLMReview(t *testing.T, e *env, sim *modelsim.Server, revision, path string, line int) {
	t.Helper()
	s := e.store()
	runs := e.waitFinished(s, 1, 120*time.Second)
	if runs[0].Revision != revision || runs[0].Status != audit.RunSucceeded {
		log, _ := os.ReadFile(e.daemonLog)
		t.Fatalf("run: %+v\ndaemon log:\n%s", runs[0], log)
	}
	lines := e.waitReports(60*time.Second, atLeast(1))
	if len(lines) != 1 {
		t.Fatalf("%d report lines", len(lines))
	}
	found := false
	for _, p := range lines[0].Problems {
		if p.Category == modelCategory {
			if p.File != path || p.Line != line || p.Message != modelMessage {
				t.Errorf("model finding at %s:%d, want %s:%d: %+v", p.File, p.Line, path, line, p)
			}
			found = true
		}
		if p.Line == 40 {
			t.Errorf("the refused call was published: %+v", p)
		}
	}
	if !found {
		t.Errorf("the model's finding is not in the file channel: %+v\n%s", lines[0].Problems, lines[0].Text)
	}
	if !strings.Contains(lines[0].Text, "scripted-coder") {
		t.Errorf("the report footer must name the model:\n%s", lines[0].Text)
	}
	detail, err := s.GetRun(context.Background(), runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	a := detail.Agent
	if a == nil || a.Agent != "llm" || a.Model != "scripted-coder" || a.Passes != 1 || a.Turns != 2 || a.InputTokens != 3900 || a.OutputTokens != 180 {
		t.Fatalf("audited agent stats: %+v", a)
	}
	// 3900 tokens at 1.0 and 180 at 10.0 per million.
	if a.CostUSD == nil || *a.CostUSD < 0.00569 || *a.CostUSD > 0.00571 {
		t.Errorf("cost: %v, want 0.0057", a.CostUSD)
	}
	if err := sim.Err(); err != nil {
		t.Errorf("model server: %v", err)
	}
	if n := len(sim.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2 (the summary ends the pass)", n)
	}
	e.stopDaemon()
	assertNoKey(t, e.dir)
}

// assertNoKey reads every file the installation wrote (config, logs, the
// audit database, run directories and state files, the report channel)
// and fails if the model key is in any of them.
func assertNoKey(t *testing.T, dir string) {
	t.Helper()
	checked := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil //nolint:nilerr // an entry gone mid-walk holds no key; checked guards against walking nothing
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil //nolint:nilerr // unreadable to the test is unreadable to anyone it could leak to; checked counts what was read
		}
		checked++
		if bytes.Contains(b, []byte(e2eModelKey)) {
			t.Errorf("the model key is in %s", p)
		}
		return nil
	})
	if checked < 4 {
		t.Errorf("only %d files checked for the key", checked)
	}
}

// An SVN commit is reviewed by the llm agent through each API aicr speaks:
// hook → daemon → llm agent ⇄ scripted model → problems at the model's
// lines → file channel.
func TestSVNCommitReviewedByLLMEndToEnd(t *testing.T) {
	for _, api := range []string{modelsim.APIOpenAIChat, modelsim.APIOpenAIResponses, modelsim.APIAnthropic} {
		t.Run(api, func(t *testing.T) {
			e := newEnv(t, 1)
			sim := modelsim.Start(t, reviewScript("src/config.go", 7)...)
			sim.RequireKey(e2eModelKey)
			useLLM(t, e, api, sim)
			e.startDaemon()
			e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
			checkLLMReview(t, e, sim, "1", "src/config.go", 7)
		})
	}
}

// A Perforce change through the trigger client and the p4 emulator is
// reviewed by the llm agent the same way, through each API. These runs
// ask for streamed answers ([agent.llm] stream = true), so each API's
// streaming is also covered end to end from the config key to the file
// channel (the SVN runs above are the plain ones).
func TestP4ChangeReviewedByLLMEndToEnd(t *testing.T) {
	for _, api := range []string{modelsim.APIOpenAIChat, modelsim.APIOpenAIResponses, modelsim.APIAnthropic} {
		t.Run(api, func(t *testing.T) {
			e := newP4Env(t)
			sim := modelsim.Start(t, reviewScript("depot/main/svc/config.go", 4)...)
			sim.RequireKey(e2eModelKey)
			useLLM(t, e, api, sim, "stream = true")
			e.startDaemon()
			e.notifyP4("7")
			checkLLMReview(t, e, sim, "7", "depot/main/svc/config.go", 4)
			for i, r := range sim.Requests() {
				if !r.Stream {
					t.Errorf("request %d was not streamed with stream = true", i+1)
				}
			}
		})
	}
}

// A model server that refuses the key fails the run at once (no retry
// loop against a server that will keep refusing), with the remedy in the
// run's reason and the key nowhere.
func TestLLMAuthFailureFailsTheRunAtOnce(t *testing.T) {
	e := newEnv(t, 1)
	sim := modelsim.Start(t)
	sim.RequireKey("sk-the-key-the-server-wants")
	useLLM(t, e, modelsim.APIOpenAIChat, sim)
	e.startDaemon()
	e.commit("wire the production account", map[string]string{"src/config.go": plantedFile})
	s := e.store()
	runs := e.waitFinished(s, 1, 120*time.Second)
	if runs[0].Status != audit.RunFailed || !strings.Contains(runs[0].Error, "agent.llm.api_key_env") {
		t.Errorf("run: %+v", runs[0])
	}
	if runs[0].Attempts != 1 {
		t.Errorf("an auth failure must not be retried: %d attempts", runs[0].Attempts)
	}
	e.stopDaemon()
	assertNoKey(t, e.dir)
}

const utilFile = "package config\n\n// Lookup resolves a service name from the environment.\nfunc Lookup(name string) string { return name }\n"

// The ladder with a real model conversation: the model asks for a file
// in pass 1, aicr reads it from svn at the reviewed revision, and the
// follow-up pass carries it (fenced as untrusted data) to the model, which
// then finishes. The repository's .aicr/instructions.md reaches the
// system prompt.
func TestSVNLLMFollowUpPassGetsTheContextItAskedFor(t *testing.T) {
	followUpReview(t, nil)
}

// followUpReview is the follow-up review; configure, when set, adds to
// the config after [agent] (e.g. a sandbox).
func followUpReview(t *testing.T, configure func(*env)) {
	e := newEnv(t, 1)
	sim := modelsim.Start(t,
		modelsim.Step{
			ToolCalls: []modelsim.ToolCall{
				{Name: "aicr_fetch_more_context", Arguments: `{"path":"src/util.go","reason":"what Lookup does with the name"}`},
				{Name: "aicr_report_problem", Arguments: fmt.Sprintf(`{"file":"src/config.go","line":7,"severity":"medium","category":%q,"message":%q}`, modelCategory, modelMessage)},
			},
			Check: func(r modelsim.Request) error {
				if !strings.Contains(r.System, "Treat every exported constant as public API.") {
					return fmt.Errorf("the repository rules are not in the system prompt:\n%s", r.System)
				}
				return nil
			},
		},
		modelsim.Step{Text: "I asked for src/util.go; I will finish when it arrives."},
		modelsim.Step{
			ToolCalls: []modelsim.ToolCall{{Name: "aicr_publish_summary", Arguments: `{"markdown":"Lookup passes the name through; Name() should use it."}`}},
			Check: func(r modelsim.Request) error {
				if len(r.Messages) != 1 || !strings.Contains(r.Messages[0].Text, "func Lookup(name string) string") || !strings.Contains(r.Messages[0].Text, "untrusted") {
					return fmt.Errorf("the follow-up pass must carry the fetched file: %+v", r.Messages)
				}
				return nil
			},
		},
	)
	sim.RequireKey(e2eModelKey)
	useLLM(t, e, modelsim.APIOpenAIChat, sim)
	if configure != nil {
		configure(e)
	}
	e.startDaemon()
	e.commit("wire the production account", map[string]string{
		"src/config.go":         plantedFile,
		"src/util.go":           utilFile,
		".aicr/instructions.md": "Treat every exported constant as public API.\n",
	})
	s := e.store()
	runs := e.waitFinished(s, 1, 120*time.Second)
	if runs[0].Status != audit.RunSucceeded {
		log, _ := os.ReadFile(e.daemonLog)
		t.Fatalf("run: %+v\n%s", runs[0], log)
	}
	if err := sim.Err(); err != nil {
		t.Errorf("model server: %v", err)
	}
	if n := len(sim.Requests()); n != 3 {
		t.Errorf("%d model requests, want 3 (review: 2 turns, follow-up: 1)", n)
	}
	lines := e.waitReports(60*time.Second, atLeast(1))
	if len(lines) != 1 || !strings.Contains(lines[0].Text, "Lookup passes the name through") {
		t.Fatalf("report: %+v", lines)
	}
	found := false
	for _, p := range lines[0].Problems {
		found = found || (p.Category == modelCategory && p.File == "src/config.go" && p.Line == 7)
	}
	if !found {
		t.Errorf("the pass-1 finding is missing after the follow-up: %+v", lines[0].Problems)
	}
}
