// Package redact recognises credentials in text: the patterns the builtin
// reviewer reports as hard-coded credentials, and the one function that
// blanks them out of text aicr posts (commit messages in channel reports),
// so what counts as a credential is decided in one place.
//
// It is a leaf: it imports nothing from aicr.
package redact

import (
	"regexp"
	"strings"
	"unicode"
)

// Placeholder replaces a credential's value.
const Placeholder = "<redacted>"

var (
	// AWSKey matches an AWS access key ID.
	AWSKey = regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`)
	// PrivateKey matches the first line of a PEM private key block.
	PrivateKey = regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`)
	// privateKeyBlock spans a whole block, or to the end of the text when
	// the END line is missing (a truncated paste is still a key).
	privateKeyBlock = regexp.MustCompile(`(?s)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\z)`)
	// assignment matches `key = "value"`, `"key": "value"`, `KEY='value'`,
	// `key := "value"`, `key => 'value'`. Only quoted literals count in
	// code: a bare word is usually a variable or an environment reference.
	// The operator must be followed by a quote, so `==` never matches.
	assignment = regexp.MustCompile("(?:^|[^\\w.])[\"']?([A-Za-z_][\\w.-]*)[\"']?\\s*(?::=|=>|=|:)\\s*(?:\"([^\"]*)\"|'([^']*)'|`([^`]*)`)")
	// proseName finds the name and operator of the unquoted form people
	// write in commit messages ("password: hunter2", "token=abc123"); the
	// value is the run of non-space characters after it.
	proseName  = regexp.MustCompile(`(?:^|[^\w.])([A-Za-z_][\w.-]*)\s*(?:=|:)[ \t]*`)
	proseValue = regexp.MustCompile("^[^\\s\"'`,;]+")
)

// CredentialAssignment finds a quoted literal assigned to a name whose
// last word says it holds a credential, and returns the kind ("password",
// "API key", ...) and the name. Placeholders ("changeme", "${X}") do not
// count.
func CredentialAssignment(text string) (kind, key string, ok bool) {
	for _, m := range assignment.FindAllStringSubmatch(text, -1) {
		name, value := m[1], m[2]+m[3]+m[4]
		k, isCred := CredentialKind(name)
		if !isCred || IsPlaceholder(value) {
			continue
		}
		return k, name, true
	}
	return "", "", false
}

// Text returns s with every credential the patterns recognise replaced
// by <redacted>: private key blocks, AWS key IDs, and values assigned to
// credential names, quoted or not. Names stay, so a reader still learns
// that a password was there.
func Text(s string) string {
	s = privateKeyBlock.ReplaceAllString(s, Placeholder+" private key")
	s = AWSKey.ReplaceAllString(s, Placeholder)
	s = replaceValues(s, assignment, func(m []string) (string, bool) {
		_, isCred := CredentialKind(m[1])
		return m[2] + m[3] + m[4], isCred && !IsPlaceholder(m[2]+m[3]+m[4])
	})
	return redactProse(s)
}

// redactProse blanks unquoted values. Matches may overlap ("rotate:
// api_key=..." holds two names), so the scan resumes right after each
// operator rather than after the value.
func redactProse(s string) string {
	var b strings.Builder
	pos := 0
	for pos < len(s) {
		loc := proseName.FindStringSubmatchIndex(s[pos:])
		if loc == nil {
			break
		}
		name := s[pos+loc[2] : pos+loc[3]]
		valStart := pos + loc[1]
		value := proseValue.FindString(s[valStart:])
		if _, isCred := CredentialKind(name); isCred && value != "" && value != Placeholder &&
			!IsPlaceholder(value) && secretLooking(value) {
			b.WriteString(s[pos:valStart])
			b.WriteString(Placeholder)
			pos = valStart + len(value)
			continue
		}
		next := pos + loc[3] // after the name, so a name in the value is seen
		b.WriteString(s[pos:next])
		pos = next
	}
	b.WriteString(s[pos:])
	return b.String()
}

// replaceValues replaces, in each match of re that value accepts, the
// value it names (found after the name, so the name itself is kept).
func replaceValues(s string, re *regexp.Regexp, value func([]string) (string, bool)) string {
	idx := re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, loc := range idx {
		m := make([]string, len(loc)/2)
		for i := range m {
			if loc[2*i] >= 0 {
				m[i] = s[loc[2*i]:loc[2*i+1]]
			}
		}
		v, ok := value(m)
		if !ok || v == "" {
			continue
		}
		// The value is the last non-empty group; find it after the name.
		start := -1
		for g := len(m) - 1; g >= 2; g-- {
			if m[g] != "" {
				start = loc[2*g]
				break
			}
		}
		if start < last {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Placeholder)
		last = start + len(v)
	}
	b.WriteString(s[last:])
	return b.String()
}

// CredentialKind judges a name by its last word ("db_password",
// "apiKey", "client.secret"), so names like "token_type", "tokenizer" or
// "password_hint" are not mistaken for secrets.
func CredentialKind(name string) (string, bool) {
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
