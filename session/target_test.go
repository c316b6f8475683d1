package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/mcperr"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

func TestParseTarget(t *testing.T) {
	dir := t.TempDir()
	patch := filepath.Join(dir, "x.patch")
	if err := os.WriteFile(patch, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in, want, errHas string
	}{
		{in: "svn-rev:042", want: "svn-rev:42"},
		{in: "p4-shelf:12345", want: "p4-shelf:12345"},
		{in: "p4-change:7", want: "p4-change:7"},
		{in: "svn-wc:" + dir, want: "svn-wc:" + dir},
		{in: "patch:" + patch, want: "patch:" + patch},
		{in: "svn-rev:0", errHas: "not a positive number"},
		{in: "p4-shelf:abc", errHas: "not a positive number"},
		{in: "git:HEAD", errHas: `unknown kind "git"`},
		{in: "42", errHas: "not kind:value"},
		{in: "svn-wc:" + filepath.Join(dir, "missing"), errHas: "no such file"},
		{in: "svn-wc:" + patch, errHas: "not a directory"},
		{in: "patch:" + dir, errHas: "is a directory"},
	} {
		got, err := ParseTarget(tc.in)
		if tc.errHas != "" {
			var env *mcperr.Error
			if !errors.As(err, &env) || env.Code != mcperr.InvalidInput || !strings.Contains(env.Message, tc.errHas) || env.Remedy == "" {
				t.Errorf("%s: %v, want INVALID_INPUT with %q and a remedy", tc.in, err, tc.errHas)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.in, got, err, tc.want)
		}
	}
}

// A git-style patch: paths without a/ b/, changed-line maps from the
// hunks, and src/ holding the shown lines at their new numbers.
func TestFetchPatch(t *testing.T) {
	dir := t.TempDir()
	patch := filepath.Join(dir, "fix.patch")
	body := "diff --git a/lib/calc.go b/lib/calc.go\n--- a/lib/calc.go\n+++ b/lib/calc.go\n@@ -10,3 +10,4 @@ func f() {\n \tx := 1\n-\ty := 2\n+\ty := 3\n+\tz := x / 0\n \treturn\n" +
		"diff --git a/lib/new.go b/lib/new.go\nnew file mode 100644\n--- /dev/null\n+++ b/lib/new.go\n@@ -0,0 +1,2 @@\n+package lib\n+var token = \"t\"\n"
	if err := os.WriteFile(patch, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	layout := rundir.New(filepath.Join(dir, "run"))
	if err := layout.Create(); err != nil {
		t.Fatal(err)
	}
	c, err := fetchPatch(patch, layout)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]vcs.FileChange{}
	for _, f := range c.Files {
		files[f.Path] = f
	}
	calc, ok := files["lib/calc.go"]
	if !ok || !calc.IsAdded(11) || !calc.IsAdded(12) || calc.IsAdded(10) || !calc.IsCommentable(10) {
		t.Fatalf("lib/calc.go: %+v (files %v)", calc, files)
	}
	src, err := os.ReadFile(filepath.Join(layout.SrcDir(), "lib", "calc.go"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	if len(lines) < 13 || lines[11] != "\tz := x / 0" || lines[0] != "" {
		t.Errorf("src/lib/calc.go lines: %q", lines)
	}
	if f := files["lib/new.go"]; !f.IsAdded(1) || !f.IsAdded(2) {
		t.Errorf("lib/new.go: %+v", f)
	}
	if _, err := fetchPatch(filepath.Join(dir, "run", "diff.patch"), layout); err != nil {
		t.Errorf("the patch as written to the run dir reads back: %v", err)
	}
	empty := filepath.Join(dir, "empty.patch")
	os.WriteFile(empty, []byte("just words\n"), 0o644)
	if _, err := fetchPatch(empty, layout); err == nil || !strings.Contains(err.Error(), "holds no file diff") {
		t.Errorf("a file without a diff: %v", err)
	}
}

// next and next_reason exactly as issue 16 lists them.
func TestNext(t *testing.T) {
	active := audit.ReviewSession{Status: audit.SessionActive}
	problem := &review.Result{Problems: []review.Problem{{File: "a", Line: 1}}}
	for _, tc := range []struct {
		r         audit.SessionRound
		next, why string
		sess      audit.ReviewSession
	}{
		{audit.SessionRound{Status: audit.RoundRunning}, NextRunning, ReasonReviewerRunning, active},
		{audit.SessionRound{Status: audit.RoundCompleted, Result: problem}, NextRespond, ReasonOpenProblems, active},
		{audit.SessionRound{Status: audit.RoundCompleted, Result: &review.Result{}}, NextDone, ReasonNoProblems, active},
		{audit.SessionRound{Status: audit.RoundFailed, FailureReason: ReasonProcessExit}, NextStopped, ReasonProcessExit, active},
		{audit.SessionRound{Status: audit.RoundTimeout}, NextStopped, ReasonTimeout, active},
		{audit.SessionRound{Status: audit.RoundRunning}, NextStopped, ReasonSessionEnded, audit.ReviewSession{Status: audit.SessionEnded}},
		// Ended: no reply is taken, so no respond (nor done) either.
		{audit.SessionRound{Status: audit.RoundCompleted, Result: problem}, NextStopped, ReasonSessionEnded, audit.ReviewSession{Status: audit.SessionEnded}},
		{audit.SessionRound{Status: audit.RoundCompleted, Result: &review.Result{}}, NextStopped, ReasonSessionEnded, audit.ReviewSession{Status: audit.SessionEnded}},
	} {
		n, why := next(tc.sess, tc.r)
		if n != tc.next || why != tc.why {
			t.Errorf("%s/%s: %s/%s, want %s/%s", tc.r.Status, tc.r.FailureReason, n, why, tc.next, tc.why)
		}
	}
}

func TestWaitDefaultFromEnv(t *testing.T) {
	t.Setenv(WaitDefaultEnv, "")
	if d := WaitDefaultFromEnv(); d != DefaultWait {
		t.Errorf("unset: %v", d)
	}
	t.Setenv(WaitDefaultEnv, "270")
	if d := WaitDefaultFromEnv(); d.Seconds() != 270 {
		t.Errorf("270: %v", d)
	}
}

// An agent kind aicr does not know is REVIEWER_NOT_FOUND, naming it.
func TestAgentOverride(t *testing.T) {
	cfg := &config.Config{Path: "/etc/aicr/aicr.toml", Agent: agent.Config{Kind: "builtin"}}
	if c, err := agentConfig(cfg, "", ""); err != nil || c != cfg {
		t.Errorf("no override: %v", err)
	}
	_, err := agentConfig(cfg, "gpt-reviewer-9000", "")
	var env *mcperr.Error
	if !errors.As(err, &env) || env.Code != mcperr.ReviewerNotFound || !strings.Contains(env.Message, "gpt-reviewer-9000") {
		t.Errorf("unknown agent: %v", err)
	}
	if c, err := agentConfig(cfg, "builtin", ""); err != nil || c.Agent.Kind != "builtin" {
		t.Errorf("builtin: %v", err)
	}
}
