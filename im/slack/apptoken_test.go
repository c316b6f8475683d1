package slack_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/im/slack"
)

// slackConfig is an aicr.toml with one slack channel of the given keys.
func slackConfig(t *testing.T, keys string) (path string) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "aicr.toml")
	body := `[daemon]
secret_env = "X"
[[repo]]
name = "main"
kind = "svn"
url = "file:///x"
[[channel]]
name = "slack"
kind = "slack"
` + keys
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAppTokenKeysAreValidatedWithTheirLine(t *testing.T) {
	for _, c := range []struct{ name, keys, want string }{
		{"webhook mode", "webhook_url_env = \"HOOK\"\napp_token_file = \"app\"\n",
			`:7: channel[0]: app_token_env: invalid value (Socket Mode receives the clicks on Block Kit buttons, which only a bot token posts`},
		{"both sources", "token_env = \"BOT\"\nchannel = \"C0123ABCD\"\napp_token_env = \"APP\"\napp_token_file = \"app\"\n",
			`:7: channel[0]: app_token_env and app_token_file: both an environment variable and a file are set; keep one`},
		{"misspelt", "token_env = \"BOT\"\nchannel = \"C0123ABCD\"\napp_tokn_file = \"app\"\n",
			":12: channel.app_tokn_file: unknown key (did you mean `app_token_file`?)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Load(slackConfig(t, c.keys))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error containing %q, got %v", c.want, err)
			}
		})
	}
}

func TestAppTokenIsCheckedByConfigCheck(t *testing.T) {
	t.Setenv("X", "a-trigger-secret-of-enough-length-0123456789")
	keys := "token_file = \"bot\"\nchannel = \"C0123ABCD\"\napp_token_file = \"app\"\n"
	path := slackConfig(t, keys)
	dir := filepath.Dir(path)
	write := func(name, v string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("bot", "xoxb-123-bot")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	warning := func() string {
		t.Helper()
		warnings, err := config.Preflight(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range warnings {
			if strings.Contains(w, "app_token") {
				return w
			}
		}
		return ""
	}
	if w := warning(); !strings.Contains(w, `channel "slack": app_token:`) || !strings.Contains(w, filepath.Join(dir, "app")) {
		t.Errorf("a missing app token file: warning %q, want it named", w)
	}
	write("app", "xoxb-123-bot")
	if w := warning(); !strings.Contains(w, "this is a bot token (xoxb-…), not an app-level token (xapp-…)") ||
		strings.Contains(w, "xoxb-123") {
		t.Errorf("a bot token in app_token_file: warning %q", w)
	}
	write("app", "xapp-1-A1-2-abc")
	if w := warning(); w != "" {
		t.Errorf("a good app token warns: %q", w)
	}
}

func TestCheckAppToken(t *testing.T) {
	for tok, want := range map[string]string{
		"xapp-1-A-1-x": "",
		"xoxp-1":       "a user token (xoxp-…)",
		"hunter2":      "this is not a Slack app-level token (those start with xapp-)",
	} {
		err := slack.CheckAppToken(tok)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", tok, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), tok)):
			t.Errorf("%s: %v, want %q without the token", tok, err, want)
		}
	}
}
