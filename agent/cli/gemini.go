package cli

import (
	"errors"
	"io"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/review"
)

// geminiCLI is the Gemini CLI adapter. NOT BUILT YET: Configure and Parse refuse.
type geminiCLI struct{}

func (geminiCLI) Spec() Spec {
	return Spec{
		Kind: KindGeminiCLI, Package: "@google/gemini-cli", Version: "0.61.0", MinVersion: "0.61.0",
		Bin: "node_modules/.bin/gemini", APIs: []string{llm.APIGemini}, ToolNames: review.ToolNamingUnderscore,
		Capabilities: bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true, IsolatedHome: true, ContextCompaction: "delegated"},
	}
}

func (geminiCLI) Configure(s Setup) (Invocation, error) {
	return Invocation{}, errors.New("Gemini CLI adapter: not built yet")
}

func (geminiCLI) Parse(r io.Reader) (Events, error) {
	return Events{}, errors.New("Gemini CLI adapter: not built yet")
}
