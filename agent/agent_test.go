package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/rundir"
)

func TestConfigValidate(t *testing.T) {
	if err := (agent.Config{Kind: "builtin"}).Validate(); err != nil {
		t.Errorf("builtin: %v", err)
	}
	err := agent.Config{Kind: "gpt-7"}.Validate()
	if !errors.Is(err, agent.ErrUnknownKind) || !strings.Contains(err.Error(), `agent.kind: unknown agent kind "gpt-7" (one of: builtin, llm, claude-code, codex, gemini-cli, kilo, opencode, qwen-code)`) {
		t.Errorf("unknown kind: %v", err)
	}
	if err := (agent.Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "agent.kind: is required") {
		t.Errorf("empty kind: %v", err)
	}
}

func TestNew(t *testing.T) {
	a, err := agent.New(agent.Config{Kind: "builtin"}, agent.Deps{Binary: "/usr/local/bin/aicr"})
	if err != nil {
		t.Fatal(err)
	}
	if a == nil {
		t.Errorf("New returned nil")
	}
	// The builtin agent runs its review tools in process: it needs no
	// command to start a server with.
	if _, err := agent.New(agent.Config{Kind: "builtin"}, agent.Deps{}); err != nil {
		t.Errorf("builtin without an aicr binary: %v", err)
	}
	if _, err := agent.New(agent.Config{Kind: "nope"}, agent.Deps{}); !errors.Is(err, agent.ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
}

// sleepyAgent stands for an agent that hangs: it waits for its context.
type sleepyAgent struct{ ended chan error }

func (s sleepyAgent) Review(ctx context.Context, _ rundir.Layout, _ pass.Pass) (pass.Stats, error) {
	<-ctx.Done()
	s.ended <- context.Cause(ctx)
	return pass.Stats{}, fmt.Errorf("agent interrupted: %w", ctx.Err())
}

// A pass had no wall-clock limit: a hung agent held its worker forever.
func TestPassTimeout(t *testing.T) {
	s := sleepyAgent{ended: make(chan error, 1)}
	_, err := agent.WithTimeout(s, 50*time.Millisecond).Review(context.Background(), rundir.New(t.TempDir()), first)
	if !errors.Is(err, agent.ErrTimeout) || !strings.Contains(err.Error(), "[agent] timeout") {
		t.Fatalf("got %v, want ErrTimeout naming [agent] timeout", err)
	}
	if cause := <-s.ended; !errors.Is(cause, agent.ErrTimeout) {
		t.Errorf("the agent's context ended with %v", cause)
	}
	// An agent that finishes in time is not touched.
	if _, err := agent.WithTimeout(okAgent{}, time.Hour).Review(context.Background(), rundir.New(t.TempDir()), first); err != nil {
		t.Errorf("quick agent: %v", err)
	}
	// Cancelling from outside is not a timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s = sleepyAgent{ended: make(chan error, 1)}
	if _, err := agent.WithTimeout(s, time.Hour).Review(ctx, rundir.New(t.TempDir()), first); errors.Is(err, agent.ErrTimeout) {
		t.Errorf("cancelled pass reported as timeout: %v", err)
	}
}

var first = pass.Pass{Number: 1, Kind: pass.Review}

type okAgent struct{}

func (okAgent) Review(context.Context, rundir.Layout, pass.Pass) (pass.Stats, error) {
	return pass.Stats{}, nil
}

func TestConfigTimeoutAndLimits(t *testing.T) {
	c := agent.Config{Kind: "builtin"}
	if c.PassTimeout() != agent.DefaultTimeout || agent.DefaultTimeout != 10*time.Minute {
		t.Errorf("default timeout %s", c.PassTimeout())
	}
	c.Timeout = 90 * time.Second
	c.MaxRejected = 7
	if c.PassTimeout() != 90*time.Second || c.Limits().MaxRejected != 7 {
		t.Errorf("timeout %s limits %+v", c.PassTimeout(), c.Limits())
	}
	for _, bad := range []agent.Config{{Kind: "builtin", Timeout: -time.Second}, {Kind: "builtin", MaxRejected: -1}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := (agent.Config{Kind: "builtin", Timeout: -time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "agent.timeout") {
		t.Errorf("negative timeout: %v", err)
	}
}
