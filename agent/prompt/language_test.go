package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/agent/pass"
)

// A Chinese team's model is told, in the protected rules of the system
// prompt, to write in Simplified Chinese and keep code and identifiers
// as they are; the rule is the same on every pass, so the system prompt
// stays one prefix. An English team's prompt has no language rule at all.
func TestLanguageRule(t *testing.T) {
	in := Input{Change: svnChange(), Diff: twoFileDiff, Pass: pass.Pass{Number: 1, Kind: pass.Review}, OperatorRules: "Focus on SQL."}
	en := Build(in)
	in.OutputLanguage = "zh-CN"
	zh := Build(in)
	const rule = "Language: the team reads Simplified Chinese (zh-CN). Write every message, suggestion, summary title and summary in Simplified Chinese (zh-CN). Keep file paths, code, identifiers"
	if !strings.Contains(zh.ProtectedRules(), rule) {
		t.Fatalf("protected rules lack the language rule:\n%s", zh.ProtectedRules())
	}
	if strings.Contains(zh.User, "Simplified Chinese") || strings.Contains(en.System, "Language:") {
		t.Error("the language rule is outside the zh system prompt, or in the en one")
	}
	if en.User != zh.User {
		t.Error("the language changed the user message")
	}
	in.Pass = pass.Pass{Number: 2, Kind: pass.Repair, Missing: "- no call to aicr.publish_summary"}
	if Build(in).System != zh.System {
		t.Error("a later pass's system prompt differs")
	}
}

func TestOutputLanguageFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "output-language")
	if l, err := ReadOutputLanguage(path); l != "" || err != nil {
		t.Fatalf("absent file: %q, %v", l, err)
	}
	if err := WriteOutputLanguage(path, "zh-CN"); err != nil {
		t.Fatal(err)
	}
	if l, err := ReadOutputLanguage(path); l != "zh-CN" || err != nil {
		t.Fatalf("read back %q, %v", l, err)
	}
	if err := WriteOutputLanguage(path, "en"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("English left the file: %v", err)
	}
	if err := WriteOutputLanguage(path, "fr"); err == nil {
		t.Fatal("wrote fr")
	}
	os.WriteFile(path, []byte("klingon\n"), 0o600)
	if _, err := ReadOutputLanguage(path); err == nil || !strings.Contains(err.Error(), "klingon") {
		t.Fatalf("unknown language read as %v", err)
	}
}
