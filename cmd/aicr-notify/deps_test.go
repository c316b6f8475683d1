package main

import (
	"os/exec"
	"strings"
	"testing"
)

// aicr-notify exists to link nothing but the client: a commit waits for
// every package initialiser the hook links (issue 14 measured 9.6 ms of
// aicr's start-up in schemas, rules and Markdown the hook never uses).
// This fails when an import drags anything else in.
func TestLinksOnlyTheClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{
		"github.com/aicr-dev/aicr/cmd/aicr-notify": true,
		"github.com/aicr-dev/aicr/triggers":        true,
		"github.com/aicr-dev/aicr/hmacsig":         true,
		"github.com/BurntSushi/toml":               true,
		"github.com/BurntSushi/toml/internal":      true,
		// The one secret reader (bounded, non-blocking, regular files
		// only): the hook reads secret_file through it. No initialiser.
		"github.com/aicr-dev/aicr/secret": true,
		// Leaves of the standard library only, with no initialiser: the
		// one atomic file write (spool temp files, the svn hook) and the
		// version the build stamps.
		"github.com/aicr-dev/aicr/internal/atomicfile": true,
		"github.com/aicr-dev/aicr/internal/buildinfo":  true,
		// openat/O_NOFOLLOW for the spool the hook's account owns; its
		// initialiser takes 0.01 ms (GODEBUG=inittrace=1).
		"golang.org/x/sys/unix": true,
	}
	for _, p := range strings.Fields(string(out)) {
		if !allowed[p] {
			t.Errorf("aicr-notify links %s; keep the hook client to package triggers and its wire format", p)
		}
	}
}
