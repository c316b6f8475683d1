package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// allCommands walks the real command tree, hidden commands included.
func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		if sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		out = append(out, allCommands(sub)...)
	}
	return out
}

// commandArgs is the argv that reaches c: its path without "aicr".
func commandArgs(c *cobra.Command) []string {
	return strings.Fields(strings.TrimPrefix(c.CommandPath(), "aicr"))
}

// hookCommands are run by svn and p4d: they must never fail a commit, so
// any mistake exits 0 (they say why in notify.log).
var hookCommands = map[string]bool{"aicr notify svn": true, "aicr notify p4": true}

// Issue 15 item 7: one exit-code policy over every command. A flag that
// does not exist, a verb that does not exist and an argument a command
// does not take all exit 2 (usage), before anything runs; --help exits 0.
func TestEveryCommandExitsTwoOnUsageMistakes(t *testing.T) {
	// A config that does not exist: nothing may get far enough to need it.
	t.Setenv("AICR_CONFIG", filepath.Join(t.TempDir(), "missing.toml"))
	root := newRootCmd(NewFactory(&IOStreams{In: strings.NewReader("")}))
	cmds := allCommands(root)
	if len(cmds) < 30 {
		t.Fatalf("walked only %d commands; the tree walk is broken", len(cmds))
	}
	for _, c := range cmds {
		path := c.CommandPath()
		args := commandArgs(c)
		want := exitUsage
		if hookCommands[path] {
			want = exitOK
		}
		t.Run(path, func(t *testing.T) {
			_, errOut, code := runCLI(t, append(append([]string{}, args...), "--no-such-flag")...)
			if code != want {
				t.Errorf("%s --no-such-flag: exit %d, want %d; stderr: %s", path, code, want, errOut)
			}
			if c.Flags().Lookup("format") != nil {
				if _, errOut, code := runCLI(t, append(append([]string{}, args...), "--format", "yaml")...); code != want {
					t.Errorf("%s --format yaml: exit %d, want %d; stderr: %s", path, code, want, errOut)
				}
			}
			if _, errOut, code := runCLI(t, append(append([]string{}, args...), "--help")...); code != exitOK {
				t.Errorf("%s --help: exit %d, want 0; stderr: %s", path, code, errOut)
			}
			if c.HasSubCommands() {
				if _, errOut, code := runCLI(t, append(append([]string{}, args...), "no-such-verb")...); code != exitUsage {
					t.Errorf("%s no-such-verb: exit %d, want 2; stderr: %s", path, code, errOut)
				}
				return
			}
			// A command that takes no positional argument refuses one.
			if c.Args != nil && c.Args(c, []string{"x", "y", "z", "w", "v", "u"}) != nil && !hookCommands[path] {
				if _, errOut, code := runCLI(t, append(append([]string{}, args...), "x", "y", "z", "w", "v", "u")...); code != exitUsage {
					t.Errorf("%s with six arguments: exit %d, want 2; stderr: %s", path, code, errOut)
				}
			}
		})
	}
}

// A config file that does not exist is a usage mistake for every
// command that reads one (exit 2), never a crash or exit 1.
func TestEveryConfigReaderExitsTwoOnMissingConfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.toml")
	for _, args := range [][]string{
		{"config", "check"},
		{"audit", "list"},
		{"dispatch", "list"},
		{"doctor"},
		{"install", "svn-hook", "--repo", os.TempDir()},
		{"install", "p4-trigger", "--repo", "depot"},
	} {
		_, errOut, code := runCLI(t, append(args, "--config", missing)...)
		if code != exitUsage || !strings.Contains(errOut, "missing.toml") {
			t.Errorf("%v --config missing: exit %d, want 2 naming the file; stderr: %s", args, code, errOut)
		}
	}
}

var defaultWord = regexp.MustCompile(`\bdefault\b`)

// Issue 15 item 7: help shows a flag's default once. A usage string
// that spells "(default …)" itself must leave the flag's value empty,
// or pflag appends its own "(default …)" after it.
func TestHelpShowsEachDefaultOnce(t *testing.T) {
	root := newRootCmd(NewFactory(&IOStreams{In: strings.NewReader("")}))
	for _, c := range allCommands(root) {
		for _, line := range strings.Split(c.LocalFlags().FlagUsages(), "\n") {
			// The word "default" twice: the usage text names a default and
			// pflag adds its own, in whatever words the text used ($X_DEFAULT
			// in an environment variable's name is not the word).
			if n := len(defaultWord.FindAllString(line, -1)); n > 1 {
				t.Errorf("%s: %q shows a default %d times", c.CommandPath(), strings.TrimSpace(line), n)
			}
		}
	}
}
