package builtin

import (
	"fmt"
	"path"
	"strings"

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

const credentialSuggestion = "Remove the value from the source, rotate it, and load it at runtime from the environment or a secrets manager."

// scanLine applies every rule to one added line of file. It reports at
// most one credential per line: a second one would anchor to the same
// text under the same category and be a duplicate anyway.
func scanLine(file string, lineNo int, text string) []finding {
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
			fmt.Sprintf("Secret-scanner rule %s matched a hard-coded credential at column %d: %s Committed secrets leak to everyone who can read the repository, and stay in its history.",
				s.RuleID, s.Column, strings.TrimSpace(s.Description)),
			credentialSuggestion))
	}
	if marker, ok := conflictMarker(file, text); ok {
		out = append(out, mk("merge-conflict marker", review.SeverityHigh, CategoryMergeConflict,
			"Unresolved merge-conflict marker "+marker+" committed; the file will not build or behave as intended.",
			"Resolve the conflict and remove all conflict markers."))
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
