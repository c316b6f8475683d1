package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/internal/admintest"
)

func TestDigestSendFlags(t *testing.T) {
	checkFlags(t, newCmdDigestSend, []flagCase[DigestSendOptions]{
		{name: "name", args: []string{"weekly"}, want: DigestSendOptions{Name: "weekly", Format: "text"}},
		{name: "dry run", args: []string{"weekly", "--dry-run", "--format", "json"}, want: DigestSendOptions{Name: "weekly", DryRun: true, Format: "json"}},
		{name: "no name", code: exitUsage},
	})
}

// aicr digest send previews the period so far with --dry-run (nothing
// written), and without it sends it through the channel now.
func TestDigestSend(t *testing.T) {
	fx := admintest.New(t)
	admintest.AddFindings(t, fx)
	f, err := os.OpenFile(fx.Config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("\n[[digest]]\nname = \"daily\"\nchannel = \"reports\"\nevery = \"0 0 * * *\"\n")
	f.Close()
	reports := filepath.Join(filepath.Dir(fx.Config), "reports.jsonl")

	out, errOut, code := runCLI(t, "digest", "send", "daily", "--dry-run", "--config", fx.Config)
	if code != 0 || !strings.Contains(out, "aicr digest: daily (every repo)") || !strings.Contains(out, "1 open finding") {
		t.Fatalf("dry run: exit %d %s\n%s", code, errOut, out)
	}
	if _, err := os.Stat(reports); !os.IsNotExist(err) {
		t.Fatalf("--dry-run sent something: %v", err)
	}
	out, errOut, code = runCLI(t, "digest", "send", "daily", "--config", fx.Config)
	if code != 0 || !strings.Contains(out, "digest daily: dispatch") || !strings.Contains(out, "(reports): sent") {
		t.Fatalf("send: exit %d %s\n%s", code, errOut, out)
	}
	b, err := os.ReadFile(reports)
	if err != nil || strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), "aicr digest: daily") {
		t.Fatalf("file channel: %v\n%s", err, b)
	}
	if _, errOut, code := runCLI(t, "digest", "send", "weekly", "--config", fx.Config); code != 2 || !strings.Contains(errOut, `no [[digest]] named "weekly"`) {
		t.Fatalf("unknown digest: exit %d %s", code, errOut)
	}
}
