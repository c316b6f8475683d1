package builtin

import (
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
	Kind       string // what was found, e.g. "AWS access key ID"; used in the summary
	Severity   review.Severity
	Category   string
	Message    string
	Suggestion string
}

// The credential patterns live in package redact, which the report
// builder also uses to blank credentials out of commit messages.

const credentialSuggestion = "Remove the value from the source, rotate it, and load it at runtime from the environment or a secrets manager."

// scanLine applies every rule to one added line of file. It reports at
// most one credential per line: a second one would anchor to the same
// text under the same category and be a duplicate anyway.
func scanLine(file string, lineNo int, text string) []finding {
	var out []finding
	mk := func(kind string, sev review.Severity, cat, msg, sugg string) finding {
		return finding{File: file, Line: lineNo, Kind: kind, Severity: sev, Category: cat, Message: msg, Suggestion: sugg}
	}
	switch {
	case redact.PrivateKey.MatchString(text):
		out = append(out, mk("private key", review.SeverityCritical, CategoryCredential,
			"A private key block is committed to the repository; anyone with read access can use the key.",
			"Remove the key from the repository, revoke and replace it, and provision it from a secrets store."))
	case redact.AWSKey.MatchString(text):
		out = append(out, mk("AWS access key ID", review.SeverityCritical, CategoryCredential,
			"An AWS access key ID is hard-coded here; together with its secret it grants access to the AWS account.",
			"Deactivate and rotate the key in IAM, remove it from the source, and use an IAM role or environment credentials."))
	default:
		if kind, key, ok := redact.CredentialAssignment(text); ok {
			out = append(out, mk(kind, review.SeverityHigh, CategoryCredential,
				"A hard-coded "+kind+" is assigned to "+key+"; committed secrets leak to everyone who can read the repository.",
				credentialSuggestion))
		}
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
