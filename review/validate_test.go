package review_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

func validProblem() review.Problem {
	return review.Problem{
		File: "app/main.go", Line: 7, Severity: review.SeverityHigh,
		Category: "resource-leak", Message: "the connection is never closed",
	}
}

func TestValidatorProblem(t *testing.T) {
	f := newFixture(t)
	v := review.NewValidator(f.change, f.srcDir, review.Limits{MaxMessageBytes: 40})

	tests := []struct {
		name       string
		edit       func(p *review.Problem)
		code       string
		msgHas     string
		remedyHas  string
		wantFile   string
		wantCat    string
		wantSev    review.Severity
		wantEndDel bool
	}{
		{name: "valid added line", edit: func(p *review.Problem) {}, wantFile: "app/main.go"},
		{name: "hunk context line is commentable", edit: func(p *review.Problem) { p.Line = 3 }},
		{name: "dot slash path is cleaned", edit: func(p *review.Problem) { p.File = "./app//main.go" }, wantFile: "app/main.go"},
		{name: "category normalized", edit: func(p *review.Problem) { p.Category = " Hard Coded_Secret " }, wantCat: "hard-coded-secret"},
		{name: "severity case folded", edit: func(p *review.Problem) { p.Severity = "CRITICAL" }, wantSev: review.SeverityCritical},
		{name: "end_line equal to line dropped", edit: func(p *review.Problem) { p.EndLine = 7 }, wantEndDel: true},
		{name: "range inside hunks", edit: func(p *review.Problem) { p.EndLine = 9 }},

		{name: "file not in change", edit: func(p *review.Problem) { p.File = "app/other.go" },
			code: review.CodeFileNotInChange, msgHas: "app/other.go", remedyHas: "app/main.go, docs/guide.md"},
		{name: "deleted file has no lines", edit: func(p *review.Problem) { p.File = "old/gone.go"; p.Line = 1 },
			code: review.CodeLineNotInDiff, msgHas: "deleted"},
		{name: "absolute path", edit: func(p *review.Problem) { p.File = "/etc/passwd" }, code: review.CodePathOutOfScope},
		{name: "windows drive", edit: func(p *review.Problem) { p.File = "C:/x/main.go" }, code: review.CodePathOutOfScope},
		{name: "dot dot", edit: func(p *review.Problem) { p.File = "app/../../secret" }, code: review.CodePathOutOfScope},
		{name: "backslash", edit: func(p *review.Problem) { p.File = `app\main.go` }, code: review.CodeInvalidInput, msgHas: "backslash"},
		{name: "star wildcard", edit: func(p *review.Problem) { p.File = "app/*.go" }, code: review.CodeInvalidInput, msgHas: "wildcard"},
		{name: "p4 wildcard", edit: func(p *review.Problem) { p.File = "app/..." }, code: review.CodeInvalidInput, msgHas: "..."},
		{name: "question mark", edit: func(p *review.Problem) { p.File = "app/ma?n.go" }, code: review.CodeInvalidInput},
		{name: "bracket", edit: func(p *review.Problem) { p.File = "app/[m]ain.go" }, code: review.CodeInvalidInput},
		{name: "control char", edit: func(p *review.Problem) { p.File = "app/main.go\n" }, code: review.CodeInvalidInput, msgHas: "control"},
		{name: "empty file", edit: func(p *review.Problem) { p.File = "" }, code: review.CodeInvalidInput, msgHas: "file is required"},
		{name: "line zero", edit: func(p *review.Problem) { p.Line = 0 }, code: review.CodeInvalidInput, msgHas: ">= 1"},
		{name: "line outside hunks", edit: func(p *review.Problem) { p.Line = 15 },
			code: review.CodeLineNotInDiff, remedyHas: "5-9, 20"},
		{name: "end before line", edit: func(p *review.Problem) { p.EndLine = 6 }, code: review.CodeInvalidInput},
		{name: "end outside hunks", edit: func(p *review.Problem) { p.EndLine = 14 }, code: review.CodeLineNotInDiff},
		{name: "bad severity", edit: func(p *review.Problem) { p.Severity = "urgent" },
			code: review.CodeInvalidInput, remedyHas: "info, low, medium, high, critical"},
		{name: "empty category", edit: func(p *review.Problem) { p.Category = " _ " }, code: review.CodeInvalidInput},
		{name: "empty message", edit: func(p *review.Problem) { p.Message = "  " }, code: review.CodeInvalidInput},
		{name: "message too long", edit: func(p *review.Problem) { p.Message = strings.Repeat("x", 41) },
			code: review.CodeInvalidInput, remedyHas: "40 bytes"},
		{name: "suggestion too long", edit: func(p *review.Problem) { p.Suggestion = strings.Repeat("x", 41) }, code: review.CodeInvalidInput},
		{name: "bad fingerprint", edit: func(p *review.Problem) { p.Fingerprint = "has space" }, code: review.CodeInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validProblem()
			tt.edit(&p)
			got, terr := v.Problem(p, review.NewState())
			if tt.code != "" {
				if terr == nil {
					t.Fatalf("want %s, got success: %+v", tt.code, got)
				}
				if terr.Code != tt.code {
					t.Fatalf("code = %s (%s), want %s", terr.Code, terr.Message, tt.code)
				}
				if !strings.Contains(terr.Message, tt.msgHas) {
					t.Errorf("message %q lacks %q", terr.Message, tt.msgHas)
				}
				if !strings.Contains(terr.Remedy, tt.remedyHas) || terr.Remedy == "" {
					t.Errorf("remedy %q lacks %q", terr.Remedy, tt.remedyHas)
				}
				return
			}
			if terr != nil {
				t.Fatalf("unexpected %v", terr)
			}
			if tt.wantFile != "" && got.File != tt.wantFile {
				t.Errorf("file = %q, want %q", got.File, tt.wantFile)
			}
			if tt.wantCat != "" && got.Category != tt.wantCat {
				t.Errorf("category = %q, want %q", got.Category, tt.wantCat)
			}
			if tt.wantSev != "" && got.Severity != tt.wantSev {
				t.Errorf("severity = %q, want %q", got.Severity, tt.wantSev)
			}
			if tt.wantEndDel && got.EndLine != 0 {
				t.Errorf("end_line = %d, want 0", got.EndLine)
			}
			if len(got.Fingerprint) != 16 {
				t.Errorf("fingerprint %q not derived", got.Fingerprint)
			}
		})
	}
}

