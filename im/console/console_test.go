package console

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/im"
	"github.com/aicr-dev/aicr/internal/imtest"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/vcs"
)

func TestSendWritesReportsSeparatedByBlankLine(t *testing.T) {
	var out bytes.Buffer
	cfg := &Config{}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ch, err := cfg.Build(im.ChannelConfig{Name: "stdout", Kind: KindName}, im.Deps{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "stdout" || ch.Kind() != "console" {
		t.Fatalf("Name, Kind = %q, %q", ch.Name(), ch.Kind())
	}
	msgs := []im.Message{
		{RunID: 1, Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "1"}},
		{RunID: 2, Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "2"},
			Result: review.Result{Problems: []review.Problem{{File: "a.go", Line: 1, Severity: review.SeverityHigh, Message: "m"}}}},
	}
	for _, m := range msgs {
		if _, err := ch.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	want := im.RenderText(msgs[0]) + "\n" + im.RenderText(msgs[1]) + "\n"
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	if !strings.Contains(out.String(), "a.go:1 [high] m") {
		t.Fatalf("problem missing from output:\n%s", out.String())
	}
}

func TestBuildWithoutStdout(t *testing.T) {
	if _, err := (&Config{}).Build(im.ChannelConfig{Name: "x", Kind: KindName}, im.Deps{}); err == nil {
		t.Fatal("Build with nil Stdout succeeded")
	}
}

func TestSendHonoursCancelledContext(t *testing.T) {
	var out bytes.Buffer
	ch, _ := New("x", &out)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ch.Send(ctx, im.Message{}); err == nil || out.Len() != 0 {
		t.Fatalf("err = %v, wrote %d bytes", err, out.Len())
	}
}

// A credential in the commit message never reaches the terminal or the
// receipt (issue 10 #28).
func TestSendLeaksNoCredentialFromTheDescription(t *testing.T) {
	var out bytes.Buffer
	ch, err := (&Config{}).Build(im.ChannelConfig{Name: "stdout", Kind: KindName}, im.Deps{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	const pw = "Tr0ub4dor&3-prod"
	msg := im.Message{RunID: 1, Change: &vcs.Change{VCS: vcs.KindSVN, Repo: "main", Revision: "1",
		Description: "hotfix: DB_PASSWORD=" + pw}}
	rec, err := ch.Send(context.Background(), msg)
	imtest.AssertSendLeaksNothing(t, rec, err, pw)
	imtest.AssertNoLeak(t, "console output", out.String(), pw)
	if !strings.Contains(out.String(), "DB_PASSWORD=<redacted>") {
		t.Fatalf("description missing:\n%s", out.String())
	}
}
