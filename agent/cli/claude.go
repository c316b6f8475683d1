package cli

import (
	"errors"
	"io"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/review"
)

// claudeCode is the Claude Code adapter. NOT BUILT YET: Configure and Parse refuse.
type claudeCode struct{}

func (claudeCode) Spec() Spec {
	return Spec{
		Kind: KindClaudeCode, Package: "@anthropic-ai/claude-code", Version: "2.1.328", MinVersion: "2.1.328",
		Bin: "node_modules/.bin/claude", APIs: []string{llm.APIAnthropic}, ToolNames: review.ToolNamingDotted,
		Capabilities: bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true, IsolatedHome: true, ContextCompaction: "delegated"},
	}
}

func (claudeCode) Configure(s Setup) (Invocation, error) {
	return Invocation{}, errors.New("Claude Code adapter: not built yet")
}

func (claudeCode) Parse(r io.Reader) (Events, error) {
	return Events{}, errors.New("Claude Code adapter: not built yet")
}
