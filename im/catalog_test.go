package im_test

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

// Every language has every key, with the same arguments taking the same
// verbs (a translation may reorder them with %[n]), and no entry is
// blank: a missing or mistyped entry would print English, "%!d" or
// nothing in a Chinese team's report.
func TestCatalogueIsComplete(t *testing.T) {
	en := im.CatalogueKeys(im.LangEnglish)
	if len(en) < 50 {
		t.Fatalf("the English catalogue has only %d keys", len(en))
	}
	for _, l := range im.Languages {
		keys := im.CatalogueKeys(l)
		for _, k := range en {
			if !slices.Contains(keys, k) {
				t.Errorf("%s lacks %s", l, k)
			}
		}
		for _, k := range keys {
			f, _ := im.CatalogueFormat(l, k)
			ef, ok := im.CatalogueFormat(im.LangEnglish, k)
			if !ok {
				t.Errorf("%s has %s, which English lacks", l, k)
				continue
			}
			if strings.TrimSpace(f) == "" {
				t.Errorf("%s %s is blank", l, k)
			}
			if got, want := im.FormatVerbs(f), im.FormatVerbs(ef); !maps.Equal(got, want) {
				t.Errorf("%s %s = %q takes %v, English %q takes %v", l, k, f, got, ef, want)
			}
		}
	}
}

// The verb check itself: reordered arguments match, a changed verb or a
// dropped argument does not.
func TestFormatVerbs(t *testing.T) {
	same := func(a, b string) bool { return maps.Equal(im.FormatVerbs(a), im.FormatVerbs(b)) }
	if !same("%d %s", "%[2]s %[1]d 个") || !same("%.0f%% (%d of %d)", "%.0f%%（%[3]d 个中 %[2]d 个）") {
		t.Error("reordered verbs do not match")
	}
	if same("%d %s", "%s %s") || same("%d of %d", "%d") || same("%s", "100%%") {
		t.Error("different verbs match")
	}
}

