package builtin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/agent/builtin"
	"github.com/aicr-dev/aicr/agent/pass"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
)

const (
	plantedKey = "AKIAQWERTYUIOPASDFGH"
	outsideKey = "AKIAZZZZOUTSIDEQWERT"
	plantedPwd = "hunter2-production"
)

// buildRun lays out a run directory with one Go file whose added lines are
// 5-8 and 12; line 7 holds an AWS key, line 12 a conflict marker, and
// line 3 (inside the hunk but not added) another key that predates the
// change and must not be reported.
func buildRun(t testing.TB, files map[string]string, change vcs.Change) rundir.Layout {
	t.Helper()
	run := rundir.New(t.TempDir())
	for p, content := range files {
		name := filepath.Join(run.SrcDir(), filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := json.Marshal(change)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run.ChangePath(), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run.DiffPath(), []byte("(diff not used by the builtin agent)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(run.AgentDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	return run
}

func plantedSource() string {
	lines := []string{
		"package config",                         // 1
		"",                                       // 2
		`var legacyKey = "` + outsideKey + `"`,   // 3  context, not added
		"",                                       // 4
		"func Load() Config {",                   // 5  added
		`	password := os.Getenv("DB_PASSWORD")`,  // 6  added, not a literal
		`	keyID := "` + plantedKey + `"`,         // 7  added: AWS key
		"	return Config{ID: keyID}",              // 8  added
		"}",                                      // 9
		`var oldPassword = "` + plantedPwd + `"`, // 10 not added
		"",                                       // 11
		"<<<<<<< .mine",                          // 12 added: conflict marker
		"=======",                                // 13 not added
		">>>>>>> .r42",                           // 14 not added
	}
	return strings.Join(lines, "\n") + "\n"
}

func newAgent(t *testing.T, logs *bytes.Buffer) *builtin.Agent {
	t.Helper()
	return newAgentWithLimits(t, logs, review.Limits{})
}

func newAgentWithLimits(t testing.TB, logs *bytes.Buffer, limits review.Limits) *builtin.Agent {
	t.Helper()
	a, err := builtin.New(builtin.Options{
		Limits: limits,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// testContext only guards against a hung child; nothing asserts on time.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestReviewReportsPlantedProblems(t *testing.T) {
	run := buildRun(t, map[string]string{
		"app/config.go": plantedSource(),
		"img/logo.png":  "\x89PNG\x00\x00" + plantedKey,
	}, vcs.Change{
		VCS: vcs.KindSVN, Repo: "main", Revision: "42",
		Files: []vcs.FileChange{
			{Path: "app/config.go", Action: vcs.ActionModify, NodeKind: vcs.NodeFile,
				Added: []vcs.LineRange{{Start: 5, End: 8}, {Start: 12, End: 12}},
				Hunks: []vcs.LineRange{{Start: 2, End: 14}}},
			{Path: "img/logo.png", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, Binary: true, Skipped: "binary",
				Added: []vcs.LineRange{{Start: 1, End: 1}}},
			{Path: "old/secret.txt", Action: vcs.ActionDelete, NodeKind: vcs.NodeFile, Skipped: "deleted"},
		},
	})
	var logs bytes.Buffer
	if _, err := newAgent(t, &logs).Review(testContext(t), run, pass.Pass{Number: 1, Kind: pass.Review}); err != nil {
		t.Fatalf("review: %v\nlogs:\n%s", err, logs.String())
	}

	st, err := review.LoadState(run.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Rejected) != 0 {
		t.Errorf("rejected calls: %+v", st.Rejected)
	}
	var got []string
	for _, p := range st.Problems {
		got = append(got, fmt.Sprintf("%s:%d %s %s", p.File, p.Line, p.Severity, p.Category))
	}
	want := []string{
		"app/config.go:7 critical hard-coded-credential",
		"app/config.go:12 high merge-conflict-marker",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(st.Problems[0].Message, "aws-access-token") {
		t.Errorf("message does not name the kind: %q", st.Problems[0].Message)
	}
	if len(st.Summaries) != 1 || st.Skip != nil {
		t.Fatalf("want one summary and no skip: %+v / %+v", st.Summaries, st.Skip)
	}
	md := st.Summaries[0].Markdown
	for _, s := range []string{"5 added lines in 1 file", "aws-access-token: 1", "merge-conflict marker: 1"} {
		if !strings.Contains(md, s) {
			t.Errorf("summary lacks %q:\n%s", s, md)
		}
	}

	raw, err := os.ReadFile(run.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{plantedKey, outsideKey, plantedPwd, "AKIA"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("state file contains secret %q", secret)
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("logs contain secret %q", secret)
		}
	}
}

func TestReviewSkips(t *testing.T) {
	clean := "package x\n\nfunc F() int { return 1 }\n"
	tests := []struct {
		name   string
		files  map[string]string
		change []vcs.FileChange
		reason string
	}{
		{
			name:  "clean code is lgtm",
			files: map[string]string{"x.go": clean},
			change: []vcs.FileChange{{Path: "x.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
				Added: []vcs.LineRange{{Start: 1, End: 3}}, Hunks: []vcs.LineRange{{Start: 1, End: 3}}}},
			reason: builtin.SkipLGTM,
		},
		{
			name:  "only deletions and binaries",
			files: map[string]string{"b.bin": "\x00\x01" + plantedKey},
			change: []vcs.FileChange{
				{Path: "gone.go", Action: vcs.ActionDelete, NodeKind: vcs.NodeFile, Skipped: "deleted"},
				{Path: "b.bin", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, Added: []vcs.LineRange{{Start: 1, End: 1}}},
				{Path: "dir", Action: vcs.ActionAdd, NodeKind: vcs.NodeDir},
			},
			reason: builtin.SkipNoReviewableCode,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := buildRun(t, tt.files, vcs.Change{VCS: vcs.KindP4, Repo: "depot", Revision: "7", Files: tt.change})
			var logs bytes.Buffer
			if _, err := newAgent(t, &logs).Review(testContext(t), run, pass.Pass{Number: 1, Kind: pass.Review}); err != nil {
				t.Fatalf("review: %v\n%s", err, logs.String())
			}
			st, err := review.LoadState(run.StatePath())
			if err != nil {
				t.Fatal(err)
			}
			if st.Skip == nil || st.Skip.Reason != tt.reason || len(st.Problems) != 0 || len(st.Summaries) != 0 {
				t.Fatalf("state %+v, want skip %q only", st, tt.reason)
			}
		})
	}
}

func TestReviewRefusesACorruptStateFile(t *testing.T) {
	run := buildRun(t, map[string]string{"x.go": "x\n"}, vcs.Change{Files: []vcs.FileChange{
		{Path: "x.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile, Added: []vcs.LineRange{{Start: 1, End: 1}}},
	}})
	var logs bytes.Buffer
	a := newAgent(t, &logs)
	// A corrupt state file stops the review before any call: writing
	// over it would lose what it held, and the error must say why.
	if err := os.WriteFile(run.StatePath(), []byte("{torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := a.Review(testContext(t), run, pass.Pass{Number: 1, Kind: pass.Review})
	if err == nil || !strings.Contains(err.Error(), "corrupt state file") {
		t.Fatalf("want error mentioning the corrupt state, got %v", err)
	}
}

// The builtin agent used to need `aicr mcp serve` to start, one process
// per review; its tools now run in process, so it needs no command at all
// and works where no aicr binary can be started.
func TestReviewNeedsNoServerProcess(t *testing.T) {
	t.Setenv("PATH", "")
	run := buildRun(t, map[string]string{"app/config.go": plantedSource()}, vcs.Change{
		Files: []vcs.FileChange{{Path: "app/config.go", Action: vcs.ActionModify, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 7, End: 7}}, Hunks: []vcs.LineRange{{Start: 5, End: 9}}}},
	})
	a, err := builtin.New(builtin.Options{})
	if err != nil {
		t.Fatalf("New without a server command: %v", err)
	}
	if _, err := a.Review(testContext(t), run, pass.Pass{Number: 1, Kind: pass.Review}); err != nil {
		t.Fatalf("review: %v", err)
	}
	st, err := review.LoadState(run.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Problems) != 1 || st.Problems[0].Line != 7 || len(st.Summaries) != 1 {
		t.Fatalf("state %+v, want the key on line 7 and a summary", st)
	}
}

func TestReviewStopsAtTheProblemLimit(t *testing.T) {
	// More findings than the server's limit of 50 problems. The agent used
	// to send every one of them, each refused and appended to the state
	// file (10,000 credential lines took minutes); it stops at the first
	// LIMIT_EXCEEDED and counts the rest in the summary.
	const n = 300
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "<<<<<<< branch-%d\n", i)
	}
	run := buildRun(t, map[string]string{"m.go": b.String()}, vcs.Change{Files: []vcs.FileChange{
		{Path: "m.go", Action: vcs.ActionAdd, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 1, End: n}}, Hunks: []vcs.LineRange{{Start: 1, End: n}}},
	}})
	var logs bytes.Buffer
	if _, err := newAgent(t, &logs).Review(testContext(t), run, pass.Pass{Number: 1, Kind: pass.Review}); err != nil {
		t.Fatalf("review: %v", err)
	}
	st, err := review.LoadState(run.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	limit := review.DefaultLimits().MaxProblems
	if len(st.Problems) != limit || len(st.Rejected) != 1 || st.RejectedTotal != 1 || st.Rejected[0].Code != review.CodeLimitExceeded {
		t.Fatalf("%d problems, %d rejected (total %d): %+v", len(st.Problems), len(st.Rejected), st.RejectedTotal, st.Rejected)
	}
	want := fmt.Sprintf("%d more findings not reported: the review reached its limit of problems", n-limit)
	if len(st.Summaries) != 1 || !strings.Contains(st.Summaries[0].Markdown, want) {
		t.Errorf("summary %+v, want %q", st.Summaries, want)
	}
	if got := strings.Count(logs.String(), "tool call rejected"); got != 1 {
		t.Errorf("logged %d rejections, want 1:\n%s", got, logs.String())
	}
}

// Configured limits reach the review tools: with one problem
// allowed, the second planted problem is refused as over the limit.
func TestReviewPassesLimits(t *testing.T) {
	run := buildRun(t, map[string]string{"app/config.go": plantedSource()}, vcs.Change{
		VCS: vcs.KindSVN, Repo: "main", Revision: "42",
		Files: []vcs.FileChange{{Path: "app/config.go", Action: vcs.ActionModify, NodeKind: vcs.NodeFile,
			Added: []vcs.LineRange{{Start: 5, End: 8}, {Start: 12, End: 12}},
			Hunks: []vcs.LineRange{{Start: 2, End: 14}}}},
	})
	var logs bytes.Buffer
	a := newAgentWithLimits(t, &logs, review.Limits{MaxProblems: 1})
	if _, err := a.Review(testContext(t), run, pass.Pass{Number: 1, Kind: pass.Review}); err != nil {
		t.Fatalf("review: %v\nlogs:\n%s", err, logs.String())
	}
	st, err := review.LoadState(run.StatePath())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Problems) != 1 || len(st.Rejected) != 1 || st.Rejected[0].Code != review.CodeLimitExceeded {
		t.Fatalf("problems %+v, rejected %+v", st.Problems, st.Rejected)
	}
}
