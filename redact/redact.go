// Package redact recognises credentials in text: what the builtin
// reviewer reports as hard-coded credentials, and the one function that
// blanks them out of text aicr posts (commit messages in channel reports),
// so what counts as a credential is decided in one place.
//
// The rules are gitleaks' maintained rule set (github.com/zricethezav/
// gitleaks/v8, used as a library) plus a few aicr additions in gitleaks'
// own format (rules.toml). Compiling them takes tens of milliseconds, so
// it happens on first use: processes that never look for secrets (the
// hook client, aicr notify) pay nothing.
package redact

import (
	"sort"
	"strings"
	"unicode"
)

// Placeholder replaces a credential's value.
const Placeholder = "<redacted>"

// Rule ids of aicr's additions (rules.toml).
const (
	RuleCredentialAssignment = "aicr-credential-assignment"
	RulePrivateKeyHeader     = "aicr-private-key-header"
	// RuleCredentialInProse finds unquoted values ("password: hunter2");
	// only Text applies it, since in code the word after a colon is
	// usually a variable.
	RuleCredentialInProse = "aicr-credential-in-prose"
)

// Secret is one credential found in text: which rule found it and where.
// It never holds the value, so nothing built from it can leak it.
type Secret struct {
	// RuleID is the gitleaks rule ("aws-access-token", "private-key",
	// "generic-api-key") or an aicr addition ("aicr-...").
	RuleID string
	// Description is the rule's description.
	Description string
	// Line and Column locate the start of the value, 1-based (Column in
	// bytes).
	Line, Column int

	start, end int // byte offsets of the value in the scanned text
}

// Find returns the credentials in text, ordered by position. path, when
// known, lets gitleaks' path allowlists apply (lock files, vendored
// dependencies, images).
func Find(path, text string) []Secret {
	return find(path, text, false)
}

// Text returns s with every credential the rules recognise replaced by
// <redacted>: private key blocks (as "<redacted> private key"), provider
// tokens, and values assigned to credential names, quoted or not. Names
// stay, so a reader still learns that a password was there.
func Text(s string) string {
	secrets := find("", s, true)
	if len(secrets) == 0 {
		return s
	}
	// Every occurrence of a found value is blanked, not only the one the
	// rule matched: a commit message often repeats the value it leaks.
	values := map[string]string{}
	for _, sec := range secrets {
		repl := Placeholder
		if isPrivateKey(sec.RuleID) {
			repl = Placeholder + " private key"
		}
		v := s[sec.start:sec.end]
		if old, ok := values[v]; !ok || len(repl) > len(old) {
			values[v] = repl
		}
	}
	ordered := make([]string, 0, len(values))
	for v := range values {
		ordered = append(ordered, v)
	}
	// Longest first, so a value containing another is replaced whole.
	sort.Slice(ordered, func(i, j int) bool {
		if len(ordered[i]) != len(ordered[j]) {
			return len(ordered[i]) > len(ordered[j])
		}
		return ordered[i] < ordered[j]
	})
	pairs := make([]string, 0, 2*len(ordered))
	for _, v := range ordered {
		pairs = append(pairs, v, values[v])
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

func isPrivateKey(ruleID string) bool {
	return ruleID == RulePrivateKeyHeader || strings.Contains(ruleID, "private-key")
}

// IsCritical reports rules whose finding grants access by itself (private
// keys, cloud provider credentials), as opposed to a password or token
// whose reach depends on where it is used.
func IsCritical(ruleID string) bool {
	switch {
	case isPrivateKey(ruleID),
		strings.HasPrefix(ruleID, "aws-"),
		strings.HasPrefix(ruleID, "gcp-"),
		strings.HasPrefix(ruleID, "azure-"):
		return true
	}
	return false
}

// placeholderWords are values that stand for "fill this in", not secrets.
var placeholderWords = map[string]bool{
	"changeme": true, "change_me": true, "change-me": true, "changeit": true,
	"password": true, "passwd": true, "secret": true, "token": true,
	"example": true, "placeholder": true, "dummy": true, "redacted": true,
	"none": true, "null": true, "nil": true, "undefined": true, "todo": true, "fixme": true,
}

// IsPlaceholder reports values that are obviously not real credentials:
// shorter than 4 characters, template or environment references
// (${X}, {{x}}, %(x)s, $X), <angle> or your-... fill-ins, well-known
// placeholder words and runs of one character (xxxx, ****).
func IsPlaceholder(v string) bool {
	v = strings.TrimSpace(v)
	lv := strings.ToLower(v)
	switch {
	case len(v) < 4,
		strings.Contains(v, "${"), strings.Contains(v, "{{"), strings.Contains(v, "%("),
		strings.HasPrefix(v, "$"),
		strings.HasPrefix(v, "<") && strings.HasSuffix(v, ">"),
		strings.HasPrefix(lv, "your"),
		strings.Contains(v, Placeholder),
		placeholderWords[lv]:
		return true
	}
	return strings.Count(v, v[:1]) == len(v)
}

// secretLooking keeps prose from being blanked: in "password: reset
// flow" the word after the colon is English, in "password: hunter2" it
// is not. A value counts when it has a digit or symbol, or is too long
// to be an everyday word.
func secretLooking(v string) bool {
	if len(v) >= 12 {
		return true
	}
	for _, r := range v {
		if !unicode.IsLetter(r) {
			return true
		}
	}
	return false
}
