// Package childenv builds the environment of every process aicr starts:
// VCS clients, the agent's MCP server, later agent CLIs in the sandbox.
// The daemon's environment holds secrets named by *_env keys (the trigger
// secret, webhook URLs, tokens); a child gets a short allowlist instead,
// never os.Environ(). It is the one owner of that rule.
package childenv

import (
	"os"
	"strings"
)

// Base lists the variables every child inherits from aicr's own
// environment: what a process needs to find programs, encode text and
// tell the time. Nothing here may ever carry a credential.
var Base = []string{"PATH", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR"}

// Build returns a child's complete environment: the Base variables that
// are set, then those named in inherit (what one kind of child needs
// beyond Base, e.g. HOME and the ssh agent for a VCS client), then set
// ("NAME=value" entries the caller sets on purpose). An entry of set
// replaces an inherited variable of the same name, so each name appears
// once.
func Build(inherit []string, set ...string) []string {
	override := make(map[string]bool, len(set))
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		override[name] = true
	}
	env := make([]string, 0, len(Base)+len(inherit)+len(set))
	seen := map[string]bool{}
	for _, names := range [][]string{Base, inherit} {
		for _, name := range names {
			if override[name] || seen[name] {
				continue
			}
			seen[name] = true
			if v, ok := os.LookupEnv(name); ok {
				env = append(env, name+"="+v)
			}
		}
	}
	return append(env, set...)
}
