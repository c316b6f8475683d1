package cli

import (
	"errors"
	"io"

	"github.com/aicr-dev/aicr/agent/bundle"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/review"
)

// openCode is the OpenCode adapter, and with kilo set the Kilo CLI (an
// OpenCode fork with the same config body and events). NOT BUILT YET.
type openCode struct{ kilo bool }

func (o openCode) Spec() Spec {
	s := Spec{
		Kind: KindOpenCode, Package: "opencode-ai", Version: "1.18.33", MinVersion: "1.18.33",
		Bin: "node_modules/.bin/opencode", APIs: []string{llm.APIOpenAIChat}, ToolNames: review.ToolNamingDotted,
		Capabilities: bundle.Capabilities{ModelConfig: "injected", MCP: true, Skills: "none", RepoInstructions: true, IsolatedHome: true, ContextCompaction: "delegated"},
	}
	if o.kilo {
		s.Kind, s.Package, s.Version, s.MinVersion, s.Bin = KindKilo, "@kilocode/cli", "7.7.7", "7.7.7", "node_modules/.bin/kilo"
	}
	return s
}

func (o openCode) Configure(s Setup) (Invocation, error) {
	return Invocation{}, errors.New(o.Spec().Kind + " adapter: not built yet")
}

func (o openCode) Parse(r io.Reader) (Events, error) {
	return Events{}, errors.New(o.Spec().Kind + " adapter: not built yet")
}
