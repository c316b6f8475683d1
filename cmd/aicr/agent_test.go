package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAgentTestFlags(t *testing.T) {
	checkFlags(t, newCmdAgentTest, []flagCase[AgentTestOptions]{
		{name: "defaults", want: AgentTestOptions{Format: "text"}},
		{name: "json", args: []string{"--format", "json", "--config", "/x.toml"}, want: AgentTestOptions{Format: "json"}, config: "/x.toml"},
		{name: "bad format", args: []string{"--format", "yaml"}, code: exitUsage, errSays: "--format must be text or json"},
		{name: "argument", args: []string{"now"}, code: exitUsage, errSays: "unknown command"},
	})
}

// agentTestConfig writes a config whose agent is the builtin one, with
// aicr_binary this test binary, or mcp when set: the builtin agent spawns
// neither (TestAgentTestBuiltinNeedsNoServerBinary).
func agentTestConfig(t *testing.T, mcp string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "trigger-secret"), []byte("s3cret-for-tests\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := executable(t)
	if mcp != "" {
		bin = mcp
	}
	cfg := `[daemon]
listen = "127.0.0.1:0"
data_dir = "data"
secret_file = "trigger-secret"
aicr_binary = "` + bin + `"

[notify]
spool_dir = "spool"

[agent]
kind = "builtin"

[[repo]]
name = "main"
kind = "svn"
url = "file://` + filepath.Join(dir, "repos") + `"
`
	path := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The builtin agent finds the synthetic change's password: a structured
// result, exit 0, and the JSON says what it did.
func TestAgentTestRunsTheConfiguredAgent(t *testing.T) {
	f, out, _ := testFactory(t, agentTestConfig(t, ""))
	if err := agentTestRun(context.Background(), &AgentTestOptions{Factory: f, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var got agentTestOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !got.Structured || got.Agent != "builtin" || got.ModelReached || got.Passes != 1 {
		t.Errorf("output %+v", got)
	}
	if len(got.Problems) != 1 || got.Problems[0].File != agentTestFile || got.Problems[0].Line != 4 {
		t.Errorf("problems %+v", got.Problems)
	}
	if strings.Join(got.Tools, ",") != "aicr.report_problem,aicr.publish_summary" {
		t.Errorf("tools %v", got.Tools)
	}
	if strings.Contains(out.String(), "Sup3r-Secret-Prod-Pw!") {
		t.Errorf("the output quotes the password:\n%s", out)
	}

	f, out, _ = testFactory(t, agentTestConfig(t, ""))
	if err := agentTestRun(context.Background(), &AgentTestOptions{Factory: f, Format: formatText}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"agent: builtin", "tools called by the agent: aicr.report_problem, aicr.publish_summary", "service/db.go:4", "result: structured"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// The builtin agent runs its review tools in process: an aicr_binary that
// cannot serve MCP (it used to be spawned as the server, and this config
// failed the review) changes nothing. A failing agent's exit 1 is
// TestAgentTestWithLLMRefusedKey's.
func TestAgentTestBuiltinNeedsNoServerBinary(t *testing.T) {
	f, out, _ := testFactory(t, agentTestConfig(t, "/bin/false"))
	if err := agentTestRun(context.Background(), &AgentTestOptions{Factory: f, Format: formatJSON}); err != nil {
		t.Fatalf("agent test with aicr_binary = /bin/false: %v\n%s", err, out)
	}
	var got agentTestOutput
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !got.Structured || got.Error != "" || len(got.Problems) != 1 {
		t.Errorf("output %+v", got)
	}
}
