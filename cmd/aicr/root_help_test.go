package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 15 item 7: the root help says which agent the config runs and
// whether a model sees the code.
func TestRootHelpSaysWhichAgentRuns(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AICR_CLI_TEST_SECRET", "s")
	base := "[daemon]\ndata_dir = \"data\"\nsecret_env = \"AICR_CLI_TEST_SECRET\"\n\n[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///nonexistent\"\n\n"
	write := func(name, agent string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(base+agent), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, config string
		args         []string
		says         []string
	}{
		{"builtin", write("builtin.toml", "[agent]\nkind = \"builtin\"\n"), []string{"--help"},
			[]string{"Agent: builtin (", "rules only, no model", "no code leaves this host"}},
		{"llm", write("llm.toml", "[agent]\nkind = \"llm\"\n[agent.llm]\napi = \"openai-chat\"\nbase_url = \"http://gpu-box:8000/v1\"\nmodel = \"qwen3-coder\"\n"), nil,
			[]string{"Agent: llm (", `the model "qwen3-coder" at http://gpu-box:8000/v1 (openai-chat API)`, "sent to that server"}},
		{"missing", filepath.Join(dir, "none.toml"), []string{"help"},
			[]string{"Agent: not configured here (no config at " + filepath.Join(dir, "none.toml")}},
		{"broken", write("broken.toml", "[agent]\nkind = 7\n"), []string{"--help"},
			[]string{"Agent: unknown: " + filepath.Join(dir, "broken.toml") + " does not load", "aicr config check"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AICR_CONFIG", tc.config)
			out, errOut, code := runCLI(t, tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, s := range tc.says {
				if !strings.Contains(out, s) {
					t.Errorf("help does not say %q:\n%s", s, out)
				}
			}
			if strings.Count(out, "Agent:") != 1 {
				t.Errorf("the agent line appears %d times:\n%s", strings.Count(out, "Agent:"), out)
			}
		})
	}
	// A verb's help does not read the config.
	t.Setenv("AICR_CONFIG", write("llm2.toml", "[agent]\nkind = \"builtin\"\n"))
	if out, _, _ := runCLI(t, "audit", "--help"); strings.Contains(out, "Agent:") {
		t.Errorf("aicr audit --help shows the agent line:\n%s", out)
	}
}
