package config

import (
	"strings"
	"testing"
)

const digestBase = `[daemon]
secret_env = "X"
[[repo]]
name = "main"
kind = "svn"
url = "file:///x"
[[channel]]
name = "console"
kind = "console"
`

func TestDigestTablesAreDecoded(t *testing.T) {
	cfg, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(digestBase+`
[[digest]]
name = "weekly"
channel = "console"
every = "0 9 * * 1"
repos = ["main"]
paths = ["src/net/"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Digests) != 1 || cfg.Digests[0].Name != "weekly" || cfg.Digests[0].Repos[0] != "main" || cfg.Digests[0].Paths[0] != "src/net/" {
		t.Fatalf("digests = %+v", cfg.Digests)
	}
	if _, err := cfg.Digests[0].Schedule(); err != nil {
		t.Fatal(err)
	}
}

// Every mistake is reported at its line, all in one error.
func TestDigestMistakesAreLocated(t *testing.T) {
	_, err := Parse("aicr.toml", "/etc/aicr/aicr.toml", []byte(digestBase+`
[[digest]]
name = "weekly"
channel = "nowhere"
every = "every monday"
repos = ["main", "mian"]
paths = ["/abs", "src/**"]

[[digest]]
name = "weekly"
channel = "console"

[[digest]]
name = "a b"
every = "@daily"

[[digest]]
name = "hourly"
channel = "console"
every = "@every 1h"
`))
	if err == nil {
		t.Fatal("a bad [[digest]] was accepted")
	}
	for _, want := range []string{
		`aicr.toml:13: digest[0].channel: names channel "nowhere", which no [[channel]] defines`,
		`aicr.toml:14: digest[0].every: bad schedule "every monday"`,
		`aicr.toml:15: digest[0].repos: names repo "mian", which no [[repo]] defines (repos: main)`,
		`aicr.toml:16: digest[0].paths: path "/abs" must be a repo-relative path`,
		`aicr.toml:16: digest[0].paths: path "src/**" must be a repo-relative path`,
		`aicr.toml:19: digest[1].name: duplicate digest name "weekly"`,
		`aicr.toml:18: digest[1].every: missing`,
		`aicr.toml:23: digest[2].name: must be 1-64 letters`,
		`aicr.toml:22: digest[2].channel: missing`,
		`aicr.toml:29: digest[3].every: "@every 1h" has no fixed times`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), `repo "main", which`) {
		t.Errorf("an existing repo was refused:\n%v", err)
	}
}
