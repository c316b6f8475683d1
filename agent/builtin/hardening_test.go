package builtin_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/agent/builtin"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// A symlink in src/ must not let the agent read, and report on, a file
// outside the run directory.
func TestReviewDoesNotReadThroughSymlinksOutOfSrc(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "elsewhere.go")
	if err := os.WriteFile(outside, []byte(plantedSource()), 0o644); err != nil {
		t.Fatal(err)
	}
	change := vcs.Change{Files: []vcs.FileChange{
		{Path: "app/config.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 1, End: 14}}, Hunks: []vcs.LineRange{{Start: 1, End: 14}}},
	}}
	run := buildRun(t, map[string]string{}, change)
	if err := os.MkdirAll(filepath.Join(run.SrcDir(), "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(run.SrcDir(), "app", "config.go")); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	if _, err := newAgent(t, &logs).Review(testContext(t), run, pass.Pass{Number: 1, Kind: pass.Review}); err != nil {
		t.Fatalf("review: %v", err)
	}
	st, err := review.LoadState(run.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Problems) != 0 {
		t.Fatalf("problems found in a file outside src/: %+v", st.Problems)
	}
	if !strings.Contains(logs.String(), "file content unavailable") {
		t.Errorf("the unreadable file was not logged:\n%s", logs.String())
	}
}

// A pass had no wall-clock limit; a wedged agent held the worker forever.
// Under agent.WithTimeout the pass ends with ErrTimeout, and the review
// records nothing once its context is over: a finding sent after the
// deadline must not land in a state file the orchestrator already left.
func TestPassTimeoutStopsTheReview(t *testing.T) {
	run := buildRun(t, map[string]string{"app/config.go": plantedSource()}, vcs.Change{Files: []vcs.FileChange{
		{Path: "app/config.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, Added: []vcs.LineRange{{Start: 1, End: 14}}},
	}})
	var logs bytes.Buffer
	b, err := builtin.New(builtin.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	_, err = agent.WithTimeout(b, time.Hour).Review(ctx, run, pass.Pass{Number: 1, Kind: pass.Review})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("review of an ended pass: %v, want context.Canceled", err)
	}
	if st, lerr := review.LoadState(run.StatePath()); lerr == nil && (len(st.Problems) > 0 || st.Skip != nil || len(st.Summaries) > 0) {
		t.Errorf("an ended pass recorded %+v", st)
	}

	_, err = agent.WithTimeout(b, time.Nanosecond).Review(testContext(t), run, pass.Pass{Number: 1, Kind: pass.Review})
	if !errors.Is(err, agent.ErrTimeout) || !strings.Contains(err.Error(), "[agent] timeout") {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
}