func TestParseLanguage(t *testing.T) {
	for in, want := range map[string]im.Language{"": im.LangEnglish, "en": im.LangEnglish, "EN": im.LangEnglish,
		"zh-CN": im.LangChinese, "zh": im.LangChinese, "zh-cn": im.LangChinese, "zh_CN": im.LangChinese, " zh_cn ": im.LangChinese} {
		if got, err := im.ParseLanguage(in); err != nil || got != want {
			t.Errorf("ParseLanguage(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"fr", "zh-TW", "english", "cn"} {
		_, err := im.ParseLanguage(in)
		if err == nil || !strings.Contains(err.Error(), `"en" or "zh-CN"`) {
			t.Errorf("ParseLanguage(%q): %v, want an error naming the allowed values", in, err)
		}
	}
}

// Numbers are grouped as the language groups them, dates are written as
// the language writes them, and identifiers are never grouped.
func TestNumbersAndDates(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 5, 0, 0, time.UTC)
	if got := im.LangChinese.DateTime(at); got != "2026年12月2日 09:05" {
		t.Errorf("zh DateTime = %q", got)
	}
	if got := im.LangEnglish.DateTime(at); got != "2026-12-02 09:05" {
		t.Errorf("en DateTime = %q", got)
	}
	if got := im.LangChinese.Date(at); got != "2026年12月2日" {
		t.Errorf("zh Date = %q", got)
	}
	if got := im.LangEnglish.T(im.KeyDigestOpenN, 12345); got != "12,345 open findings" {
		t.Errorf("en grouping: %q", got)
	}
	if got := im.LangChinese.T(im.KeyDigestOpenN, 12345); got != "12,345 个未解决的问题" {
		t.Errorf("zh grouping: %q", got)
	}
	msg := imtest.Message()
	msg.RunID, msg.Failure, msg.Language = 12345, "boom", im.LangChinese
	if n := im.BuildReport(msg).Notice; !strings.Contains(n, "aicr run retry 12345") {
		t.Errorf("a run id is grouped: %q", n)
	}
}

// englishWord finds what is left of English once the content of the
// fixtures (paths, revisions, names, the agent's own text) and aicr's
// commands and keys are taken out.
var englishWord = regexp.MustCompile(`[A-Za-z]{3,}`)

// contentWords are the fixtures' words and the identifiers that stay as
// they are typed in every language.
var contentWords = strings.NewReplacer(
	"aicr audit show", "", "aicr run retry", "", "aicr", "", "max_files", "", "max_review_bytes", "",
	"main", "", "alice", "", "bob", "", "carol", "", "gpt-4o", "", "llm", "", "big.sql", "", "vendor.bin", "",
	"config/prod.yaml", "", "web/login.go", "", "web/__init__.py", "", "web/x.go", "", "agent timeout", "",
	"connection refused", "", "error-handling", "", "style", "", "bug", "", "hard-coded-credential", "",
	"src/net/", "", "nightly", "",
)

func assertChinese(t *testing.T, what, s string) {
	t.Helper()
	if s == "" {
		t.Errorf("%s is empty", what)
		return
	}
	if w := englishWord.FindString(contentWords.Replace(s)); w != "" {
		t.Errorf("%s has the English word %q: %q", what, w, s)
	}
}

// A report built in zh-CN has no English word of aicr's: every label,
// sentence and note of a review (problems, repeats, reopened finding,
// actions, skip, left-out files, footer), of a failed run (partial and
// whole), of a resolution and of a digest.
func TestChineseReportHasNoEnglishWord(t *testing.T) {
	msg := imtest.TrackedMessage()
	// The agent's own text is the model's to write; here it is Chinese,
	// so any English left is aicr's.
	for i := range msg.Result.Problems {
		msg.Result.Problems[i].Message, msg.Result.Problems[i].Suggestion = "密码以明文提交。", "改用环境变量。"
	}
	msg.Result.Summaries = []review.Summary{{Title: "结论", Markdown: "整体良好。"}}
	msg.Language = im.LangChinese
	msg.RunID = 7
	msg.Reviewer = im.Reviewer{Agent: "llm", Model: "gpt-4o"}
	msg.Result.Skip = &review.Skip{Reason: "agent_timeout"}
	msg.Change.Files = []vcs.FileChange{{Path: "big.sql", Skipped: vcs.SkipTooLarge}, {Path: "vendor.bin", Skipped: vcs.SkipBinary}}
	rep := im.BuildReport(msg)
	if rep.Language != im.LangChinese || len(rep.Repeats) == 0 || len(rep.Entries) == 0 {
		t.Fatalf("fixture lacks parts: %+v", rep)
	}
	w := rep.Words
	for what, s := range map[string]string{"Problems": w.Problems, "Suggestion": w.Suggestion, "ViewChange": w.ViewChange,
		"Author": w.Author, "ReviewedBy": w.ReviewedBy, "StillOpen": w.StillOpen, "Finding": w.Finding, "Reopened": w.Reopened,
		"Title": rep.Title, "Verdict": rep.Verdict, "Counts": rep.Counts, "Skip": rep.Skip, "LeftOutLine": rep.LeftOutLine(),
		"Footer": rep.Footer, "ProblemRange": rep.ProblemRange(1, 2), "OmittedNote(0)": rep.OmittedNote(0),
		"OmittedNote(1)": rep.OmittedNote(1), "OmittedNote(3)": rep.OmittedNote(3), "Repeat": rep.Repeats[0].Text,
		"SkipNoReason": im.LangChinese.SkipSentence(""), "SkipNoCode": im.LangChinese.SkipSentence("no_reviewable_code"),
		"SkipNoScope": im.LangChinese.SkipSentence("no_files_in_scope"), "SkipNoPublisher": im.LangChinese.SkipSentence("no_output_publisher"),
	} {
		assertChinese(t, what, s)
	}
	for _, sev := range review.Severities {
		assertChinese(t, "severity "+string(sev), w.Severity(sev))
	}
	for _, e := range rep.Entries {
		for _, a := range e.Actions {
			assertChinese(t, "action "+a.Action, a.Label)
		}
	}
	for _, a := range []string{"useful", "false_positive", "wont_fix", "accepted_risk", "reopen"} {
		assertChinese(t, "action "+a, im.LangChinese.ActionLabel(a))
	}
	// The plain text, which prints every part, says nothing else in English.
	assertChinese(t, "PlainText", stripLinks(im.PlainText(rep)))

	for _, partial := range []bool{false, true} {
		m := imtest.Message()
		m.Language, m.RunID, m.Failure = im.LangChinese, 9, "connection refused"
		if !partial {
			m.Result = review.Result{}
		}
		f := im.BuildReport(m)
		assertChinese(t, "failed Verdict", f.Verdict)
		assertChinese(t, "failed Notice", f.Notice)
	}
	for _, m := range []im.Message{imtest.EmptyMessage(), {}} {
		m.Language = im.LangChinese
		assertChinese(t, "clean PlainText", stripLinks(im.PlainText(im.BuildReport(m))))
	}

	res := imtest.ResolutionReport()
	in := im.Resolution{Language: im.LangChinese, RunID: 8, Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "43", Author: "bob"}}
	for _, f := range res.Followups {
		f.Title = ""
		for i := range f.Resolved {
			f.Resolved[i].Message = "空指针解引用。"
		}
		in.Followups = append(in.Followups, f)
	}
	zr := im.BuildResolution(in)
	assertChinese(t, "resolution Title", zr.Title)
	assertChinese(t, "resolution Verdict", zr.Verdict)
	assertChinese(t, "resolution PlainText", stripLinks(im.PlainText(zr)))
	assertChinese(t, "ResolvedNote", im.LangChinese.ResolvedNote("r43", "bob"))

	d := im.Digest{Name: "nightly", Period: im.LangChinese.DateTime(time.Now()), Open: 3, New: 2, Resolved: 1, Dismissed: 1,
		Reported: 2, FalsePositives: 1, FalsePositiveRate: 0.5, Reviews: 4, CostUSD: 1.5, MorePaths: 2,
		OpenByPath: []im.DigestPath{{Path: "src/net/", Open: 2, OldestDays: 3}, {Path: "main", Open: 1, OldestDays: 0}}}
	dr := im.BuildDigest(d, im.LangChinese)
	assertChinese(t, "digest PlainText", im.PlainText(dr))
	d.Open, d.Reported, d.CostUSD, d.OpenByPath, d.MorePaths = 0, 0, 0, nil, 0
	assertChinese(t, "empty digest PlainText", im.PlainText(im.BuildDigest(d, im.LangChinese)))
}

