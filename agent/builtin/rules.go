package builtin

import (
	"path"
	"regexp"
	"strings"
	"unicode"

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

var (
	awsKeyRE     = regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`)
	privateKeyRE = regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`)
	// assignmentRE matches `key = "value"`, `"key": "value"`, `KEY='value'`,
	// `key := "value"`, `key => 'value'`. Only quoted literals count: a
	// bare word is usually a variable or an environment reference. The
	// operator must be followed by a quote, so `==` comparisons never match.
	assignmentRE = regexp.MustCompile("(?:^|[^\\w.])[\"']?([A-Za-z_][\\w.-]*)[\"']?\\s*(?::=|=>|=|:)\\s*(?:\"([^\"]*)\"|'([^']*)'|`([^`]*)`)")
)

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
	case privateKeyRE.MatchString(text):
		out = append(out, mk("private key", review.SeverityCritical, CategoryCredential,
			"A private key block is committed to the repository; anyone with read access can use the key.",
			"Remove the key from the repository, revoke and replace it, and provision it from a secrets store."))
	case awsKeyRE.MatchString(text):
		out = append(out, mk("AWS access key ID", review.SeverityCritical, CategoryCredential,
			"An AWS access key ID is hard-coded here; together with its secret it grants access to the AWS account.",
			"Deactivate and rotate the key in IAM, remove it from the source, and use an IAM role or environment credentials."))
	default:
		if kind, key, ok := credentialAssignment(text); ok {
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

// credentialAssignment finds a string literal assigned to a name whose last
// word says it holds a credential, and returns the kind and the name.
func credentialAssignment(text string) (kind, key string, ok bool) {
	for _, m := range assignmentRE.FindAllStringSubmatch(text, -1) {
		name, value := m[1], m[2]+m[3]+m[4]
		k, isCred := credentialKind(name)
		if !isCred || placeholder(value) {
			continue
		}
		return k, name, true
	}
	return "", "", false
}

// credentialKind judges a name by its last word ("db_password",
// "apiKey", "client.secret"), so names like "token_type", "tokenizer" or
// "password_hint" are not mistaken for secrets.
func credentialKind(name string) (string, bool) {
	words := splitWords(name)
	if len(words) == 0 {
		return "", false
	}
	last := words[len(words)-1]
	prev := ""
	if len(words) > 1 {
		prev = words[len(words)-2]
	}
	switch {
	case last == "key" && (prev == "api" || prev == "secret" || prev == "access" || prev == "private" || prev == "auth"):
		if prev == "api" {
			return "API key", true
		}
		return prev + " key", true
	case strings.HasSuffix(last, "apikey"):
		return "API key", true
	case strings.HasSuffix(last, "password") || strings.HasSuffix(last, "passwd") || last == "passphrase":
		return "password", true
	case strings.HasSuffix(last, "secret"):
		return "secret", true
	case strings.HasSuffix(last, "token"):
		return "token", true
	}
	return "", false
}

// splitWords splits an identifier at '.', '_', '-' and lower-to-upper case
// changes, and lower-cases the words.
func splitWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	runes := []rune(name)
	for i, r := range runes {
		switch {
		case r == '.' || r == '_' || r == '-':
			flush()
			continue
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(runes[i-1]):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// placeholderWords are values that stand for "fill this in", not secrets.
var placeholderWords = map[string]bool{
	"changeme": true, "change_me": true, "change-me": true, "changeit": true,
	"password": true, "passwd": true, "secret": true, "token": true,
	"example": true, "placeholder": true, "dummy": true, "redacted": true,
	"none": true, "null": true, "nil": true, "undefined": true, "todo": true, "fixme": true,
}

// placeholder reports values that are obviously not real credentials:
// shorter than 4 characters, template or environment references
// (${X}, {{x}}, %(x)s, $X), <angle> or your-... fill-ins, well-known
// placeholder words and runs of one character (xxxx, ****).
func placeholder(v string) bool {
	v = strings.TrimSpace(v)
	lv := strings.ToLower(v)
	switch {
	case len(v) < 4,
		strings.Contains(v, "${"), strings.Contains(v, "{{"), strings.Contains(v, "%("),
		strings.HasPrefix(v, "$"),
		strings.HasPrefix(v, "<") && strings.HasSuffix(v, ">"),
		strings.HasPrefix(lv, "your"),
		placeholderWords[lv]:
		return true
	}
	return strings.Count(v, v[:1]) == len(v)
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
