// Package childenv builds the environment of processes aicr starts for an
// agent (the MCP server, later agent CLIs). The daemon's environment holds
// secrets named by *_env keys (the trigger secret, webhook URLs, tokens);
// a child gets a short allowlist instead, never os.Environ().
package childenv

import "os"

// Passed lists the variables copied from aicr's own environment: what a
// process needs to find programs, encode text and tell the time. Nothing
// here may ever carry a credential.
var Passed = []string{"PATH", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR"}

// Build returns the environment for a child: the Passed variables that are
// set, HOME set to home when it is not empty (the agent's own directory,
// so nothing reads the service account's dotfiles), then extra
// ("KEY=VALUE"), which wins over what came before.
func Build(home string, extra ...string) []string {
	env := make([]string, 0, len(Passed)+1+len(extra))
	for _, k := range Passed {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	if home != "" {
		env = append(env, "HOME="+home)
	}
	return append(env, extra...)
}
