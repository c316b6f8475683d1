package builtin_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/builtin"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// The MCP server the agent spawned inherited the daemon's whole
// environment, secrets read through *_env included.
func TestMCPServerGetsNoSecretsFromTheEnvironment(t *testing.T) {
	const secret = "trigger-s3cret-8d1f0c"
	t.Setenv("AICR_TEST_TRIGGER_SECRET", secret)
	t.Setenv("AICR_TEST_WEBHOOK_URL", "https://hooks.example.invalid/T000/"+secret)

	dir := t.TempDir()
	dump := filepath.Join(dir, "env.txt")
	wrapper := filepath.Join(dir, "aicr-wrapper")
	script := "#!/bin/sh\nenv > '" + dump + "'\nexec '" + os.Args[0] + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	run := buildRun(t, map[string]string{"x.go": "package x\n"}, vcs.Change{Files: []vcs.FileChange{
		{Path: "x.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, Added: []vcs.LineRange{{Start: 1, End: 1}}},
	}})
	var logs bytes.Buffer
	a := agentWithCommand(t, &logs, wrapper)
	if _, err := a.Review(testContext(t), run, pass.Pass{Number: 1, Kind: pass.Review}); err != nil {
		t.Fatalf("review: %v\nlogs:\n%s", err, logs.String())
	}
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatalf("the wrapper did not run: %v", err)
	}
	env := string(data)
	for _, leak := range []string{secret, "AICR_TEST_TRIGGER_SECRET", "AICR_TEST_WEBHOOK_URL"} {
		if strings.Contains(env, leak) {
			t.Errorf("child environment holds %q:\n%s", leak, env)
		}
	}
	for _, want := range []string{"HOME=" + run.AgentDir() + "\n", "PATH=", serveEnv + "=1\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("child environment lacks %q:\n%s", want, env)
		}
	}
	if st, err := review.LoadState(run.StatePath()); err != nil || st.Skip == nil {
		t.Errorf("the review did not complete through the wrapper: %+v %v", st, err)
	}
}

// A symlink in src/ must not let the agent read, and report on, a file
// outside the run directory.
func TestReviewDoesNotReadThroughSymlinksOutOfSrc(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "elsewhere.go")
	if err := os.WriteFile(outside, []byte(plantedSource()), 0o644); err != nil {
		t.Fatal(err)
	}
	change := vcs.Change{Files: []vcs.FileChange{
		{Path: "app/config.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 1, End: 14}}, Hunks: []vcs.LineRange{{Start: 1, End: 14}}},
	}}
	run := buildRun(t, map[string]string{}, change)
	if err := os.MkdirAll(filepath.Join(run.SrcDir(), "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(run.SrcDir(), "app", "config.go")); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	if _, err := newAgent(t, &logs).Review(testContext(t), run, pass.Pass{Number: 1, Kind: pass.Review}); err != nil {
		t.Fatalf("review: %v", err)
	}
	st, err := review.LoadState(run.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Problems) != 0 {
		t.Fatalf("problems found in a file outside src/: %+v", st.Problems)
	}
	if !strings.Contains(logs.String(), "file content unavailable") {
		t.Errorf("the unreadable file was not logged:\n%s", logs.String())
	}
}

// A pass had no wall-clock limit; a wedged MCP server (or agent) held the
// worker forever. Under agent.WithTimeout the pass ends with ErrTimeout
// and the server process is gone.
func TestPassTimeoutKillsTheServer(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	wrapper := filepath.Join(dir, "aicr-wrapper")
	script := "#!/bin/sh\necho $$ > '" + pidFile + "'\nexec '" + os.Args[0] + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	b, err := builtin.New(builtin.Options{MCPCommand: []string{wrapper, "mcp", "serve"}, Env: []string{serveEnv + "=hang"},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	run := buildRun(t, map[string]string{"x.go": "package x\n"}, vcs.Change{Files: []vcs.FileChange{
		{Path: "x.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, Added: []vcs.LineRange{{Start: 1, End: 1}}},
	}})
	_, err = agent.WithTimeout(b, 300*time.Millisecond).Review(testContext(t), run, pass.Pass{Number: 1, Kind: pass.Review})
	if !errors.Is(err, agent.ErrTimeout) || !strings.Contains(err.Error(), "[agent] timeout") {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("server never started: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server %d still exists after the timeout (kill 0: %v)", pid, err)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
