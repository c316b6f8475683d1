package cli_test

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/sandboxed"
	"github.com/aicr-dev/aicr/internal/testimage"
	"github.com/aicr-dev/aicr/sandbox"
	"github.com/aicr-dev/aicr/sandbox/egress"
)

// nodeImage is the image `make image-node` builds, which the agent CLIs
// run in.
func nodeImage(t testing.TB) string {
	t.Helper()
	return testimage.Node(t)
}

func containersConf(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "configs", "containers.conf")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("configs/containers.conf: %v", err)
	}
	return p
}

// podmanAgent is kind run the way the daemon runs it under [sandbox] kind
// = "podman": each pass is `aicr agent pass` in a container of the node
// image, the CLI's install mounted read-only, the key only in the
// container's environment. network is [sandbox] network; with "llm-only"
// the model server (on this host's loopback) is reached through the
// run's egress proxy, whose decisions go to log (nil: dropped).
func podmanAgent(t testing.TB, kind, api, baseURL, network string, log *egressLog) agent.Agent {
	t.Helper()
	t.Setenv(testKeyEnv, testKey)
	installed(t, kind)
	cfg := sandbox.Config{Kind: "podman", Network: network, Podman: sandbox.PodmanConfig{
		Runtime: "runc", Image: nodeImage(t), ContainersConf: containersConf(t), Memory: "2g", PidsLimit: 1024}}
	cfg.ApplyDefaults(3 * time.Minute)
	runner, err := sandbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ac := agent.Config{Kind: kind, Timeout: 3 * time.Minute, LLM: llm.Config{API: api, BaseURL: baseURL, Model: testModel,
		APIKeyEnv: testKeyEnv, MaxTurns: 8}}
	var record func(int64, egress.Event)
	if log != nil {
		record = log.record
	}
	a, err := sandboxed.New(sandboxed.Options{Config: ac, Runner: runner, Network: network, Binary: aicrBinary(t),
		CLIInstallDir: cacheDir(), RecordEgress: record})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// egressLog keeps the egress proxy's decisions (it calls from its own
// goroutines).
type egressLog struct {
	mu     sync.Mutex
	events []egress.Event
}

func (l *egressLog) record(_ int64, e egress.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// Events returns the decisions so far.
func (l *egressLog) Events() []egress.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]egress.Event(nil), l.events...)
}
