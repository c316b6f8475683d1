package childenv_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/childenv"
)

func TestBuildPassesOnlyTheAllowlist(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("TZ", "UTC")
	t.Setenv("AICR_TRIGGER_SECRET", "s3cret")
	t.Setenv("SLACK_TOKEN", "xoxb-1")
	t.Setenv("HOME", "/root")
	t.Setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")

	env := childenv.Build(nil, "HOME=/runs/7/agent", "AICR_EXTRA=1", "TZ=Europe/Paris")
	for _, want := range []string{"PATH=/usr/bin:/bin", "HOME=/runs/7/agent", "AICR_EXTRA=1", "TZ=Europe/Paris"} {
		if !slices.Contains(env, want) {
			t.Errorf("%v lacks %s", env, want)
		}
	}
	for _, kv := range env {
		if strings.Contains(kv, "s3cret") || strings.Contains(kv, "xoxb") || kv == "HOME=/root" || kv == "TZ=UTC" || strings.HasPrefix(kv, "SSH_AUTH_SOCK=") {
			t.Errorf("passed %s", kv)
		}
	}

	// A VCS client inherits what it names beyond Base, once each.
	env = childenv.Build([]string{"HOME", "SSH_AUTH_SOCK", "PATH"})
	for _, want := range []string{"HOME=/root", "SSH_AUTH_SOCK=/tmp/agent.sock"} {
		if !slices.Contains(env, want) {
			t.Errorf("%v lacks %s", env, want)
		}
	}
	paths := 0
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			paths++
		}
	}
	if paths != 1 {
		t.Errorf("PATH appears %d times: %v", paths, env)
	}
}
