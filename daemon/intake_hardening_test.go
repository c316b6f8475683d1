package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// lockedBuffer is a log sink the HTTP handlers can write concurrently.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startIntake serves a fresh intake (fresh in-memory replay guard, as
// after a daemon restart) on the database at dbPath.
func startIntake(t *testing.T, dbPath string, now *time.Time, logw *lockedBuffer) (*intakeFixture, *audit.Store) {
	t.Helper()
	cfg, err := config.Load(writeTemp(t, `
[daemon]
secret_env = "UNUSED"
data_dir = "data"
[[repo]]
name = "main"
kind = "svn"
url = "file:///srv/svn/main"
`))
	if err != nil {
		t.Fatal(err)
	}
	store, err := audit.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if logw == nil {
		logw = &lockedBuffer{}
	}
	in := &intake{cfg: cfg, secret: testSecret, store: store, replay: triggers.NewReplayGuard(),
		log: slog.New(slog.NewTextHandler(logw, nil)), now: func() time.Time { return *now }, wake: func() {}}
	srv := httptest.NewServer(in.routes())
	t.Cleanup(srv.Close)
	return &intakeFixture{srv: srv, store: store, now: *now}, store
}

func TestIntakeCanonicalisesRevisionsSoTheyDeduplicate(t *testing.T) {
	f := newIntakeFixture(t)
	status, body := f.post(t, eventBody("main", "1"), testSecret, f.now)
	if status != http.StatusAccepted {
		t.Fatalf("r1: %d %v", status, body)
	}
	for i, rev := range []string{"+1", "01", "0001"} {
		status, body := f.post(t, eventBody("main", rev), testSecret, f.now.Add(time.Duration(i+1)*time.Second))
		if status != http.StatusAccepted || body["duplicate"] != true {
			t.Fatalf("revision %q: %d %v; want 202 duplicate of r1", rev, status, body)
		}
	}
	if runs, err := f.store.CountRuns(context.Background(), "main", "1"); err != nil || runs != 1 {
		t.Fatalf("runs for main r1 = %d (%v), want 1", runs, err)
	}
	for _, rev := range []string{"-1", "1e3", " 1", "0x1", "99999999999999999999"} {
		status, body := f.post(t, eventBody("main", rev), testSecret, f.now.Add(time.Minute))
		if msg, _ := body["error"].(string); status != http.StatusBadRequest || !strings.Contains(msg, rev) {
			t.Fatalf("revision %q: %d %v; want 400 naming the revision", rev, status, body)
		}
	}
}

func TestIntakeIgnoresSourceClaimedByTheBody(t *testing.T) {
	f := newIntakeFixture(t)
	post := func(rev string, source string, at time.Time) (int, map[string]any) {
		b, _ := json.Marshal(triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: rev, Source: triggers.Source(source), SentAt: at})
		return f.post(t, b, testSecret, at)
	}
	// "manual" would bypass de-duplication and make a run per request.
	for i := range 3 {
		status, body := post("5", "manual", f.now.Add(time.Duration(i)*time.Second))
		if status != http.StatusAccepted {
			t.Fatalf("post %d: %d %v", i, status, body)
		}
	}
	if runs, _ := f.store.CountRuns(context.Background(), "main", "5"); runs != 1 {
		t.Fatalf("runs for r5 = %d, want 1: a hook cannot ask for a manual run", runs)
	}
	// A value the store does not know used to answer 503 (as if the
	// daemon were broken) and make the hook spool forever.
	if status, body := post("6", "bogus", f.now.Add(10*time.Second)); status != http.StatusAccepted {
		t.Fatalf("source bogus: %d %v, want 202", status, body)
	}
	if status, body := post("7", "spool", f.now.Add(11*time.Second)); status != http.StatusAccepted {
		t.Fatalf("source spool: %d %v", status, body)
	}
	runs, err := f.store.ListRuns(context.Background(), audit.ListOptions{Repo: "main"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range runs {
		got[r.Revision] = string(r.Source)
	}
	for rev, want := range map[string]string{"5": "trigger", "6": "trigger", "7": "spool"} {
		if got[rev] != want {
			t.Fatalf("r%s recorded with source %q, want %q (all: %v)", rev, got[rev], want, got)
		}
	}
}

func TestIntakeReplayWindowSurvivesRestart(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "aicr.db")
	now := time.Now()
	f1, store1 := startIntake(t, dbPath, &now, nil)
	body := eventBody("main", "9")
	if status, resp := f1.post(t, body, testSecret, now); status != http.StatusAccepted {
		t.Fatalf("first: %d %v", status, resp)
	}
	f1.srv.Close()
	store1.Close()

	// The restarted daemon has an empty in-memory guard; a captured
	// request re-sent within the signature's validity must still fail.
	now = now.Add(time.Minute)
	f2, store2 := startIntake(t, dbPath, &now, nil)
	if status, resp := f2.post(t, body, testSecret, now.Add(-time.Minute)); status != http.StatusConflict || resp["code"] != "replayed" {
		t.Fatalf("replay after restart: %d %v, want 409 replayed", status, resp)
	}
	// Entries older than the window are pruned as new ones arrive.
	now = now.Add(triggers.ReplayWindow + time.Minute)
	if status, resp := f2.post(t, eventBody("main", "10"), testSecret, now); status != http.StatusAccepted {
		t.Fatalf("fresh: %d %v", status, resp)
	}
	if n, err := store2.ReplaySignatures(context.Background()); err != nil || n != 1 {
		t.Fatalf("remembered signatures = %d (%v), want only the fresh one", n, err)
	}
}

func TestIntakeUnknownRepoAsksForReload(t *testing.T) {
	f := newIntakeFixture(t)
	status, body := f.post(t, eventBody("newrepo", "3"), testSecret, f.now)
	msg, _ := body["error"].(string)
	if status != http.StatusUnprocessableEntity || body["code"] != triggers.CodeUnknownRepo ||
		!strings.Contains(msg, "running daemon does not know") || !strings.Contains(msg, "reload") {
		t.Fatalf("got %d %v; want 422 unknown_repo telling to reload the daemon", status, body)
	}
	if strings.Contains(msg, "add a [[repo]]") && !strings.Contains(msg, "reload") {
		t.Fatalf("message blames the config: %q", msg)
	}
}

func TestIntakeRateLimitsUnauthenticatedLogLines(t *testing.T) {
	now := time.Now()
	logw := &lockedBuffer{}
	f, _ := startIntake(t, filepath.Join(t.TempDir(), "aicr.db"), &now, logw)
	const flood = 200
	for range flood {
		if status, _ := f.post(t, eventBody("main", "1"), nil, now); status != http.StatusUnauthorized {
			t.Fatalf("unsigned request answered %d", status)
		}
	}
	lines := strings.Count(logw.String(), "\n")
	if lines > unauthLogBurst+1 {
		t.Fatalf("%d log lines for %d unauthenticated requests; want at most %d", lines, flood, unauthLogBurst+1)
	}
	now = now.Add(61 * time.Second)
	f.post(t, eventBody("main", "1"), []byte("forged"), now)
	out := logw.String()
	if !strings.Contains(out, "suppressed="+itoa(flood-unauthLogBurst)) || !strings.Contains(out, "total_unauthenticated="+itoa(flood+1)) {
		t.Fatalf("log has no summary of the suppressed lines and the running count:\n%s", out)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
