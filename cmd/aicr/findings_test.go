package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/admin"
	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/findings"
	"github.com/aicr-dev/aicr/internal/admintest"
)

func TestFindingsFlags(t *testing.T) {
	checkFlags(t, newCmdFindingsList, []flagCase[FindingsListOptions]{
		{name: "defaults", want: FindingsListOptions{Input: admin.FindingsListInput{Limit: 50}, Format: "text"}},
		{name: "all", args: []string{"--repo", "main", "--path", "src/", "--state", "active", "--severity", "high", "--author", "alice",
			"--category", "security", "--run", "7", "--limit", "5", "--format", "json"},
			want: FindingsListOptions{Input: admin.FindingsListInput{Repo: "main", Path: "src/", State: "active", Severity: "high", Author: "alice",
				Category: "security", RunID: 7, Limit: 5}, Format: "json"}},
		{name: "bad state", args: []string{"--state", "closed"}, code: exitUsage, errSays: "--state must be open, reopened, resolved, dismissed or active"},
		{name: "zero limit", args: []string{"--limit", "0"}, code: exitUsage, errSays: "--limit must be at least 1"},
		{name: "argument", args: []string{"x"}, code: exitUsage},
	})
	checkFlags(t, newCmdFindingsShow, []flagCase[FindingsShowOptions]{
		{name: "id", args: []string{"3", "--format", "json"}, want: FindingsShowOptions{ID: 3, Format: "json"}},
		{name: "not a number", args: []string{"three"}, code: exitUsage, errSays: `finding id "three" is not a number`},
		{name: "no id", code: exitUsage},
	})
	checkFlags(t, newCmdFindingsDismiss, []flagCase[FindingsActOptions]{
		{name: "dismiss", args: []string{"3", "--reason", "false_positive", "--note", "bounded by the caller"},
			want: FindingsActOptions{ID: 3, Reason: "false_positive", Note: "bounded by the caller", Format: "text"}},
		{name: "dry run", args: []string{"3", "--reason", "wont_fix", "--dry-run", "--format", "json"},
			want: FindingsActOptions{ID: 3, Reason: "wont_fix", DryRun: true, Format: "json"}},
		{name: "no reason", args: []string{"3"}, code: exitUsage, errSays: `"reason" not set`},
		{name: "bad reason", args: []string{"3", "--reason", "meh"}, code: exitUsage, errSays: "--reason must be false_positive, wont_fix, accepted_risk"},
		{name: "no id", args: []string{"--reason", "wont_fix"}, code: exitUsage},
	})
	checkFlags(t, newCmdFindingsReopen, []flagCase[FindingsActOptions]{
		{name: "reopen", args: []string{"3", "--note", "oops"}, want: FindingsActOptions{ID: 3, Note: "oops", Format: "text"}},
		{name: "zero", args: []string{"0"}, code: exitUsage, errSays: "finding id"},
	})
	checkFlags(t, newCmdFindingsStats, []flagCase[FindingsStatsOptions]{
		{name: "defaults", want: FindingsStatsOptions{Format: "text"}},
		{name: "all", args: []string{"--repo", "main", "--since", "720h", "--format", "json"},
			want: FindingsStatsOptions{Input: admin.FindingsStatsInput{Repo: "main", Since: "720h"}, Format: "json"}},
	})
}

