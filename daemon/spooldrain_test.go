package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

const drainSecretEnv = "AICR_TEST_DRAIN_SECRET"

func newDrainFixture(t *testing.T) (*spoolDrainer, *audit.Store, triggers.Spool) {
	t.Helper()
	t.Setenv(drainSecretEnv, string(testSecret))
	spoolDir := filepath.Join(t.TempDir(), "spool")
	cfg, err := config.Load(writeTemp(t, `
[daemon]
secret_env = "`+drainSecretEnv+`"
data_dir = "data"
[notify]
spool_dir = "`+spoolDir+`"
unknown_repo_retry = "1h"
[[repo]]
name = "main"
kind = "svn"
url = "file:///srv/svn/main"
`))
	if err != nil {
		t.Fatal(err)
	}
	store, err := audit.Open(context.Background(), filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	d := &spoolDrainer{cfg: cfg, store: store, log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now, wake: func() {}}
	return d, store, triggers.Spool{Dir: spoolDir, Secret: testSecret}
}

func spoolEvent(repo, rev string) triggers.Event {
	return triggers.Event{V: triggers.ProtocolVersion, VCS: "svn", Repo: repo, Revision: rev, Source: triggers.SourceTrigger, SentAt: time.Now().UTC()}
}

// Issue 10 item 22: anyone who could write the spool dir could inject
// events, of any size. Only files signed with the shared secret are
// queued; the rest go to rejected/ and the audit trail.
func TestDrainQueuesOnlySignedSpoolFiles(t *testing.T) {
	d, store, sp := newDrainFixture(t)
	if _, err := sp.Write(spoolEvent("main", "01")); err != nil { // signed, non-canonical
		t.Fatal(err)
	}
	forged := triggers.Spool{Dir: sp.Dir, Secret: []byte("not-the-secret")}
	if _, err := forged.Write(spoolEvent("main", "2")); err != nil {
		t.Fatal(err)
	}
	if _, err := (triggers.Spool{Dir: sp.Dir}).Write(spoolEvent("main", "3")); err != nil { // unsigned
		t.Fatal(err)
	}
	huge := append([]byte(`{"timestamp":1,"event":{"v":1,"vcs":"svn","repo":"main","revision":"4","user":"`), bytes.Repeat([]byte("x"), 1<<20)...)
	if err := os.WriteFile(filepath.Join(sp.Dir, "99999999999999999999-main-4.json"), append(huge, `"}}`...), 0o640); err != nil {
		t.Fatal(err)
	}

	n, err := d.drain(context.Background(), triggers.Spool{Dir: sp.Dir})
	if err != nil || n != 1 {
		t.Fatalf("drain = %d, %v; want only the signed event queued", n, err)
	}
	if runs, _ := store.CountRuns(context.Background(), "main", "1"); runs != 1 {
		t.Fatalf("runs for main r1 = %d, want 1 (revision canonicalised)", runs)
	}
	for _, rev := range []string{"2", "3", "4"} {
		if runs, _ := store.CountRuns(context.Background(), "main", rev); runs != 0 {
			t.Fatalf("r%s queued from an unsigned or forged spool file", rev)
		}
	}
	if left, _ := sp.List(); len(left) != 0 {
		t.Fatalf("spool not emptied: %v", left)
	}
	reasons, _ := filepath.Glob(filepath.Join(sp.Dir, triggers.RejectedDir, "*.reason"))
	if len(reasons) != 3 {
		t.Fatalf("rejected reasons %v, want 3", reasons)
	}
	rej, err := store.ListRejectedEvents(context.Background(), 10)
	if err != nil || len(rej) != 3 {
		t.Fatalf("rejected events in the audit trail: %d (%v), want 3", len(rej), err)
	}
	var all strings.Builder
	for _, r := range rej {
		if len(r.Payload) > 8<<10 {
			t.Fatalf("stored %d bytes of a refused spool file", len(r.Payload))
		}
		all.WriteString(r.Reason + "\n")
	}
	for _, want := range []string{"signature does not match", "unsigned", "over the"} {
		if !strings.Contains(all.String(), want) {
			t.Fatalf("rejected reasons do not say %q:\n%s", want, all.String())
		}
	}
}

// Issue 10 item 4: an event for a repo the running daemon does not know
// (added to the config, daemon not restarted) stays spooled for the
// configured window instead of being rejected at the first drain.
func TestDrainKeepsUnknownRepoEventsForTheWindow(t *testing.T) {
	d, store, sp := newDrainFixture(t)
	if _, err := sp.Write(spoolEvent("newrepo", "5")); err != nil {
		t.Fatal(err)
	}
	if n, err := d.drain(context.Background(), sp); err != nil || n != 0 {
		t.Fatalf("drain = %d, %v", n, err)
	}
	if left, _ := sp.List(); len(left) != 1 {
		t.Fatalf("unknown-repo event not kept for retry: spool %v", left)
	}
	// unknown_repo_retry = 1h: two hours later it is given up, with the
	// reason, for an operator.
	d.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if _, err := d.drain(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	if left, _ := sp.List(); len(left) != 0 {
		t.Fatalf("stale unknown-repo event still spooled: %v", left)
	}
	rej, _ := store.ListRejectedEvents(context.Background(), 10)
	if len(rej) != 1 || !strings.Contains(rej[0].Reason, "does not know") {
		t.Fatalf("rejected events %+v, want one saying the daemon does not know the repo", rej)
	}
}