func TestValidatorProblemLimitAndDuplicate(t *testing.T) {
	f := newFixture(t)
	v := review.NewValidator(f.change, f.srcDir, review.Limits{MaxProblems: 1})
	st := review.NewState()
	first, terr := v.Problem(validProblem(), st)
	if terr != nil {
		t.Fatal(terr)
	}
	st.Problems = append(st.Problems, first)

	// The same anchor and category is a duplicate, which passes even at the limit.
	dup := validProblem()
	dup.Message = "reworded: connection leaks"
	got, terr := v.Problem(dup, st)
	if terr != nil {
		t.Fatalf("duplicate refused: %v", terr)
	}
	if got.Fingerprint != first.Fingerprint || st.ProblemIndex(got.Fingerprint) != 0 {
		t.Fatalf("duplicate not recognised: %q vs %q", got.Fingerprint, first.Fingerprint)
	}

	other := validProblem()
	other.Line = 8
	if _, terr := v.Problem(other, st); terr == nil || terr.Code != review.CodeLimitExceeded {
		t.Fatalf("want LIMIT_EXCEEDED, got %v", terr)
	}
}

func TestFingerprintStability(t *testing.T) {
	f := newFixture(t)
	v := review.NewValidator(f.change, f.srcDir, review.Limits{})
	base, terr := v.Problem(validProblem(), nil)
	if terr != nil {
		t.Fatal(terr)
	}

	reworded := validProblem()
	reworded.Message = "db handle leaks on every request"
	reworded.Suggestion = "defer Close"
	if got, _ := v.Problem(reworded, nil); got.Fingerprint != base.Fingerprint {
		t.Errorf("reworded message changed fingerprint: %s vs %s", got.Fingerprint, base.Fingerprint)
	}

	// The same line moved down by two (an unrelated edit above it) and
	// re-indented keeps its fingerprint.
	lines := appSource()
	anchor := lines[6]
	shifted := append([]string{"// new", "// lines"}, lines...)
	shifted[8] = "  " + strings.ReplaceAll(anchor, "\t", "   ")
	writeFile(t, filepath.Join(f.srcDir, "app", "main.go"), strings.Join(shifted, "\n")+"\n")
	v2 := review.NewValidator(f.change, f.srcDir, review.Limits{})
	moved := validProblem()
	moved.Line = 9
	got, terr := v2.Problem(moved, nil)
	if terr != nil {
		t.Fatal(terr)
	}
	if got.Fingerprint != base.Fingerprint {
		t.Errorf("shifted line changed fingerprint: %s vs %s", got.Fingerprint, base.Fingerprint)
	}

	otherCat := validProblem()
	otherCat.Category = "error-handling"
	if got, _ := v.Problem(otherCat, nil); got.Fingerprint == base.Fingerprint {
		t.Error("different category kept the fingerprint")
	}
	otherLine := validProblem()
	otherLine.Line = 8
	if got, _ := v.Problem(otherLine, nil); got.Fingerprint == base.Fingerprint {
		t.Error("different anchor text kept the fingerprint")
	}
	given := validProblem()
	given.Fingerprint = "agent:leak-1"
	if got, _ := v.Problem(given, nil); got.Fingerprint != "agent:leak-1" {
		t.Errorf("agent fingerprint replaced: %s", got.Fingerprint)
	}
}

