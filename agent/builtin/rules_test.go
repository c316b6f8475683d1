package builtin

import (
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/review"
)

func TestScanLine(t *testing.T) {
	tests := []struct {
		name, file, line string
		kinds            []string // Kind of each finding, in order
	}{
		{"aws key", "a.go", `	id := "AKIAQWERTYUIOPASDFGH"`, []string{"aws-access-token"}},
		{"aws session key", "a.py", `KEY = 'ASIAQWERTYUIOPASDFGH'`, []string{"aws-access-token"}},
		{"aws key too short", "a.go", `x := "AKIAQWERTY"`, nil},
		{"aws key lower case", "a.go", `x := "AKIAqwertyuiopasdfgh"`, nil},
		{"rsa private key", "k.pem", `-----BEGIN RSA PRIVATE KEY-----`, []string{"aicr-private-key-header"}},
		{"openssh private key", "k", `-----BEGIN OPENSSH PRIVATE KEY-----`, []string{"aicr-private-key-header"}},
		{"pkcs8 private key", "k", `-----BEGIN PRIVATE KEY-----`, []string{"aicr-private-key-header"}},
		{"public key is fine", "k", `-----BEGIN PUBLIC KEY-----`, nil},
		{"password assignment", "a.py", `db_password = "hunter2-prod"`, []string{"aicr-credential-assignment"}},
		{"json password", "a.json", `  "password": "s3cr3t-value",`, []string{"aicr-credential-assignment"}},
		{"env password upper", "a.env", `PASSWORD='s3cr3t-value'`, []string{"aicr-credential-assignment"}},
		{"go short assign", "a.go", `	authToken := "tok-123456"`, []string{"aicr-credential-assignment"}},
		{"yaml api key", "a.yaml", `api_key: "0123456789abcdef"`, []string{"aicr-credential-assignment"}},
		{"camel api key", "a.js", `const apiKey = 'k-0123456789';`, []string{"aicr-credential-assignment"}},
		{"client secret field", "a.go", `cfg.ClientSecret = "abcdef123456"`, []string{"aicr-credential-assignment"}},
		{"cli flag", "a.sh", `mysql --password="hunter2-prod" db`, []string{"aicr-credential-assignment"}},
		{"comparison is not assignment", "a.go", `if password == "hunter2-prod" {`, nil},
		{"empty value", "a.py", `password = ""`, nil},
		{"short value", "a.py", `password = "abc"`, nil},
		{"changeme placeholder", "a.py", `password = "changeme"`, nil},
		{"env reference", "a.yaml", `password: "${DB_PASSWORD}"`, nil},
		{"template", "a.yaml", `token: "{{ .Token }}"`, nil},
		{"angle placeholder", "a.yaml", `secret: "<your secret>"`, nil},
		{"stars", "a.yaml", `password: "********"`, nil},
		{"unquoted value", "a.yaml", `password: hunter2-prod`, nil},
		{"getenv", "a.go", `password := os.Getenv("DB_PASSWORD")`, nil},
		{"token type is not a token", "a.py", `token_type = "bearer"`, nil},
		{"tokenizer is not a token", "a.py", `tokenizer = "bert-base"`, nil},
		{"password hint is not a password", "a.py", `password_hint = "your pet"`, nil},
		{"conflict ours", "a.go", `<<<<<<< .mine`, []string{"merge-conflict marker"}},
		{"conflict bare", "a.go", `<<<<<<<`, []string{"merge-conflict marker"}},
		{"conflict separator", "a.go", "=======  \r", []string{"merge-conflict marker"}},
		{"conflict base", "a.go", `||||||| .r41`, []string{"merge-conflict marker"}},
		{"conflict theirs", "a.go", `>>>>>>> .r42`, []string{"merge-conflict marker"}},
		{"indented marker is not a marker", "a.go", `  <<<<<<< x`, nil},
		{"eight chevrons", "a.go", `<<<<<<<< x`, nil},
		{"markdown underline", "README.md", `=======`, nil},
		{"shift operator", "a.go", `x = y <<<<<<< 2`, nil},
		// Provider formats come from gitleaks' maintained rules.
		{"slack bot token", "a.py", `SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"`, []string{"slack-bot-token"}},
		{"high-entropy value", "a.py", `client_auth_hdr = "a8f5f167f44f4964e6c998dee827110c"`, []string{"generic-api-key"}},
		{"aws documentation key", "a.go", `id := "AKIAIOSFODNN7EXAMPLE"`, nil},
		{"whole pem block on one line", "k.go", "-----BEGIN RSA PRIVATE KEY-----" + strings.Repeat("A", 70) + "-----END RSA PRIVATE KEY-----", []string{"private-key"}},
		{"two secrets, one finding", "a.go", `password := "hunter2-prod"; id := "AKIAQWERTYUIOPASDFGH"`, []string{"aicr-credential-assignment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scanLine(tt.file, 3, tt.line)
			var kinds []string
			for _, f := range got {
				kinds = append(kinds, f.Kind)
				if f.File != tt.file || f.Line != 3 || f.Message == "" || f.Suggestion == "" || !f.Severity.Valid() {
					t.Errorf("incomplete finding %+v", f)
				}
				if f.Category != CategoryCredential && f.Category != CategoryMergeConflict {
					t.Errorf("category %q", f.Category)
				}
				if review.NormalizeCategory(f.Category) != f.Category {
					t.Errorf("category %q not normalized", f.Category)
				}
			}
			if strings.Join(kinds, ",") != strings.Join(tt.kinds, ",") {
				t.Fatalf("kinds = %v, want %v", kinds, tt.kinds)
			}
		})
	}
}

