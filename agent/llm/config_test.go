package llm_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/secret"
)

func TestConfigValidateNamesTheKey(t *testing.T) {
	ok := llm.Config{API: llm.APIOpenAIChat, BaseURL: "http://gpu-box:8000/v1", Model: "qwen"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*llm.Config)
		want string
	}{
		{"no api", func(c *llm.Config) { c.API = "" }, "agent.llm.api: is required (one of: openai-chat, openai-responses, anthropic, gemini)"},
		{"credentials in url", func(c *llm.Config) { c.BaseURL = "https://user:pw@gw.example/v1" }, "agent.llm.base_url: must not carry credentials"},
		{"no host", func(c *llm.Config) { c.BaseURL = "http:///v1" }, "agent.llm.base_url: has no host"},
		{"query", func(c *llm.Config) { c.BaseURL = "http://gw/v1?key=x" }, "agent.llm.base_url: must not have a query"},
		{"no model", func(c *llm.Config) { c.Model = " " }, "agent.llm.model: is required"},
		{"both key sources", func(c *llm.Config) { c.APIKeyEnv, c.APIKeyFile = "K", "/k" }, "agent.llm.api_key_file: set api_key_env or api_key_file, not both"},
		{"window too small", func(c *llm.Config) { c.ContextWindow = 4096 }, "agent.llm.context_window: 4096 tokens leave no room"},
		{"negative tokens", func(c *llm.Config) { c.MaxOutputTokens = -1 }, "agent.llm.max_output_tokens: must not be negative"},
		{"negative timeout", func(c *llm.Config) { c.Timeout = -1 }, "agent.llm.timeout: must not be negative"},
		{"negative price", func(c *llm.Config) { c.PricePerMTokOut = -0.5 }, "agent.llm.price_per_mtok_out: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := llm.Config{API: llm.APIAnthropic, Model: "claude"}.WithDefaults()
	if c.MaxTurns != 24 || c.MaxOutputTokens != 4096 || c.BaseURL != llm.DefaultAnthropicBaseURL {
		t.Errorf("defaults: %+v", c)
	}
	if c := (llm.Config{API: llm.APIOpenAIResponses}).WithDefaults(); c.BaseURL != llm.DefaultOpenAIBaseURL {
		t.Errorf("openai default base: %s", c.BaseURL)
	}
	if c := (llm.Config{API: llm.APIOpenAIChat, BaseURL: "http://ollama:11434/v1"}).WithDefaults(); c.BaseURL != "http://ollama:11434/v1" {
		t.Errorf("a configured base_url must be kept: %s", c.BaseURL)
	}
	c = llm.Config{APIKeyFile: "keys/llm", HeadersFile: "headers"}.InDir("/etc/aicr")
	if c.APIKeyFile != "/etc/aicr/keys/llm" || c.HeadersFile != "/etc/aicr/headers" {
		t.Errorf("InDir: %+v", c)
	}
	if b := (llm.Config{}).PromptBudget(); b != 0 {
		t.Errorf("no window, budget %d", b)
	}
	if b := (llm.Config{ContextWindow: 32768}).PromptBudget(); b <= 0 || b >= 32768-4096 {
		t.Errorf("budget %d must leave room for the answer", b)
	}
}

func TestReadAPIKey(t *testing.T) {
	v, err := llm.Config{}.ReadAPIKey()
	if err != nil || !v.IsZero() {
		t.Errorf("no key configured must be no key and no error: %v", err)
	}
	file := filepath.Join(t.TempDir(), "key")
	os.WriteFile(file, []byte("sk-from-file\n"), 0o600)
	v, err = llm.Config{APIKeyFile: file}.ReadAPIKey()
	if err != nil || v.Reveal() != "sk-from-file" {
		t.Errorf("file key: %v", err)
	}
	_, err = llm.Config{APIKeyFile: file + ".missing"}.ReadAPIKey()
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "agent.llm.api_key_file: ") {
		t.Errorf("missing file: %v", err)
	}
	_, err = llm.Config{APIKeyEnv: "AICR_TEST_NO_SUCH_VAR"}.ReadAPIKey()
	if !errors.Is(err, secret.ErrUnset) || !strings.HasPrefix(err.Error(), "agent.llm.api_key_env: ") {
		t.Errorf("unset env: %v", err)
	}
}

func TestReadHeaders(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) llm.Config {
		p := filepath.Join(dir, "headers")
		os.WriteFile(p, []byte(content), 0o600)
		return llm.Config{HeadersFile: p}
	}
	h, err := write("# tenant routing\n\nX-Tenant: games\nOpenAI-Organization:  org-123 \n").ReadHeaders()
	if err != nil || len(h) != 2 || h["X-Tenant"] != "games" || h["OpenAI-Organization"] != "org-123" {
		t.Errorf("headers %v, %v", h, err)
	}
	for content, want := range map[string]string{
		"X-Tenant games-secret-token\n": "headers:1: want \"Name: value\"",
		"\nBad Name: v\n":               "headers:2: \"Bad Name\" is not a header name",
		"X-Empty:\n":                    "headers:1: header X-Empty has no value",
	} {
		_, err := write(content).ReadHeaders()
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "agent.llm.headers_file: ") {
			t.Errorf("%q: got %v, want %q", content, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "games-secret-token") {
			t.Errorf("a header error must not print the value: %v", err)
		}
	}
	if h, err := (llm.Config{}).ReadHeaders(); h != nil || err != nil {
		t.Errorf("no file: %v %v", h, err)
	}
}

// prompt_cache is on unless the operator turns it off.
func TestPromptCacheDefaultsOn(t *testing.T) {
	off, on := false, true
	for _, tc := range []struct {
		set  *bool
		want bool
	}{{nil, true}, {&on, true}, {&off, false}} {
		if got := (llm.Config{PromptCache: tc.set}).CachePrompts(); got != tc.want {
			t.Errorf("prompt_cache %v: CachePrompts() = %v", tc.set, got)
		}
	}
}