// The same report in English says what it always said: the catalogue's
// English is the old wording.
func TestEnglishReportKeepsItsWording(t *testing.T) {
	msg := imtest.TrackedMessage()
	msg.RunID = 7
	msg.Reviewer = im.Reviewer{Agent: "llm", Model: "gpt-4o"}
	rep := im.BuildReport(msg)
	if rep.Language != im.LangEnglish || rep.Footer != "Reviewed by llm (gpt-4o) · run 7" || !strings.HasPrefix(rep.Verdict, "Problems: ") ||
		!strings.Contains(rep.Repeats[0].Text, "still open since r40, 3 commits") {
		t.Errorf("English report changed: %q %q %q", rep.Footer, rep.Verdict, rep.Repeats[0].Text)
	}
}

// A report stored by an older aicr carries no language and only the
// first five words: it renders in English with every label.
func TestStoredReportWithoutLanguage(t *testing.T) {
	old := im.BuildReport(imtest.TrackedMessage())
	old.Language, old.Words = "", im.Words{Problems: "Problems", Suggestion: "Suggestion", ViewChange: "View change",
		Author: "Author", ReviewedBy: "Reviewed by"}
	got := im.BuildReport(im.Message{Report: &old})
	if got.Words.StillOpen != "Still open" || got.Words.Finding != "Finding" || got.Words.Severity("high") != "high" {
		t.Errorf("old report's words not filled: %+v", got.Words)
	}
}

var linkRE = regexp.MustCompile(`https?://\S+`)

func stripLinks(s string) string { return linkRE.ReplaceAllString(s, "") }

// A planned report keeps its language through the dispatch row (JSON):
// sent later, after the channel's language changed, it is what was
// planned.
func TestPlannedReportKeepsItsLanguage(t *testing.T) {
	msg := imtest.TrackedMessage()
	msg.Language = im.LangChinese
	planned := im.BuildReport(msg)
	b, err := json.Marshal(planned)
	if err != nil {
		t.Fatal(err)
	}
	var stored im.Report
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	sent := im.BuildReport(im.Message{Report: &stored, Language: im.LangEnglish})
	if sent.Language != im.LangChinese || im.PlainText(sent) != im.PlainText(planned) || sent.OmittedNote(2) != planned.OmittedNote(2) {
		t.Errorf("the stored report changed language:\n%s\nwant\n%s", im.PlainText(sent), im.PlainText(planned))
	}
}