// The verbs on a real store: list and stats print what the admin tools
// return, show prints the history, dismiss records the operator behind
// sudo, --dry-run writes nothing, reopen takes it back.
func TestFindingsVerbs(t *testing.T) {
	fx := admintest.New(t)
	fs := admintest.AddFindings(t, fx)
	ctx := context.Background()

	out, errOut, code := runCLI(t, "findings", "list", "--format", "json", "--config", fx.Config)
	if code != 0 {
		t.Fatalf("list: exit %d %s", code, errOut)
	}
	tool, err := admin.New(admin.Deps{ConfigPath: fx.Config}).FindingsList(ctx, admin.FindingsListInput{})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.MarshalIndent(tool.Findings, "", "  "); strings.TrimSpace(out) != string(want) {
		t.Fatalf("list --format json is not findings_list's findings:\n%s\nwant\n%s", out, want)
	}
	// show and stats print the tools' results too (stats: its list).
	a := admin.New(admin.Deps{ConfigPath: fx.Config})
	detail, err := a.FindingsShow(ctx, admin.FindingInput{FindingID: fs.Dismissed})
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.FindingsStats(ctx, admin.FindingsStatsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want any
	}{
		{[]string{"findings", "show", fmt.Sprint(fs.Dismissed)}, detail},
		{[]string{"findings", "stats"}, st.Stats},
	} {
		got, _, code := runCLI(t, append(c.args, "--format", "json", "--config", fx.Config)...)
		if want, _ := json.MarshalIndent(c.want, "", "  "); code != 0 || strings.TrimSpace(got) != string(want) {
			t.Fatalf("%v --format json (exit %d):\n%s\nwant the tool's\n%s", c.args, code, got, want)
		}
	}
	text, _, _ := runCLI(t, "findings", "list", "--state", "active", "--config", fx.Config)
	if lines := strings.Split(strings.TrimSpace(text), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "ID\tSTATE") ||
		!strings.Contains(lines[1], "src/a.go:4") || !strings.Contains(lines[1], "SQL built from a string") {
		t.Fatalf("list --state active:\n%s", text)
	}
	if _, errOut, code := runCLI(t, "findings", "list", "--repo", "docs", "--config", fx.Config); code != 0 || !strings.Contains(errOut, "no findings match") {
		t.Fatalf("empty list: exit %d %s", code, errOut)
	}

	show, _, code := runCLI(t, "findings", "show", fmt.Sprint(fs.Dismissed), "--config", fx.Config)
	if code != 0 || !strings.Contains(show, "dismissed (false_positive) by carol via web") || !strings.Contains(show, "history (2):") ||
		!strings.Contains(show, "cleanup is deferred") {
		t.Fatalf("show:\n%s", show)
	}
	if _, errOut, code := runCLI(t, "findings", "show", "999", "--config", fx.Config); code != 1 || !strings.Contains(errOut, "aicr findings list") {
		t.Fatalf("missing finding: exit %d %s", code, errOut)
	}

	t.Setenv("SUDO_USER", "frank")
	id := fmt.Sprint(fs.Open)
	dry, _, code := runCLI(t, "findings", "dismiss", id, "--reason", "wont_fix", "--dry-run", "--config", fx.Config)
	if code != 0 || !strings.Contains(dry, "finding "+id+": open → dismissed") || !strings.Contains(dry, "nothing was written") {
		t.Fatalf("dry run: exit %d\n%s", code, dry)
	}
	if f := finding(t, fx, fs.Open); f.State != findings.StateOpen {
		t.Fatalf("--dry-run dismissed it: %+v", f)
	}
	out, errOut, code = runCLI(t, "findings", "dismiss", id, "--reason", "wont_fix", "--note", "legacy code", "--format", "json", "--config", fx.Config)
	var res admin.FindingActOutput
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.Confirmed || res.Finding == nil {
		t.Fatalf("dismiss: exit %d %s\n%s", code, errOut, out)
	}
	if f := finding(t, fx, fs.Open); f.State != findings.StateDismissed || f.ActedBy != "frank" || f.ActedVia != findings.ViaCLI || f.Note != "legacy code" {
		t.Fatalf("dismissed = %+v", f)
	}
	if out, _, code := runCLI(t, "findings", "reopen", id, "--config", fx.Config); code != 0 || !strings.Contains(out, "dismissed → reopened") {
		t.Fatalf("reopen: exit %d\n%s", code, out)
	}
	if f := finding(t, fx, fs.Open); f.State != findings.StateReopened {
		t.Fatalf("reopened = %+v", f)
	}

	stats, _, code := runCLI(t, "findings", "stats", "--repo", "main", "--config", fx.Config)
	if code != 0 || !strings.Contains(stats, "GROUP\tVALUE\tREPORTED") || !strings.Contains(stats, "category\tsecurity\t2\t") || !strings.Contains(stats, "50%") {
		t.Fatalf("stats:\n%s", stats)
	}
	js, _, _ := runCLI(t, "findings", "stats", "--format", "json", "--config", fx.Config)
	var views []admin.StatView
	if err := json.Unmarshal([]byte(js), &views); err != nil || len(views) == 0 {
		t.Fatalf("stats json: %v\n%s", err, js)
	}
}

func finding(t *testing.T, fx admintest.Fixture, id int64) findings.Finding {
	t.Helper()
	s, err := audit.OpenReadOnly(context.Background(), fx.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := s.GetFinding(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
