package childenv_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/childenv"
)

func TestBuildPassesOnlyTheAllowlist(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("TZ", "UTC")
	t.Setenv("AICR_TRIGGER_SECRET", "s3cret")
	t.Setenv("SLACK_TOKEN", "xoxb-1")
	t.Setenv("HOME", "/root")

	env := childenv.Build("/runs/7/agent", "AICR_EXTRA=1", "TZ=Europe/Paris")
	for _, want := range []string{"PATH=/usr/bin:/bin", "HOME=/runs/7/agent", "AICR_EXTRA=1"} {
		if !slices.Contains(env, want) {
			t.Errorf("%v lacks %s", env, want)
		}
	}
	for _, kv := range env {
		if strings.Contains(kv, "s3cret") || strings.Contains(kv, "xoxb") || kv == "HOME=/root" {
			t.Errorf("leaked %s", kv)
		}
	}
	// Extras come last, so they win (exec uses the last of duplicates).
	if env[len(env)-1] != "TZ=Europe/Paris" {
		t.Errorf("extras not last: %v", env)
	}
	if slices.ContainsFunc(childenv.Build(""), func(kv string) bool { return strings.HasPrefix(kv, "HOME=") }) {
		t.Error("HOME set without a home")
	}
}