func TestValidatorSummarySkip(t *testing.T) {
	f := newFixture(t)
	v := review.NewValidator(f.change, f.srcDir, review.Limits{MaxSummaries: 1, MaxSummaryBytes: 10})
	st := review.NewState()
	if _, terr := v.Summary(review.Summary{Markdown: " "}, st); terr == nil || terr.Code != review.CodeInvalidInput {
		t.Errorf("empty markdown: %v", terr)
	}
	if _, terr := v.Summary(review.Summary{Markdown: strings.Repeat("x", 11)}, st); terr == nil || terr.Code != review.CodeInvalidInput {
		t.Errorf("long markdown: %v", terr)
	}
	if _, terr := v.Summary(review.Summary{Title: strings.Repeat("t", 201), Markdown: "ok"}, st); terr == nil || terr.Code != review.CodeInvalidInput {
		t.Errorf("long title: %v", terr)
	}
	s, terr := v.Summary(review.Summary{Markdown: " ok \n"}, st)
	if terr != nil || s.Markdown != "ok" {
		t.Fatalf("valid summary: %+v %v", s, terr)
	}
	st.Summaries = append(st.Summaries, s)
	if _, terr := v.Summary(review.Summary{Markdown: "again"}, st); terr == nil || terr.Code != review.CodeLimitExceeded {
		t.Errorf("second summary: %v", terr)
	}

	if _, terr := v.Skip(review.Skip{Reason: ""}); terr == nil || terr.Code != review.CodeInvalidInput {
		t.Errorf("empty skip: %v", terr)
	}
	if sk, terr := v.Skip(review.Skip{Reason: " lgtm "}); terr != nil || sk.Reason != "lgtm" {
		t.Errorf("lgtm skip: %+v %v", sk, terr)
	}
}

