package im

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

func sampleMessage() Message {
	return Message{
		RunID: 7,
		Change: &vcs.Change{
			VCS: vcs.KindSVN, Repo: "main", Revision: "42", Author: "alice",
			Description: "\n  Fix the frobnicator  \n\nLonger explanation.",
		},
		ChangeURL: "https://svn.example.com/r42",
		Result: review.Result{
			Problems: []review.Problem{
				{File: "b.go", Line: 3, Severity: review.SeverityHigh, Category: "bug", Message: "nil deref"},
				{File: "a.go", Line: 20, Severity: review.SeverityCritical, Category: "security", Message: "sql injection",
					Suggestion: "use placeholders\nlike ?"},
				{File: "a.go", Line: 10, EndLine: 12, Severity: review.SeverityCritical, Category: "security", Message: "secret in log"},
				{File: "a.go", Line: 1, Severity: review.SeverityLow, Category: "style", Message: "long line"},
			},
			Summaries: []review.Summary{{Title: "Overview", Markdown: "Mostly fine.\n\n- one\n- two\n"}},
		},
	}
}

func TestRenderTextGolden(t *testing.T) {
	want := `aicr review: main r42 by alice
Fix the frobnicator
Problems: 2 critical, 1 high, 1 low
https://svn.example.com/r42

🔴 a.go:10-12 [critical] security: secret in log
🔴 a.go:20 [critical] security: sql injection
    Suggestion: use placeholders
    like ?
🟠 b.go:3 [high] bug: nil deref
🔵 a.go:1 [low] style: long line

## Overview
Mostly fine.

- one
- two

run 7
`
	if got := RenderText(sampleMessage()); got != want {
		t.Fatalf("RenderText mismatch\n--- got\n%s--- want\n%s", got, want)
	}
}

func TestRenderTextIsDeterministic(t *testing.T) {
	a := sampleMessage()
	b := sampleMessage()
	ps := b.Result.Problems
	for i, j := 0, len(ps)-1; i < j; i, j = i+1, j-1 {
		ps[i], ps[j] = ps[j], ps[i]
	}
	if RenderText(a) != RenderText(b) {
		t.Fatal("output depends on input order of problems")
	}
	if a.Result.Problems[0].File != "b.go" {
		t.Fatal("RenderText reordered the caller's problems")
	}
}

