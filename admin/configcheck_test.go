package admin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 22 F21: a missing agent key file fails every review, yet config
// check said "ok" with a warning. It is an error, located at its key.
func TestConfigCheckMissingAgentKeyIsAnError(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "trigger-secret")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(`[daemon]
data_dir = "d"
listen = "127.0.0.1:0"
secret_file = "trigger-secret"
[[repo]]
name = "a"
kind = "svn"
url = "file:///x"
[agent]
kind = "llm"
[agent.llm]
api = "openai-chat"
model = "m"
base_url = "http://127.0.0.1:9/v1"
api_key_file = "missing-key"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	res := CheckConfig(path)
	if res.OK {
		t.Fatalf("config check ok with a missing agent key file: %+v", res)
	}
	found := false
	for _, e := range res.Errors {
		found = found || strings.HasPrefix(e, path+":15: agent.llm.api_key_file") && strings.Contains(e, "every review fails")
	}
	if !found {
		t.Fatalf("errors %q: want agent.llm.api_key_file at %s:15 saying every review fails", res.Errors, path)
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "api_key_file") {
			t.Errorf("the key is reported as a warning too: %q", w)
		}
	}
}
