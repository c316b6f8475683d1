package cli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/cli"
)

// Install refuses what it cannot install before touching npm, and a
// failed npm install leaves no prefix behind for a review to pick up.
func TestInstallRefusesAndLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	if _, err := cli.Install(context.Background(), cli.InstallOptions{Dir: dir, Kind: "cursor"}); err == nil || !strings.Contains(err.Error(), "unknown agent CLI") {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := cli.Install(context.Background(), cli.InstallOptions{Dir: dir, Kind: cli.KindCodex, Version: "latest"}); err == nil || !strings.Contains(err.Error(), "not an exact version") {
		t.Errorf("a range instead of a version: %v", err)
	}
	// npm that always fails stands in for an unreachable registry.
	npm := filepath.Join(dir, "npm")
	if err := os.WriteFile(npm, []byte("#!/bin/sh\necho 'npm error network request failed' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := cli.Install(context.Background(), cli.InstallOptions{Dir: dir, Kind: cli.KindCodex, Npm: npm})
	if err == nil || !strings.Contains(err.Error(), "registry") {
		t.Errorf("failed npm: %v", err)
	}
	a, _ := cli.Lookup(cli.KindCodex)
	prefix := cli.Prefix(dir, cli.KindCodex, a.Spec().Version)
	if _, err := os.Stat(prefix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed install left %s: %v", prefix, err)
	}
	if _, err := cli.Installed(prefix); !errors.Is(err, cli.ErrNotInstalled) {
		t.Errorf("Installed after a failed install: %v", err)
	}
}