func TestRenderTextStripsControlCharacters(t *testing.T) {
	msg := Message{
		Change: &vcs.Change{VCS: vcs.KindP4, Repo: "depot", Revision: "12345", Author: "bob\x1b[31m",
			Description: "title\r\nbody"},
		Result: review.Result{
			Problems: []review.Problem{{File: "x.c", Line: 5, Severity: review.SeverityMedium, Category: "bug",
				Message: "bad\x1b]0;pwned\x07 thing\u202Eevil\x00", Suggestion: "tab\tkept\x7f"}},
			Summaries: []review.Summary{{Markdown: "ok\x08\x08ok\xff"}},
		},
	}
	got := RenderText(msg)
	for _, r := range got {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r == '\u202E' {
			t.Errorf("output contains control character %U:\n%q", r, got)
		}
	}
	for _, want := range []string{
		"aicr review: depot change 12345 by bob[31m\n",
		"title\n",
		"x.c:5 [medium] bug: bad]0;pwned thingevil\n",
		"    Suggestion: tab\tkept\n",
		"okok\uFFFD\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestRenderTextNoProblems(t *testing.T) {
	msg := Message{
		Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "9"},
		Result: review.Result{Skip: &review.Skip{Reason: "no_reviewable_code"}},
	}
	// Not "No problems found": nothing was looked at.
	want := "aicr review: main r9\nNot reviewed: the change has no code to review (only deletions, binaries, directories or excluded files).\n"
	if got := RenderText(msg); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A clean commit is a review that found nothing, not a skipped one.
func TestRenderTextLGTMSaysNoProblems(t *testing.T) {
	msg := Message{
		Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "9"},
		Result: review.Result{Skip: &review.Skip{Reason: "lgtm"}},
	}
	want := "aicr review: main r9\nNo problems found.\n"
	if got := RenderText(msg); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// Files that were not reviewed are named with the reason, whether or not
// the rest of the change was reviewed; deletions are not "left out".
func TestRenderTextNamesFilesLeftOut(t *testing.T) {
	files := []vcs.FileChange{
		{Path: "src/a.go"},
		{Path: "old.go", Skipped: vcs.SkipDeleted},
		{Path: "big.sql", Skipped: vcs.SkipTooLarge},
		{Path: "vendor/x.go", Skipped: vcs.SkipExcluded},
	}
	for i := range 12 {
		files = append(files, vcs.FileChange{Path: fmt.Sprintf("img/%02d.png", i), Skipped: vcs.SkipBinary})
	}
	msg := Message{
		Change: &vcs.Change{VCS: vcs.KindP4, Repo: "depot", Revision: "7", Files: files},
		Result: review.Result{Problems: []review.Problem{{File: "src/a.go", Line: 1, Severity: review.SeverityHigh, Message: "m"}}},
	}
	got := RenderText(msg)
	want := "\nLeft out of the review: big.sql (too large), vendor/x.go (excluded by filter), img/00.png (binary), " +
		"img/01.png (binary), img/02.png (binary), img/03.png (binary), img/04.png (binary), img/05.png (binary), " +
		"img/06.png (binary), img/07.png (binary) and 4 more.\n"
	if !strings.HasSuffix(got, want) || strings.Contains(got, "old.go") || strings.Contains(got, "No problems found") {
		t.Fatalf("got:\n%s\nwant suffix:\n%s", got, want)
	}
}

// Issue 10 #28: credentials in a commit message were posted verbatim.
func TestRenderTextRedactsCredentialsInDescription(t *testing.T) {
	msg := Message{Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "9",
		Description: "Deploy fix, db password: Hunter2-Prod! (AKIAQWERTYUIOPASDFGH)\nmore"}}
	got := RenderText(msg)
	for _, leaked := range []string{"Hunter2-Prod!", "AKIAQWERTYUIOPASDFGH"} {
		if strings.Contains(got, leaked) {
			t.Fatalf("credential %q posted:\n%s", leaked, got)
		}
	}
	if !strings.Contains(got, "Deploy fix, db password: <redacted> (<redacted>)") {
		t.Fatalf("description not shown redacted:\n%s", got)
	}
}

func TestRenderTextNilChange(t *testing.T) {
	got := RenderText(Message{})
	if got != "aicr review: unknown change\nNo problems found.\n" {
		t.Fatalf("got %q", got)
	}
}

func TestCountsText(t *testing.T) {
	ps := []review.Problem{
		{Severity: review.SeverityInfo}, {Severity: review.SeverityCritical},
		{Severity: review.SeverityInfo}, {Severity: "weird"},
	}
	if got, want := CountsText(ps), "1 critical, 2 info, 1 unknown"; got != want {
		t.Fatalf("CountsText = %q, want %q", got, want)
	}
	if got := CountsText(nil); got != "no problems" {
		t.Fatalf("CountsText(nil) = %q", got)
	}
	c := CountBySeverity(ps)
	if c[review.SeverityInfo] != 2 || c[review.SeverityCritical] != 1 || len(c) != 3 {
		t.Fatalf("CountBySeverity = %v", c)
	}
}

func TestSortProblems(t *testing.T) {
	ps := []review.Problem{
		{File: "b", Line: 1, Severity: review.SeverityLow},
		{File: "a", Line: 9, Severity: review.SeverityLow},
		{File: "a", Line: 2, Severity: review.SeverityLow},
		{File: "z", Line: 1, Severity: review.SeverityCritical},
		{File: "a", Line: 2, Severity: review.SeverityLow, Message: "a second one"},
	}
	SortProblems(ps)
	var got []string
	for _, p := range ps {
		got = append(got, ProblemLocation(p)+" "+p.Message)
	}
	want := []string{"z:1 ", "a:2 ", "a:2 a second one", "a:9 ", "b:1 "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("order = %q, want %q", got, want)
	}
}
