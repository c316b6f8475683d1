package cli

import (
	"errors"
	"io"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/review"
)

// codex is the Codex adapter. NOT BUILT YET: Configure and Parse refuse.
type codex struct{}

func (codex) Spec() Spec {
	return Spec{
		Kind: KindCodex, Package: "@openai/codex", Version: "0.169.0", MinVersion: "0.169.0",
		Bin: "node_modules/.bin/codex", APIs: []string{llm.APIOpenAIResponses}, ToolNames: review.ToolNamingDotted,
		Capabilities: bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true, IsolatedHome: true, ContextCompaction: "delegated"},
	}
}

func (codex) Configure(s Setup) (Invocation, error) {
	return Invocation{}, errors.New("Codex adapter: not built yet")
}

func (codex) Parse(r io.Reader) (Events, error) {
	return Events{}, errors.New("Codex adapter: not built yet")
}
