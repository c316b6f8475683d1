package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/modelsim"
)

// llmAgentTestConfig turns agentTestConfig's agent into kind = "llm"
// against sim, with the key in keyEnv.
func llmAgentTestConfig(t *testing.T, sim *modelsim.Server, keyEnv string) string {
	t.Helper()
	path := agentTestConfig(t, "")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(data), "[agent]\nkind = \"builtin\"\n", `[agent]
kind = "llm"

[agent.llm]
api = "openai-chat"
base_url = "`+sim.URL+`"
model = "scripted-coder"
api_key_env = "`+keyEnv+`"
`, 1)
	if cfg == string(data) {
		t.Fatal("agentTestConfig no longer has the [agent] table this test replaces")
	}
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The operator's first check with a model: aicr agent test reaches it,
// the model's calls are executed, and the output says so.
func TestAgentTestWithLLM(t *testing.T) {
	t.Setenv("AICR_TEST_AGENT_KEY", "sk-agent-test-key")
	sim := modelsim.Start(t,
		modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_report_problem",
			Arguments: `{"file":"service/db.go","line":4,"severity":"high","category":"hard-coded-credential","message":"The database password is committed."}`}},
			Usage: modelsim.Usage{Input: 900, Output: 40}},
		modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_publish_summary", Arguments: `{"markdown":"One committed password."}`}},
			Usage: modelsim.Usage{Input: 1000, Output: 20}},
	)
	sim.RequireKey("sk-agent-test-key")
	f, out, _ := testFactory(t, llmAgentTestConfig(t, sim, "AICR_TEST_AGENT_KEY"))
	if err := agentTestRun(context.Background(), &AgentTestOptions{Factory: f, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var got agentTestOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !got.Structured || got.Agent != "llm" || !got.ModelReached || got.Model != "scripted-coder" || got.Turns != 2 ||
		got.InputTokens != 1900 || got.OutputTokens != 60 || len(got.Summaries) != 1 {
		t.Errorf("output %+v", got)
	}
	found := false
	for _, p := range got.Problems {
		found = found || (p.File == agentTestFile && p.Line == 4)
	}
	if !found {
		t.Errorf("problems %+v", got.Problems)
	}
	if err := sim.Err(); err != nil {
		t.Error(err)
	}
	if strings.Contains(out.String(), "sk-agent-test-key") {
		t.Errorf("the output shows the key:\n%s", out)
	}
}

// A key the server refuses: exit 1, the reason names the key's config
// key, and the key itself is not printed.
func TestAgentTestWithLLMRefusedKey(t *testing.T) {
	t.Setenv("AICR_TEST_AGENT_KEY", "sk-wrong-key-1234567890")
	sim := modelsim.Start(t)
	sim.RequireKey("sk-the-right-key")
	f, out, errOut := testFactory(t, llmAgentTestConfig(t, sim, "AICR_TEST_AGENT_KEY"))
	err := agentTestRun(context.Background(), &AgentTestOptions{Factory: f, Format: formatJSON})
	if !errors.Is(err, errSilentFailure) {
		t.Fatalf("err %v", err)
	}
	var got agentTestOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Structured || !strings.Contains(got.Error, "agent.llm.api_key_env") {
		t.Errorf("output %+v", got)
	}
	if strings.Contains(out.String()+errOut.String(), "sk-wrong-key-1234567890") {
		t.Errorf("the key is printed:\n%s\n%s", out, errOut)
	}
}
