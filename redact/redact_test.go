package redact

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestMain runs after the package's initialisation and before any test:
// the rules must not have been compiled yet, or every aicr process (the
// hook client included) would pay for them at start-up.
func TestMain(m *testing.M) {
	if compiled.Load() {
		fmt.Fprintln(os.Stderr, "redact compiled its rules during package initialisation; they must compile on first use")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// A realistic AWS key id. gitleaks allowlists AWS's documentation key
// (AKIAIOSFODNN7EXAMPLE): it is public and never valid.
const awsKey = "AKIAQWERTYUIOPASDFGH"

func TestTextRedactsCredentialsInCommitMessages(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Rotate creds; old password: hunter2 is gone", "Rotate creds; old password: <redacted> is gone"},
		{`set api_key = "sk-live-abcdef123456"`, `set api_key = "<redacted>"`},
		{"DB_PASSWORD=s3cr3t-value for staging", "DB_PASSWORD=<redacted> for staging"},
		{"key " + awsKey + " leaked", "key <redacted> leaked"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nafter", "<redacted> private key\nafter"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn", "<redacted> private key"},
		// Provider token formats come from gitleaks' rule set.
		{"bot token xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx in the ci config", "bot token <redacted> in the ci config"},
		// A value the message repeats is blanked everywhere.
		{"password: Zq9-fjw-Lp2x (was Zq9-fjw-Lp2x before)", "password: <redacted> (was <redacted> before)"},
	}
	for _, c := range cases {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestTextLeavesProseAndPlaceholders(t *testing.T) {
	for _, in := range []string{
		"Fix password: reset flow was broken",
		"token_type: bearer",
		`password = "changeme"`,
		"secret: ${VAULT_SECRET}",
		"Add tokenizer: handles CJK",
		"plain message with no credentials",
		"",
	} {
		if got := Text(in); got != in {
			t.Errorf("Text(%q) = %q, want unchanged", in, got)
		}
	}
}

func TestFindLocatesWithoutValue(t *testing.T) {
	text := "package x\n\nconst apiKey = \"abcd1234efgh\"\nvar id = \"" + awsKey + "\"\n"
	got := Find("x.go", text)
	if len(got) != 2 {
		t.Fatalf("got %+v, want two secrets", got)
	}
	if got[0].RuleID != RuleCredentialAssignment || got[0].Line != 3 || got[0].Column != 17 {
		t.Errorf("first = %+v, want aicr-credential-assignment at 3:17", got[0])
	}
	if got[1].RuleID != "aws-access-token" || got[1].Line != 4 || got[1].Column != 11 {
		t.Errorf("second = %+v, want aws-access-token at 4:11", got[1])
	}
	for _, s := range got {
		if strings.Contains(s.RuleID+s.Description, "abcd1234") || strings.Contains(s.Description, "AKIA") {
			t.Errorf("secret leaks its value: %+v", s)
		}
	}
	if _, ok := any(Secret{}).(interface{ String() string }); ok {
		t.Error("Secret must not grow a String method that could print a value")
	}
}

func TestFindSkipsPlaceholdersAndNonCredentials(t *testing.T) {
	for _, line := range []string{
		`password_hint = "your name"`,
		`token_type = "bearer"`,
		`password = "${DB_PASSWORD}"`,
		`password := os.Getenv("DB_PASSWORD")`,
		`password: hunter2-prod`, // unquoted in code: usually a variable
		`if password == "hunter2-prod" {`,
		`-----BEGIN PUBLIC KEY-----`,
	} {
		if got := Find("a.go", line); len(got) != 0 {
			t.Errorf("Find(%q) = %+v, want none", line, got)
		}
	}
}

// gitleaks' path allowlists apply when the path is known.
func TestFindHonoursGitleaksPathAllowlist(t *testing.T) {
	line := `"integrity": "sha512-` + awsKey + `", "token": "` + awsKey + `"`
	if len(Find("src/a.json", line)) == 0 {
		t.Fatal("test premise: the line has a secret")
	}
	if got := Find("web/package-lock.json", line); len(got) != 0 {
		t.Errorf("lock file scanned: %+v", got)
	}
}

func TestRulesLoad(t *testing.T) {
	cfg, err := loadRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"aws-access-token", "private-key", "generic-api-key", RuleCredentialAssignment, RulePrivateKeyHeader, RuleCredentialInProse} {
		if _, ok := cfg.Rules[id]; !ok {
			t.Errorf("rule %s missing", id)
		}
	}
	if len(cfg.Rules) < 150 {
		t.Errorf("only %d rules: gitleaks' default set did not load", len(cfg.Rules))
	}
}

// BenchmarkFirstUse is what the first Find costs: compiling every rule.
// Run it with -benchtime 1x; later calls reuse the compiled detector.
func BenchmarkFirstUse(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := loadRules(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFindLine(b *testing.B) {
	line := `	db_password := "hunter2-prod" // ` + awsKey
	Find("a.go", line)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Find("a.go", line)
	}
}
