package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/llm"
)

// [agent.llm] is checked like every table: a misspelt key and a bad value
// are reported at their lines, each naming the key.
func TestLoadConfigAgentLLMErrors(t *testing.T) {
	_, err := Load("testdata/bad_agent_llm.toml")
	if err == nil {
		t.Fatal("expected errors")
	}
	want := []string{
		"testdata/bad_agent_llm.toml:22: agent.llm.base_url: must not carry credentials; put the key in api_key_env or api_key_file",
		"testdata/bad_agent_llm.toml:25: agent.llm.max_turn: unknown key (did you mean `max_turns`?)",
	}
	got := strings.Split(err.Error(), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") && !(len(got) == 2 && got[0] == want[1] && got[1] == want[0]) {
		t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}

// A valid [agent.llm] table loads, with files relative to the config.
func TestLoadConfigAgentLLM(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "aicr.toml")
	os.WriteFile(cfg, []byte(`
[daemon]
secret_env = "S"
[[repo]]
name = "main"
kind = "svn"
url = "file:///x"
[agent]
kind = "llm"
timeout = "15m"
[agent.llm]
api = "anthropic"
model = "claude-sonnet-4-5"
api_key_file = "keys/anthropic"
headers_file = "gateway-headers"
context_window = 200000
timeout = "5m"
price_per_mtok_in = 3.0
price_per_mtok_out = 15.0
`), 0o600)
	c, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := c.Agent.LLM
	if l.APIKeyFile != filepath.Join(dir, "keys/anthropic") || l.HeadersFile != filepath.Join(dir, "gateway-headers") ||
		l.ContextWindow != 200000 || l.Timeout.Minutes() != 5 || l.PricePerMTokOut != 15 {
		t.Errorf("agent.llm: %+v", l)
	}
}

// The README's model configs are working configs: each one loads.
func TestReadmeModelConfigsLoad(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## Point aicr at a model\n")
	if !ok {
		t.Fatal("README has no \"Point aicr at a model\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := strings.Split(section, "```toml\n")[1:]
	if len(blocks) < 5 {
		t.Fatalf("%d toml blocks, want vLLM, Ollama, a gateway, OpenAI and Anthropic", len(blocks))
	}
	for i, b := range blocks {
		body, _, _ := strings.Cut(b, "```")
		if !strings.Contains(body, "[agent]\n") {
			body = "[agent]\nkind = \"llm\"\n" + body
		}
		cfg := "[daemon]\nsecret_env = \"S\"\n[[repo]]\nname = \"main\"\nkind = \"svn\"\nurl = \"file:///x\"\n" + body
		if _, err := Parse(fmt.Sprintf("README block %d", i+1), filepath.Join(t.TempDir(), "aicr.toml"), []byte(cfg)); err != nil {
			t.Errorf("README block %d:\n%s\n%v", i+1, body, err)
		}
	}
}

// config check reads the llm key and headers as a pass would and warns
// (the daemon reads them at every pass, so it still starts).
func TestPreflightWarnsAboutLLMFiles(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "llm-key")
	os.WriteFile(key, []byte("sk-preflight-value\n"), 0o644)
	os.Chmod(key, 0o644)
	os.WriteFile(filepath.Join(dir, "headers"), []byte("not a header line\n"), 0o600)
	cfg := &Config{Daemon: Daemon{Listen: "127.0.0.1:0", SpoolDrainEvery: "@every 1m"}}
	cfg.Dispatch.RetryEvery = "@every 1m"
	cfg.Agent.Kind = "llm"
	cfg.Agent.LLM.APIKeyFile = key
	cfg.Agent.LLM.HeadersFile = filepath.Join(dir, "headers")
	warnings := checkLLMFiles(cfg)
	joined := strings.Join(warnings, "\n")
	if len(warnings) != 2 || !strings.Contains(joined, "agent.llm.api_key_file: "+key+" is readable by every user") ||
		!strings.Contains(joined, "agent.llm.headers_file: ") {
		t.Errorf("warnings:\n%s", joined)
	}
	if strings.Contains(joined, "sk-preflight-value") {
		t.Errorf("a warning printed the key: %s", joined)
	}
	cfg.Agent.LLM = llmConfigWithEnv("AICR_TEST_PREFLIGHT_UNSET")
	if w := checkLLMFiles(cfg); len(w) != 1 || !strings.Contains(w[0], "agent.llm.api_key_env: environment variable AICR_TEST_PREFLIGHT_UNSET") {
		t.Errorf("unset key variable: %q", w)
	}
	cfg.Agent.Kind = "builtin"
	if w := checkLLMFiles(cfg); len(w) != 0 {
		t.Errorf("builtin: %q", w)
	}
}

func llmConfigWithEnv(env string) llm.Config { return llm.Config{APIKeyEnv: env} }
