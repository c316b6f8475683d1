package prompt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// RepoRulesPath is where a repository keeps its review rules, read at the
// reviewed revision (the ladder fetches it through the VCS adapter), so a
// change to the rules is reviewed under the rules it was committed with.
const RepoRulesPath = ".aicr/instructions.md"

// MaxRulesBytes caps each rules layer. Rules are meant to be a page of
// review focus; a larger file is cut (with a note) rather than crowding
// the change out of the model's context.
const MaxRulesBytes = 16 << 10

// Clip cuts rules longer than limit at a line boundary (never inside a
// UTF-8 sequence) and says so.
func Clip(rules string, limit int) string {
	if len(rules) <= limit {
		return rules
	}
	cut := rules[:limit]
	for !utf8.ValidString(cut) && len(cut) > 0 {
		cut = cut[:len(cut)-1]
	}
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	return cut + fmt.Sprintf("\n\n[aicr: rules cut at %d bytes; the rest is not applied]", limit)
}

// ReadRulesFile reads the operator's rules file ([agent] rules_file). It
// is called at each review, so edits apply without a restart. A missing
// or unreadable file is an error naming the key: silently reviewing
// without the operator's rules would hide a broken setup.
func ReadRulesFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("agent.rules_file: %s does not exist: create it or remove the key", path)
		}
		return "", fmt.Errorf("agent.rules_file: %w", err)
	}
	defer f.Close()
	// Read one byte past the cap so Clip can say the file was cut.
	b, err := io.ReadAll(io.LimitReader(f, MaxRulesBytes+1))
	if err != nil {
		return "", fmt.Errorf("agent.rules_file: read %s: %w", path, err)
	}
	if len(b) <= MaxRulesBytes && !utf8.Valid(b) {
		return "", fmt.Errorf("agent.rules_file: %s is not UTF-8 text", path)
	}
	return Clip(string(b), MaxRulesBytes), nil
}

// RulesSource yields the operator's rules text for one pass.
type RulesSource func() (string, error)

// RulesFromFile reads path at every call (ReadRulesFile), so an edited
// file applies to the next pass; an empty path yields no rules.
func RulesFromFile(path string) RulesSource {
	return func() (string, error) { return ReadRulesFile(path) }
}

// RulesText yields rules read elsewhere: the sandboxed pass gets the text
// the host read from rules_file, not the file.
func RulesText(rules string) RulesSource {
	return func() (string, error) { return rules, nil }
}

// CheckRulesFile is the config-check form of ReadRulesFile: it reports a
// path that cannot be read, or that is a directory.
func CheckRulesFile(path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("agent.rules_file: %s does not exist: create it or remove the key", path)
	case err != nil:
		return fmt.Errorf("agent.rules_file: %w", err)
	case st.IsDir():
		return fmt.Errorf("agent.rules_file: %s is a directory, want a Markdown file of review rules", path)
	}
	_, err = ReadRulesFile(path)
	return err
}
