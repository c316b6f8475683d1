package redact

import (
	"strings"
	"testing"
)

func TestTextRedactsCredentialsInCommitMessages(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Rotate creds; old password: hunter2 is gone", "Rotate creds; old password: <redacted> is gone"},
		{`set api_key = "sk-live-abcdef123456"`, `set api_key = "<redacted>"`},
		{"DB_PASSWORD=s3cr3t-value for staging", "DB_PASSWORD=<redacted> for staging"},
		{"key AKIAIOSFODNN7EXAMPLE leaked", "key <redacted> leaked"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nafter", "<redacted> private key\nafter"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn", "<redacted> private key"},
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
	} {
		if got := Text(in); got != in {
			t.Errorf("Text(%q) = %q, want unchanged", in, got)
		}
	}
}

func TestCredentialAssignment(t *testing.T) {
	kind, key, ok := CredentialAssignment(`const apiKey = "abcd1234efgh"`)
	if !ok || kind != "API key" || key != "apiKey" {
		t.Fatalf("got %q %q %v", kind, key, ok)
	}
	if _, _, ok := CredentialAssignment(`password_hint = "your name"`); ok {
		t.Fatal("password_hint is not a credential")
	}
	if !strings.Contains(Text(`token: "abc123xyz"`), Placeholder) {
		t.Fatal("quoted token not redacted")
	}
}

func TestTextFindsNamesInsideOtherAssignments(t *testing.T) {
	got := Text("rotate: api_key=sk-live-51Habc123 was committed")
	if got != "rotate: api_key=<redacted> was committed" {
		t.Fatalf("got %q", got)
	}
}
