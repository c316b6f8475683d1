package prompt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aicr-dev/aicr/internal/atomicfile"
)

// outputLanguages are the languages other than English the protected
// rules can ask the model to write in, with the name the rules give
// each. English asks for nothing, so an English team's prompt is the one
// it always was (and its cached prefix with it).
var outputLanguages = map[string]string{"zh-CN": "Simplified Chinese (zh-CN)"}

// WriteOutputLanguage leaves the language the model is to write in
// (config.OutputLanguage: "en" or "zh-CN") in the run directory
// (rundir.Layout.OutputLanguagePath) for the model-backed agents, on the
// host or in the sandbox. English removes the file, so a retried run
// never reads a stale one.
func WriteOutputLanguage(path, lang string) error {
	if lang == "" || lang == "en" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale %s: %w", path, err)
		}
		return nil
	}
	if _, ok := outputLanguages[lang]; !ok {
		return fmt.Errorf("output language %q: aicr writes en or zh-CN", lang)
	}
	return atomicfile.WriteFile(path, []byte(lang+"\n"), 0o640)
}

// ReadOutputLanguage reads WriteOutputLanguage's file: "" (English) when
// there is none. A language the rules cannot name is an error rather
// than an English review a Chinese team did not ask for.
func ReadOutputLanguage(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the output language: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64))
	if err != nil {
		return "", fmt.Errorf("read the output language: %w", err)
	}
	lang := strings.TrimSpace(string(b))
	if _, ok := outputLanguages[lang]; !ok && lang != "" && lang != "en" {
		return "", fmt.Errorf("read the output language: %s holds %q, not en or zh-CN", path, lang)
	}
	if lang == "en" {
		lang = ""
	}
	return lang, nil
}

// languageRule is the protected rule naming the language the team reads:
// what the model writes is in it, what it quotes stays as it is. It sits
// in the system prompt, the same for every turn and pass of a review.
func (b builder) languageRule() string {
	name, ok := outputLanguages[b.in.OutputLanguage]
	if !ok {
		return ""
	}
	return fmt.Sprintf("\nLanguage: the team reads %[1]s. Write every message, suggestion, summary title and summary in %[1]s. Keep file paths, code, identifiers, commands, tool names and the values of severity, category and skip reason exactly as they are, untranslated.\n", name)
}
