package im_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/im/dingtalk"
	"github.com/aicr-dev/aicr/im/feishu"
	"github.com/aicr-dev/aicr/im/slack"
	"github.com/aicr-dev/aicr/im/webhook"
	"github.com/aicr-dev/aicr/im/wecom"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// renderAll renders rep in every dialect, as the text each platform
// receives (JSON bodies for the chat platforms).
func renderAll(t *testing.T, rep im.Report) map[string]string {
	t.Helper()
	js := func(v any, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	out := map[string]string{"text": im.PlainText(rep)}
	out["feishu"] = js(feishu.Render(rep, true, 0))
	out["dingtalk"] = js(dingtalk.Render(rep, 0))
	out["wecom"] = js(wecom.Render(rep, 0))
	out["slack"] = js([]any{slack.RenderSummary(rep, "<@U1>", false), slack.RenderReplies(rep, 2)}, nil)
	out["slack-webhook"] = js(slack.RenderSummary(rep, "<@U1>", true), nil)
	out["webhook"] = webhook.NewPayload(rep, "ci", "k", time.Unix(0, 0)).Text
	return out
}

// Every dialect prints the report's words, not its own: with the words
// and sentences of a report replaced, no renderer shows the English
// defaults, and each shows the replacements. A channel that hard-codes
// "Problems", "Suggestion", "View change" or a verdict fails here.
func TestDialectsTakeTheirWordingFromTheReport(t *testing.T) {
	msg := imtest.Message()
	msg.Result.Skip = &review.Skip{Reason: "agent_timeout"}
	msg.Change.Files = []vcs.FileChange{{Path: "big.sql", Skipped: "too large"}}
	rep := im.BuildReport(msg)
	if rep.SkipNote() == "" || rep.LeftOutLine() == "" {
		t.Fatalf("fixture has no skip note or left-out line: %+v", rep)
	}
	rep.Words = im.Words{Problems: "Befunde", Suggestion: "Vorschlag", ViewChange: "Zur Änderung", Author: "Verfasser"}
	rep.Verdict = "Befunde: " + rep.Counts
	rep.Skip = "Teilweise geprüft."
	leftOut := rep.LeftOutLine()

	for dialect, got := range renderAll(t, rep) {
		must := []string{"Befunde", "Vorschlag", rep.SkipNote(), leftOut}
		if dialect != "text" && dialect != "webhook" {
			must = append(must, "Zur Änderung") // the plain text shows the bare URL
		}
		if strings.HasPrefix(dialect, "slack") {
			must = append(must, "Verfasser")
		}
		for _, w := range must {
			if !strings.Contains(got, w) {
				t.Errorf("%s: lacks the report's %q:\n%s", dialect, w, got)
			}
		}
		for _, w := range []string{im.TextProblems, im.TextSuggestion, im.TextViewChange, im.TextAuthor + ":", "Not reviewed"} {
			if strings.Contains(got, w) {
				t.Errorf("%s: says %q of its own:\n%s", dialect, w, got)
			}
		}
	}

	clean := im.BuildReport(imtest.EmptyMessage())
	clean.Verdict = "Alles in Ordnung."
	for dialect, got := range renderAll(t, clean) {
		if !strings.Contains(got, clean.Verdict) || strings.Contains(got, im.TextNoProblems) {
			t.Errorf("%s: verdict is not the report's:\n%s", dialect, got)
		}
	}
}

// No channel package spells out the report's wording: the words live in
// package im (report.go) and reach the dialects through im.Report.
func TestChannelPackagesHoldNoReportWording(t *testing.T) {
	words := []string{im.TextNoProblems, im.TextProblems, im.TextNotReviewed, im.TextViewChange,
		im.TextSuggestion, im.TextLeftOut, im.TextAuthor + ":", "Review skipped", "left out", "not shown"}
	checked := 0
	err := filepath.WalkDir(".", func(file string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// Package im itself owns the wording; imtest's fixtures are not
		// a channel.
		if d.IsDir() && (d.Name() == "testdata" || file == filepath.Join("internal", "imtest")) {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Dir(file) == "." || !strings.HasSuffix(file, ".go") || strings.HasSuffix(file, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, w := range words {
				if strings.Contains(s, w) {
					t.Errorf("%s: string %q spells out report wording %q; take it from im.Report", file, s, w)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}

// Every dialect ends the report with the footer naming the agent and
// model (issue 11 item 6), worded by BuildReport.
func TestEveryDialectShowsTheReviewerFooter(t *testing.T) {
	msg := imtest.Message()
	msg.Reviewer = im.Reviewer{Agent: "llm", Model: "gpt-4o-mini"}
	rep := im.BuildReport(msg)
	if rep.Footer != "Reviewed by llm (gpt-4o-mini) · run 7" {
		t.Fatalf("footer %q", rep.Footer)
	}
	rep.Footer = "Geprüft von llm (gpt-4o-mini)"
	for dialect, got := range renderAll(t, rep) {
		if !strings.Contains(got, "Geprüft von llm") {
			t.Errorf("%s: lacks the footer:\n%s", dialect, got)
		}
	}
	if rep := im.BuildReport(imtest.Message()); rep.Footer != "run 7" {
		t.Errorf("footer without a reviewer: %q", rep.Footer)
	}
}
