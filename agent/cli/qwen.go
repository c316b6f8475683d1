package cli

import (
	"errors"
	"io"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/review"
)

// qwenCode is the Qwen Code adapter. NOT BUILT YET: Configure and Parse refuse.
type qwenCode struct{}

func (qwenCode) Spec() Spec {
	return Spec{
		Kind: KindQwenCode, Package: "@qwen-code/qwen-code", Version: "0.24.4", MinVersion: "0.24.4",
		Bin: "node_modules/.bin/qwen", APIs: []string{llm.APIOpenAIChat}, ToolNames: review.ToolNamingUnderscore,
		Capabilities: bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true, IsolatedHome: true, ContextCompaction: "delegated"},
	}
}

func (qwenCode) Configure(s Setup) (Invocation, error) {
	return Invocation{}, errors.New("Qwen Code adapter: not built yet")
}

func (qwenCode) Parse(r io.Reader) (Events, error) {
	return Events{}, errors.New("Qwen Code adapter: not built yet")
}
