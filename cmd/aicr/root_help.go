package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/config"
)

// withAgentInHelp makes `aicr`, `aicr --help` and `aicr help` say which
// agent the config on this host runs and whether a model sees the code:
// an operator deciding what may leave the building reads the help first.
// Only the root's help reads the config; a verb's help stays instant.
func withAgentInHelp(root *cobra.Command, f *Factory) {
	base, long := root.HelpFunc(), root.Long
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if cmd == root {
			cmd.Long = long + "\n\n" + agentSummary(f.ConfigPath)
		}
		base(cmd, args)
	})
}

// agentSummary is one paragraph: the configured agent and what it does
// with a change, or why that cannot be told.
func agentSummary(path string) string {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("Agent: not configured here (no config at %s; --config or $AICR_CONFIG names another).\n"+
			"  The example config uses the builtin agent: rules only, no model.", path)
	}
	cfg, err := config.Load(path)
	if err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		return fmt.Sprintf("Agent: unknown: %s does not load (%s); run 'aicr config check'.", path, first)
	}
	return describeAgent(cfg.Agent, path)
}

// describeAgent says in plain words what the configured agent does.
func describeAgent(c agent.Config, path string) string {
	l := c.LLM.WithDefaults()
	model := fmt.Sprintf("the model %q at %s (%s API)", l.Model, l.BaseURL, l.API)
	switch {
	case c.Kind == agent.KindBuiltin:
		return fmt.Sprintf("Agent: builtin (%s): rules only, no model. It flags hard-coded credentials and\n"+
			"  merge-conflict markers in added lines; no code leaves this host.", path)
	case c.Kind == agent.KindLLM:
		return fmt.Sprintf("Agent: llm (%s): %s reviews each change;\n"+
			"  the change's diff and files are sent to that server.", path, model)
	case agent.IsCLI(c.Kind):
		return fmt.Sprintf("Agent: %s (%s): the %s CLI drives %s over each change;\n"+
			"  the change's diff and files are sent to that server.", c.Kind, path, c.Kind, model)
	}
	return fmt.Sprintf("Agent: %q (%s), a kind this aicr does not know.", c.Kind, path)
}
