package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
)

// `aicr reload` names the hash once: "sha256 0123456789ab", never
// "sha256 sha256:…".
func TestReloadDigestSaysSHA256Once(t *testing.T) {
	got := short("sha256:0123456789abcdef0123")
	if got != "0123456789ab" {
		t.Errorf("short = %q, want the hex digits only", got)
	}
}

// A dispatch sent as one message does not claim "0 parts delivered"
// in dispatch show; a split one counts its parts.
func TestDispatchShowPartsWording(t *testing.T) {
	for _, tc := range []struct {
		d    delivery.Dispatch
		want string
	}{
		{delivery.Dispatch{Status: delivery.StatusSent, MessageID: "m1"}, "message id: m1 (delivered as one message)\n"},
		{delivery.Dispatch{Status: delivery.StatusSent, MessageID: "m1", PartsDelivered: 3}, "message id: m1 (3 parts delivered)\n"},
		{delivery.Dispatch{Status: delivery.StatusPending, MessageID: "m1", PartsDelivered: 1}, "message id: m1 (1 part delivered)\n"},
	} {
		var b strings.Builder
		printDispatch(&b, dispatchView{Dispatch: tc.d})
		if got := b.String(); !strings.Contains(got, tc.want) || strings.Contains(got, "0 parts") {
			t.Errorf("%+v: dispatch show printed\n%s\nwant a line %q", tc.d, got, tc.want)
		}
	}
}

// A wrong --repo names the repos the config has.
func TestWrongRepoListsTheConfiguredNames(t *testing.T) {
	configPath, _, _ := writeFileChannelConfig(t)
	_, errOut, exit := runCLI(t, "review", "svn", "--repo", "nope", "--rev", "1", "--dry-run", "--config", configPath)
	if exit != 2 || !strings.Contains(errOut, `--repo "nope": no such [[repo]]`) || !strings.Contains(errOut, "configured: main") {
		t.Errorf("exit %d, stderr %q; want the configured names", exit, errOut)
	}
}

// A Perforce change reads "change 1231" in audit show, as in its reports;
// a Subversion revision stays "r42".
func TestAuditShowNamesAPerforceChangeAsReportsDo(t *testing.T) {
	for _, tc := range []struct{ vcs, rev, want string }{{"p4", "1231", "depot change 1231 by"}, {"svn", "42", "main r42 by"}} {
		d := &audit.RunDetail{}
		d.ID, d.VCS, d.Repo, d.Revision, d.User, d.Status = 1, tc.vcs, map[string]string{"p4": "depot", "svn": "main"}[tc.vcs], tc.rev, "alice", audit.RunSucceeded
		var b strings.Builder
		printRunDetail(&b, d)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%s: audit show printed %q, want %q", tc.vcs, strings.SplitN(b.String(), "\n", 2)[0], tc.want)
		}
	}
}

// A verb's warnings are plain lines on stderr, never JSON log records,
// even when stderr is a pipe: they sit among the verb's human output.
func TestVerbLogsArePlainText(t *testing.T) {
	f, _, errOut := testFactory(t, "")
	f.VerbLogger(slog.LevelWarn).Warn("channel slow", "channel", "slack")
	got := errOut.String()
	if strings.HasPrefix(strings.TrimSpace(got), "{") || strings.Contains(got, "time=") || !strings.Contains(got, `msg="channel slow" channel=slack`) {
		t.Errorf("verb log line %q; want a plain line without time", got)
	}
}
