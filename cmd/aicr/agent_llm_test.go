package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
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

func runAgentTest(t *testing.T, cfgPath string) (agentTestOutput, string, error) {
	t.Helper()
	f, out, errOut := testFactory(t, cfgPath)
	err := agentTestRun(context.Background(), &AgentTestOptions{Factory: f, Format: formatJSON})
	var got agentTestOutput
	if jerr := json.Unmarshal(out.Bytes(), &got); jerr != nil {
		t.Fatalf("%v\n%s\n%s", jerr, out, errOut)
	}
	f2, text, _ := testFactory(t, cfgPath)
	_ = agentTestRun(context.Background(), &AgentTestOptions{Factory: f2, Format: formatText})
	return got, text.String(), err
}

// F22: the password the builtin pre-pass finds is not credited to the
// model: the model only published a summary.
func TestAgentTestSaysWhichCallsCameFromTheModel(t *testing.T) {
	t.Setenv("AICR_TEST_AGENT_KEY", "sk-agent-test-key")
	sim := modelsim.StartFunc(t, func(modelsim.Request) modelsim.Step {
		return modelsim.Step{ToolCalls: []modelsim.ToolCall{{Name: "aicr_publish_summary",
			Arguments: `{"markdown":"Adds the orders database connection."}`}}}
	})
	got, text, err := runAgentTest(t, llmAgentTestConfig(t, sim, "AICR_TEST_AGENT_KEY"))
	if err != nil {
		t.Fatalf("%v\n%+v", err, got)
	}
	if strings.Join(got.Tools, ",") != "aicr.publish_summary" || got.PrePassFindings != 1 || len(got.Problems) != 1 {
		t.Errorf("tools %v, pre-pass findings %d, problems %d", got.Tools, got.PrePassFindings, len(got.Problems))
	}
	for _, want := range []string{"tools called by the model: aicr.publish_summary\n", "pre-pass (builtin checks, not the model): 1 finding(s) added"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

// F22: nothing listening at base_url says to check it and the server.
func TestAgentTestConnectionRefusedNamesBaseURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sim := modelsim.Start(t)
	path := llmAgentTestConfig(t, sim, "AICR_TEST_AGENT_KEY_UNUSED")
	rewriteConfig(t, path, sim.URL, "http://"+addr+"/v1")
	rewriteConfig(t, path, `api_key_env = "AICR_TEST_AGENT_KEY_UNUSED"`+"\n", "")
	got, _, err := runAgentTest(t, path)
	if !errors.Is(err, errSilentFailure) {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(got.Error, "check [agent.llm] base_url and that the model server runs") {
		t.Errorf("error: %s", got.Error)
	}
}

// F22: a 404 for the model lists what the server serves.
func TestAgentTestUnknownModelListsServerModels(t *testing.T) {
	t.Setenv("AICR_TEST_AGENT_KEY", "sk-agent-test-key")
	sim := modelsim.Start(t)
	sim.VLLM(modelsim.VLLMOptions{Models: []string{"Qwen/Qwen2.5-Coder-32B-Instruct", "Qwen/Qwen3-Coder-30B-A3B-Instruct"}})
	got, text, err := runAgentTest(t, llmAgentTestConfig(t, sim, "AICR_TEST_AGENT_KEY"))
	if !errors.Is(err, errSilentFailure) {
		t.Fatalf("err %v", err)
	}
	if strings.Join(got.ServerModels, ",") != "Qwen/Qwen2.5-Coder-32B-Instruct,Qwen/Qwen3-Coder-30B-A3B-Instruct" {
		t.Errorf("server models %v (error %s)", got.ServerModels, got.Error)
	}
	if !strings.Contains(text, "the server serves these models (set one as [agent.llm] model): Qwen/Qwen2.5-Coder-32B-Instruct, Qwen/Qwen3-Coder-30B-A3B-Instruct") {
		t.Errorf("output:\n%s", text)
	}
}

// F22: a refused key is explained once, naming the file it came from.
func TestAgentTestAuthRemedyOnceWithTheKeyFile(t *testing.T) {
	sim := modelsim.Start(t)
	sim.RequireKey("sk-the-right-key")
	path := llmAgentTestConfig(t, sim, "AICR_TEST_AGENT_KEY_UNUSED")
	keyFile := filepath.Join(filepath.Dir(path), "model-key")
	if err := os.WriteFile(keyFile, []byte("sk-wrong-key-1234567890\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rewriteConfig(t, path, `api_key_env = "AICR_TEST_AGENT_KEY_UNUSED"`, `api_key_file = "model-key"`)
	got, _, err := runAgentTest(t, path)
	if !errors.Is(err, errSilentFailure) {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(got.Error, keyFile+" (agent.llm.api_key_file)") || strings.Count(got.Error, "agent.llm.api_key") != 1 ||
		strings.Count(got.Error, "check the key") != 1 {
		t.Errorf("error: %s", got.Error)
	}
}

func rewriteConfig(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(data), old, new, 1)
	if cfg == string(data) {
		t.Fatalf("config has no %q", old)
	}
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}
