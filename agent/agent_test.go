package agent_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/builtin"
)

func TestConfigValidate(t *testing.T) {
	if err := (agent.Config{Kind: "builtin"}).Validate(); err != nil {
		t.Errorf("builtin: %v", err)
	}
	err := agent.Config{Kind: "gpt-7"}.Validate()
	if !errors.Is(err, agent.ErrUnknownKind) || !strings.Contains(err.Error(), `agent.kind: unknown agent kind "gpt-7" (one of: builtin)`) {
		t.Errorf("unknown kind: %v", err)
	}
	if err := (agent.Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "agent.kind: is required") {
		t.Errorf("empty kind: %v", err)
	}
}

func TestNew(t *testing.T) {
	a, err := agent.New(agent.Config{Kind: "builtin"}, agent.Deps{MCPCommand: []string{"/usr/local/bin/aicr", "mcp", "serve"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(*builtin.Agent); !ok {
		t.Errorf("New returned %T", a)
	}
	if _, err := agent.New(agent.Config{Kind: "builtin"}, agent.Deps{}); !errors.Is(err, builtin.ErrNoMCPCommand) {
		t.Errorf("no command: %v", err)
	}
	if _, err := agent.New(agent.Config{Kind: "nope"}, agent.Deps{}); !errors.Is(err, agent.ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
}
