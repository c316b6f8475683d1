package builtin

import (
	"path"
	"strconv"
	"strings"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/redact"
	"github.com/aicr-dev/aicr/review"
)

// Categories the builtin agent reports under.
const (
	CategoryCredential    = "hard-coded-credential"
	CategoryMergeConflict = "merge-conflict-marker"
)

// finding is one rule hit on one added line. It never holds the matched
// secret: only what kind of thing was found, so nothing downstream can
// leak it.
type finding struct {
	File       string
	Line       int
	Kind       string // what was found: the secret rule id ("aws-access-token") or "merge-conflict marker"; used in the summary
	Severity   review.Severity
	Category   string
	Message    string
	Suggestion string
}

// The credential rules live in package redact (gitleaks' maintained rule
// set plus aicr's additions), which the report builder also uses to blank
// credentials out of commit messages.

// scanLine is scanLineIn English.
func scanLine(file string, lineNo int, text string) []finding {
	return scanLineIn(im.LangEnglish, file, lineNo, text)
}

// scanLineIn applies every rule to one added line of file, wording what
// it finds in lang (the review's output language: its findings sit
// beside the model's). It reports at most one credential per line: a
// second one would anchor to the same text under the same category and
// be a duplicate anyway.
func scanLineIn(lang im.Language, file string, lineNo int, text string) []finding {
	var out []finding
	mk := func(kind string, sev review.Severity, cat, msg, sugg string) finding {
		return finding{File: file, Line: lineNo, Kind: kind, Severity: sev, Category: cat, Message: msg, Suggestion: sugg}
	}
	if secrets := redact.Find(file, text); len(secrets) > 0 {
		s := secrets[0]
		sev := review.SeverityHigh
		if redact.IsCritical(s.RuleID) {
			sev = review.SeverityCritical
		}
		// The message names the rule and the column, never the value:
		// problems are posted to channels and stored in the audit trail.
		out = append(out, mk(s.RuleID, sev, CategoryCredential,
			lang.T(im.KeyBuiltinCredential, s.RuleID, strconv.Itoa(s.Column), strings.TrimSpace(s.Description)),
			lang.T(im.KeyBuiltinCredentialFix)))
	}
	if marker, ok := conflictMarker(file, text); ok {
		out = append(out, mk("merge-conflict marker", review.SeverityHigh, CategoryMergeConflict,
			lang.T(im.KeyBuiltinConflict, marker), lang.T(im.KeyBuiltinConflictFix)))
	}
	return out
}

// Conflict markers are seven characters at the start of a line, alone or
// followed by a space and a label.
var conflictMarkers = []string{"<<<<<<<", "|||||||", ">>>>>>>"}

// proseExts are files where a line of "=======" is a heading underline.
var proseExts = map[string]bool{".md": true, ".markdown": true, ".rst": true, ".adoc": true, ".txt": true}

func conflictMarker(file, text string) (string, bool) {
	text = strings.TrimRight(text, " \t\r")
	for _, m := range conflictMarkers {
		if text == m || strings.HasPrefix(text, m+" ") {
			return m, true
		}
	}
	if text == "=======" && !proseExts[strings.ToLower(path.Ext(file))] {
		return "=======", true
	}
	return "", false
}
