package cli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/cli"
	"github.com/aicr-dev/aicr/agent/llm"
	"github.com/aicr-dev/aicr/agent/pass"
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

// A CLI that prints the key it was refused with does not put it into
// the pass's error.
func TestPassErrorNeverCarriesTheKey(t *testing.T) {
	dir := t.TempDir()
	a, _ := cli.Lookup(cli.KindCodex)
	prefix := filepath.Join(dir, "prefix")
	bin := filepath.Join(prefix, filepath.FromSlash(a.Spec().Bin))
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	// Stands in for a CLI that echoes its credential on stderr and fails.
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"refused key $AICR_LLM_API_KEY\" >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const key = "sk-echoed-by-the-cli-42"
	ag, err := cli.New(cli.Options{Kind: cli.KindCodex, LLM: llm.Config{API: llm.APIOpenAIResponses, BaseURL: "http://127.0.0.1:9/v1", Model: "m"},
		APIKey: func() (string, error) { return key, nil }, Prefix: prefix, Binary: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ag.Review(context.Background(), newRun(t), pass.Pass{Number: 1, Kind: pass.Review})
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "refused key") {
		t.Fatalf("err = %v", err)
	}
}
