package cli_test

// Kilo CLI is an OpenCode fork and shares its adapter: the same checks
// as opencode_test.go, against the real Kilo CLI and its own streams.

import (
	"testing"

	"github.com/aicr-dev/aicr/agent/cli"
)

func TestKiloParse(t *testing.T) { checkOpenCodeParse(t, cli.KindKilo) }

func TestKiloConfigure(t *testing.T) {
	checkOpenCodeConfigure(t, cli.KindKilo, ".config/kilo/kilo.json")
}

func TestKiloReview(t *testing.T) { checkOpenCodeReview(t, cli.KindKilo) }

func TestKiloOnlyAicrTools(t *testing.T) { checkOpenCodeOnlyAicrTools(t, cli.KindKilo) }

func TestKiloMCPMissing(t *testing.T) { checkOpenCodeMCPMissing(t, cli.KindKilo) }

func TestKiloAuth(t *testing.T) { checkOpenCodeAuth(t, cli.KindKilo) }

func TestKiloContextOverflow(t *testing.T) { checkOpenCodeContextOverflow(t, cli.KindKilo) }
func TestKiloPodman(t *testing.T)          { checkOpenCodePodman(t, cli.KindKilo) }

func TestKiloUnreachable(t *testing.T) { checkOpenCodeUnreachable(t, cli.KindKilo) }
