package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/review"
	"github.com/aicr-dev/aicr/triggers"
)

// hostileTerm is what an svn author, an agent's summary title or a run's
// error can carry: an OSC window-title change ended by BEL, a screen
// clear, a colour, a C1 CSI, a carriage return that rewrites the line, a
// bidi override.
const hostileTerm = "\x1b]0;pwned\x07mallory\x1b[2J\x1b[31mred\u009b1m\rOVERWRITE\u202e"

func assertTermSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07", "\u009b", "\r", "\u202e"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s prints %q to the terminal:\n%q", what, bad, out)
		}
	}
	if !strings.Contains(out, "mallory") {
		t.Errorf("%s lost the text around the escapes:\n%q", what, out)
	}
}

// Terminal escapes from committer and agent text never reach the
// operator's terminal: audit list, audit show, audit export --format csv,
// dispatch list and dispatch show strip them (issue 22 C12); JSON keeps
// the data, escaped by the encoder.
func TestHumanOutputStripsTerminalEscapes(t *testing.T) {
	ctx := context.Background()
	configPath, dataDir, _ := writeFileChannelConfig(t)
	store, err := audit.Open(ctx, filepath.Join(dataDir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	ev := triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "1", User: hostileTerm}
	if _, err := store.Enqueue(ctx, ev, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run, err := store.ClaimNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := store.PlanDispatch(ctx, run.ID, "reports", delivery.PurposeReport, delivery.StatusPending, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.ClaimDispatch(ctx, d.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.FinishAttempt(ctx, c, delivery.AttemptResult{Status: delivery.StatusFailed, Outcome: "failed", Error: "platform said " + hostileTerm}); err != nil {
		t.Fatal(err)
	}
	out := audit.Outcome{Status: audit.RunSucceeded,
		Problems:  []review.Problem{{File: "a.go", Line: 1, Severity: review.SeverityHigh, Category: "bug", Message: "msg " + hostileTerm}},
		Summaries: []review.Summary{{Title: "title " + hostileTerm, Markdown: "body " + hostileTerm}}}
	if err := store.FinishRun(ctx, run.ID, out); err != nil {
		t.Fatal(err)
	}
	store.Close()

	for name, run := range map[string]func(f *Factory) error{
		"audit list": func(f *Factory) error {
			return auditListRun(ctx, &AuditListOptions{Factory: f, Limit: 10, Format: formatText})
		},
		"audit show": func(f *Factory) error {
			return auditShowRun(ctx, &AuditShowOptions{Factory: f, RunID: run.ID, Format: formatText})
		},
		"audit export --format csv": func(f *Factory) error {
			return auditExportRun(ctx, &AuditExportOptions{Factory: f, Since: "100000d", Format: exportCSV})
		},
		"dispatch list": func(f *Factory) error {
			return dispatchListRun(ctx, &DispatchListOptions{Factory: f, Limit: 10, Format: formatText})
		},
		"dispatch show": func(f *Factory) error {
			return dispatchShowRun(ctx, &DispatchShowOptions{Factory: f, ID: d.ID, Format: formatText})
		},
	} {
		f, stdout, stderr := testFactory(t, configPath)
		if err := run(f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		assertTermSafe(t, name, stdout.String())
		assertTermSafe(t, name+" (stderr)", stderr.String()+" mallory")
	}

	f, stdout, _ := testFactory(t, configPath)
	if err := auditShowRun(ctx, &AuditShowOptions{Factory: f, RunID: run.ID, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), `\u001b]0;pwned`) {
		t.Errorf("audit show --format json must keep the data, escaped:\n%s", stdout)
	}
}

// A rune split across two writes comes out whole.
func TestTermSafeKeepsRunesSplitAcrossWrites(t *testing.T) {
	var b bytes.Buffer
	w := termSafe(&b)
	s := []byte("中文\x1b[0m")
	w.Write(s[:1])
	w.Write(s[1:4])
	w.Write(s[4:])
	if b.String() != "中文[0m" {
		t.Errorf("got %q", b.String())
	}
}