func TestValidatorRequests(t *testing.T) {
	f := newFixture(t)
	v := review.NewValidator(f.change, f.srcDir, review.Limits{MaxContextRequests: 1, MaxAttributionRequests: 1})
	rng := func(s, e int) *vcs.LineRange { return &vcs.LineRange{Start: s, End: e} }

	tests := []struct {
		name string
		req  review.ContextRequest
		code string
	}{
		{name: "file outside the change is fine", req: review.ContextRequest{Path: "lib/util.go", Reason: "callers"}},
		{name: "with range", req: review.ContextRequest{Path: "lib/util.go", Range: rng(3, 3), Reason: "def"}},
		{name: "absolute", req: review.ContextRequest{Path: "/lib/util.go", Reason: "x"}, code: review.CodePathOutOfScope},
		{name: "escape", req: review.ContextRequest{Path: "../other/x", Reason: "x"}, code: review.CodePathOutOfScope},
		{name: "wildcard", req: review.ContextRequest{Path: "lib/*", Reason: "x"}, code: review.CodeInvalidInput},
		{name: "start zero", req: review.ContextRequest{Path: "a.go", Range: rng(0, 3), Reason: "x"}, code: review.CodeInvalidInput},
		{name: "end before start", req: review.ContextRequest{Path: "a.go", Range: rng(5, 3), Reason: "x"}, code: review.CodeInvalidInput},
		{name: "no reason", req: review.ContextRequest{Path: "a.go"}, code: review.CodeInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, terr := v.ContextRequest(tt.req, review.NewState())
			if tt.code == "" && terr != nil {
				t.Fatalf("unexpected %v", terr)
			}
			if tt.code != "" && (terr == nil || terr.Code != tt.code) {
				t.Fatalf("want %s, got %v", tt.code, terr)
			}
			_, terr = v.AttributionRequest(review.AttributionRequest(tt.req), review.NewState())
			if tt.code == "" && terr != nil {
				t.Fatalf("attribution: unexpected %v", terr)
			}
			if tt.code != "" && (terr == nil || terr.Code != tt.code) {
				t.Fatalf("attribution: want %s, got %v", tt.code, terr)
			}
		})
	}

	st := review.NewState()
	st.ContextRequests = append(st.ContextRequests, review.ContextRequest{Path: "a.go", Reason: "x"})
	st.AttributionRequests = append(st.AttributionRequests, review.AttributionRequest{Path: "a.go", Reason: "x"})
	if _, terr := v.ContextRequest(review.ContextRequest{Path: "b.go", Reason: "y"}, st); terr == nil || terr.Code != review.CodeLimitExceeded {
		t.Errorf("context limit: %v", terr)
	}
	if _, terr := v.AttributionRequest(review.AttributionRequest{Path: "b.go", Reason: "y"}, st); terr == nil || terr.Code != review.CodeLimitExceeded {
		t.Errorf("attribution limit: %v", terr)
	}
	// Repeating a request already made is not a new request.
	if _, terr := v.ContextRequest(review.ContextRequest{Path: "./a.go", Reason: "again"}, st); terr != nil {
		t.Errorf("repeated request refused: %v", terr)
	}
}

func TestNormalizeCategory(t *testing.T) {
	for in, want := range map[string]string{
		"Hard Coded_Secret": "hard-coded-secret",
		"SQL--Injection!":   "sql-injection",
		"  null deref ":     "null-deref",
		"":                  "",
	} {
		if got := review.NormalizeCategory(in); got != want {
			t.Errorf("NormalizeCategory(%q) = %q, want %q", in, got, want)
		}
	}
}

// A context or blame request for a file outside the repo's include/exclude
// is refused when the agent makes it, with PATH_OUT_OF_SCOPE and a remedy,
// and never recorded for the follow-up pass (issue 22 C8).
func TestRequestsOutsideTheRepoScopeAreRefused(t *testing.T) {
	f := newFixture(t)
	f.change.Scope = &vcs.Filter{Include: []string{"app/**", "lib/**"}, Exclude: []string{"lib/secret/**"}}
	v := review.NewValidator(f.change, f.srcDir, review.Limits{})
	st := review.NewState()
	for _, p := range []string{"secrets/prod.env", "lib/secret/key.go"} {
		if _, terr := v.ContextRequest(review.ContextRequest{Path: p, Reason: "need it"}, st); terr == nil || terr.Code != review.CodePathOutOfScope || terr.Remedy == "" {
			t.Errorf("ContextRequest(%s) = %+v, want %s with a remedy", p, terr, review.CodePathOutOfScope)
		}
		if _, terr := v.AttributionRequest(review.AttributionRequest{Path: p, Reason: "who"}, st); terr == nil || terr.Code != review.CodePathOutOfScope {
			t.Errorf("AttributionRequest(%s) = %+v, want %s", p, terr, review.CodePathOutOfScope)
		}
	}
	if _, terr := v.ContextRequest(review.ContextRequest{Path: "lib/db.go", Reason: "callers"}, st); terr != nil {
		t.Errorf("in-scope request refused: %+v", terr)
	}
}
