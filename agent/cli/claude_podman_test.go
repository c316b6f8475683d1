package cli_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/internal/modelsim"
)

// Claude Code reviews inside the sandbox as the daemon runs it: Podman,
// the node image, the install mounted read-only, the root file system
// read-only, network llm-only (the model server on this host's loopback,
// reached through the egress proxy only).
func TestClaudeCodeInPodman(t *testing.T) {
	if testing.Short() {
		t.Skip("Podman run skipped in -short mode")
	}
	sim := modelsim.StartFunc(t, reportScenario())
	sim.RequireKey(testKey)
	log := &egressLog{}
	a := podmanAgent(t, cli.KindClaudeCode, llm.APIAnthropic, sim.URL, "llm-only", log)
	run := newRun(t)
	stats, st, err := reviewPass(t, a, run)
	if err != nil {
		b, _ := os.ReadFile(filepath.Join(run.AgentDir(), "claude-code-pass-1.jsonl"))
		t.Fatalf("Review: %v\n%s", err, b)
	}
	requireReported(t, st)
	if err := sim.Err(); err != nil {
		t.Fatalf("model server: %v", err)
	}
	reqs := sim.Requests()
	if len(reqs) != 3 || strings.Join(sortedCopy(reqs[0].Tools), ",") != strings.Join(sortedCopy(claudeSeen()), ",") {
		t.Fatalf("%d requests; first offered %v", len(reqs), reqs[0].Tools)
	}
	if stats.Turns != 3 || stats.InputTokens == 0 {
		t.Errorf("stats %+v", stats)
	}
	events := log.Events()
	if len(events) == 0 {
		t.Error("the egress proxy saw no connection: the model server was reached some other way")
	}
	for _, e := range events {
		if !e.Allowed {
			t.Errorf("egress refused %s:%d (%s): Claude Code tried to reach more than the model server", e.Host, e.Port, e.Reason)
		}
	}
	// The key was in the container's environment only.
	_ = filepath.WalkDir(run.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil //nolint:nilerr // an entry the walk cannot read cannot leak the key either: skip it
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), testKey) {
			t.Errorf("%s holds the key", p)
		}
		return nil
	})
}
