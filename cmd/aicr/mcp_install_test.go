package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestMCPInstallPrintsAndMergesRegistrations(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "aicr.toml")
	args := func(extra ...string) []string {
		return append([]string{"mcp", "install"}, append(extra, "--config", config, "--aicr", "/usr/local/bin/aicr")...)
	}
	out, _, code := runCLI(t, args("claude-code")...)
	want := "claude mcp add aicr-review -- /usr/local/bin/aicr mcp review --config " + config + "\n" +
		"claude mcp add aicr-admin -- /usr/local/bin/aicr mcp admin --config " + config + "\n"
	if code != 0 || out != want {
		t.Fatalf("claude-code: exit %d\n%s\nwant\n%s", code, out, want)
	}
	if _, errOut, code := runCLI(t, args("vscode")...); code != 2 || !strings.Contains(errOut, "claude-code, codex, opencode or cursor") {
		t.Fatalf("unknown client: exit %d %s", code, errOut)
	}

	// JSON clients: other servers and keys are kept.
	for client, key := range map[string]string{"cursor": "mcpServers", "opencode": "mcp", "claude-code": "mcpServers"} {
		file := filepath.Join(dir, client+".json")
		if err := os.WriteFile(file, []byte(`{"theme": "dark", "`+key+`": {"other": {"command": "x"}}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := runCLI(t, args(client, "--write", "--file", file)...); code != 0 {
			t.Fatalf("%s --write: exit %d %s", client, code, errOut)
		}
		var doc map[string]any
		b, _ := os.ReadFile(file)
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		servers := doc[key].(map[string]any)
		admin, _ := servers["aicr-admin"].(map[string]any)
		if doc["theme"] != "dark" || servers["other"] == nil || servers["aicr-review"] == nil || admin == nil {
			t.Fatalf("%s: merged file\n%s", client, b)
		}
		if client == "opencode" {
			if admin["type"] != "local" || admin["enabled"] != true || len(admin["command"].([]any)) != 5 {
				t.Fatalf("opencode entry %v", admin)
			}
		} else if admin["command"] != "/usr/local/bin/aicr" || len(admin["args"].([]any)) != 4 {
			t.Fatalf("%s entry %v", client, admin)
		}
	}

	// codex: tables appended, comments kept, a differing table refused.
	file := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(file, []byte("# my settings\nmodel = \"o3\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, args("codex", "--write", "--file", file)...); code != 0 {
		t.Fatalf("codex --write: exit %d %s", code, errOut)
	}
	b, _ := os.ReadFile(file)
	var doc struct {
		Model      string `toml:"model"`
		MCPServers map[string]struct {
			Command string   `toml:"command"`
			Args    []string `toml:"args"`
		} `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(string(b), &doc); err != nil || !strings.HasPrefix(string(b), "# my settings\n") || doc.Model != "o3" ||
		doc.MCPServers["aicr-admin"].Args[1] != "admin" || doc.MCPServers["aicr-review"].Command != "/usr/local/bin/aicr" {
		t.Fatalf("codex file (%v):\n%s", err, b)
	}
	if _, _, code := runCLI(t, args("codex", "--write", "--file", file)...); code != 0 {
		t.Fatal("a second --write of the same registration failed")
	}
	if b2, _ := os.ReadFile(file); string(b2) != string(b) {
		t.Fatalf("a second --write changed the file:\n%s", b2)
	}
	_, errOut, code := runCLI(t, "mcp", "install", "codex", "--write", "--file", file, "--config", config, "--aicr", "/opt/aicr")
	if code != 1 || !strings.Contains(errOut, "replace it by hand") {
		t.Fatalf("differing table: exit %d %s", code, errOut)
	}
}