func TestScanLineNeverQuotesSecret(t *testing.T) {
	secret := "hunter2-prod"
	for _, line := range []string{
		`db_password = "` + secret + `"`,
		`-----BEGIN RSA PRIVATE KEY-----` + secret,
		`id := "AKIAQWERTYUIOPASDFGH" // ` + secret,
		`SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx" // ` + secret,
	} {
		got := scanLine("a.go", 1, line)
		if len(got) == 0 {
			t.Fatalf("test premise: %q has a secret", line)
		}
		for _, f := range got {
			if strings.Contains(f.Message+f.Suggestion+f.Kind, secret) || strings.Contains(f.Message, "AKIA") || strings.Contains(f.Message, "xoxb") {
				t.Errorf("finding quotes the secret: %+v", f)
			}
		}
	}
}

// The message says which rule matched and where, so a reader can find the
// value without aicr repeating it.
func TestScanLineNamesRuleAndColumn(t *testing.T) {
	got := scanLine("a.go", 7, `	keyID := "AKIAQWERTYUIOPASDFGH"`)
	if len(got) != 1 {
		t.Fatalf("got %+v", got)
	}
	f := got[0]
	if f.Severity != review.SeverityCritical || f.Category != CategoryCredential || f.Kind != "aws-access-token" ||
		!strings.Contains(f.Message, "rule aws-access-token") || !strings.Contains(f.Message, "at column 12") {
		t.Errorf("finding %+v", f)
	}
}

// A Chinese team's review words the builtin findings and summary in
// Chinese, like the model's; the rule id and what is quoted stay as they are.
func TestBuiltinWordsInTheOutputLanguage(t *testing.T) {
	got := scanLineIn(im.LangChinese, "a.go", 7, `	keyID := "AKIAQWERTYUIOPASDFGH"`)
	if len(got) != 1 || !strings.HasPrefix(got[0].Message, "密钥扫描规则 aws-access-token 在第 ") ||
		!strings.HasPrefix(got[0].Suggestion, "从源码中删除该值") {
		t.Fatalf("zh finding: %+v", got)
	}
	conflict := scanLineIn(im.LangChinese, "a.go", 1, "<<<<<<< HEAD")
	if len(conflict) != 1 || conflict[0].Message != "提交了未解决的合并冲突标记 <<<<<<<；文件将无法构建或无法按预期运行。" {
		t.Fatalf("zh conflict: %+v", conflict)
	}
	res := scanResult{findings: got, files: 1, lines: 3}
	zh := summaryMarkdown(im.LangChinese, res, reportTally{overLimit: 2})
	if !strings.HasPrefix(zh, "扫描了 1 个文件中新增的 3 行，") || !strings.Contains(zh, "另有 2 个问题未报告") {
		t.Errorf("zh summary: %q", zh)
	}
	en := summaryMarkdown(im.LangEnglish, res, reportTally{rejected: 1})
	if !strings.HasPrefix(en, "Scanned 3 added lines in 1 file for hard-coded credentials") || !strings.Contains(en, "1 finding could not be recorded.") {
		t.Errorf("en summary: %q", en)
	}
}
