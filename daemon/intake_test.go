package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

var testSecret = []byte("intake-test-secret")

type intakeFixture struct {
	srv   *httptest.Server
	store *audit.Store
	now   time.Time
}

func newIntakeFixture(t testing.TB) *intakeFixture {
	t.Helper()
	path := writeTemp(t, `
[daemon]
secret_env = "UNUSED"
data_dir = "data"
[[repo]]
name = "main"
kind = "svn"
url = "file:///srv/svn/main"
`)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	store, err := audit.Open(context.Background(), filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := &intakeFixture{store: store, now: time.Now()}
	in := &intake{cfg: cfg, secret: testSecret, store: store, replay: triggers.NewReplayGuard(),
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: func() time.Time { return f.now }, wake: func() {}}
	f.srv = httptest.NewServer(in.routes())
	t.Cleanup(f.srv.Close)
	return f
}

// post sends body signed with secret at ts; a nil secret sends no headers.
func (f *intakeFixture) post(t testing.TB, body []byte, secret []byte, ts time.Time) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/events", bytes.NewReader(body))
	if secret != nil {
		sec := ts.Unix()
		req.Header.Set(triggers.HeaderTimestamp, strconv.FormatInt(sec, 10))
		req.Header.Set(triggers.HeaderSignature, triggers.Sign(secret, sec, body))
	}
	return doJSON(t, req)
}

func doJSON(t testing.TB, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("response body is not JSON: %v", err)
	}
	return resp.StatusCode, out
}

func eventBody(repo, rev string) []byte {
	b, _ := json.Marshal(triggers.Event{V: 1, VCS: "svn", Repo: repo, Revision: rev, User: "alice", SentAt: time.Now().UTC()})
	return b
}

func TestIntakeAcceptsAndIsIdempotent(t *testing.T) {
	f := newIntakeFixture(t)
	status, body := f.post(t, eventBody("main", "42"), testSecret, f.now)
	if status != http.StatusAccepted || body["event_id"] == nil {
		t.Fatalf("first post: %d %v", status, body)
	}
	first := body["event_id"]
	// A second delivery of the same revision (a re-sent spool file, say)
	// is signed afresh, so it is not a replay; it is a duplicate.
	status, body = f.post(t, eventBody("main", "42"), testSecret, f.now.Add(time.Second))
	if status != http.StatusAccepted || body["event_id"] != first || body["duplicate"] != true {
		t.Fatalf("duplicate post: %d %v (first id %v)", status, body, first)
	}
	runs, err := f.store.CountRuns(context.Background(), "main", "42")
	if err != nil || runs != 1 {
		t.Fatalf("want exactly one run for main r42, got %d (%v)", runs, err)
	}
}

func TestIntakeRejectsBadInput(t *testing.T) {
	f := newIntakeFixture(t)
	good := eventBody("main", "7")
	cases := []struct {
		name   string
		body   []byte
		secret []byte
		ts     time.Time
		status int
		code   string
	}{
		{"malformed json", []byte(`{"v":1,"repo":`), testSecret, f.now, 400, "malformed_json"},
		{"missing signature", good, nil, f.now, 401, "missing_signature"},
		{"wrong secret", good, []byte("not-the-secret"), f.now, 401, "bad_signature"},
		{"stale timestamp", good, testSecret, f.now.Add(-6 * time.Minute), 401, "stale_timestamp"},
		{"future timestamp", good, testSecret, f.now.Add(6 * time.Minute), 401, "stale_timestamp"},
		{"unknown repo", eventBody("nope", "7"), testSecret, f.now, 422, "unknown_repo"},
		{"non-numeric revision", eventBody("main", "HEAD"), testSecret, f.now, 400, "invalid_event"},
		{"zero revision", eventBody("main", "0"), testSecret, f.now, 400, "invalid_event"},
		{"wrong protocol version", []byte(`{"v":2,"vcs":"svn","repo":"main","revision":"7"}`), testSecret, f.now, 400, "invalid_event"},
		{"wrong version and unknown repo", []byte(`{"v":2,"vcs":"svn","repo":"nope","revision":"7"}`), testSecret, f.now, 400, "invalid_event"},
		{"wrong vcs for repo", []byte(`{"v":1,"vcs":"p4","repo":"main","revision":"7"}`), testSecret, f.now, 400, "invalid_event"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.post(t, tc.body, tc.secret, tc.ts)
			if status != tc.status || body["code"] != tc.code {
				t.Fatalf("got %d %v, want %d code %s", status, body, tc.status, tc.code)
			}
			if msg, _ := body["error"].(string); msg == "" {
				t.Fatalf("error body has no message: %v", body)
			}
		})
	}
	runs, _ := f.store.ListRuns(context.Background(), audit.ListOptions{})
	if len(runs) != 0 {
		t.Fatalf("rejected requests must not queue runs, got %d", len(runs))
	}
	// Every refused request is kept for the operator (aicr audit
	// rejected): unusable bodies, and unsigned, mis-signed or stale ones,
	// which a hook signing with another secret sends.
	rejected, err := f.store.ListRejectedEvents(context.Background(), 50)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, r := range rejected {
		reasons = append(reasons, r.Reason)
	}
	joined := strings.Join(reasons, "\n")
	for _, want := range []string{"malformed_json", "unknown_repo", `revision "HEAD"`, "missing_signature", "bad_signature", "stale_timestamp"} {
		if !strings.Contains(joined, want) {
			t.Errorf("rejected events do not record %q:\n%s", want, joined)
		}
	}
}

func TestIntakeRejectsReplay(t *testing.T) {
	f := newIntakeFixture(t)
	body := eventBody("main", "9")
	ts := f.now.Unix()
	send := func() (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/events", bytes.NewReader(body))
		req.Header.Set(triggers.HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(triggers.HeaderSignature, triggers.Sign(testSecret, ts, body))
		return doJSON(t, req)
	}
	if status, resp := send(); status != http.StatusAccepted {
		t.Fatalf("first: %d %v", status, resp)
	}
	if status, resp := send(); status != http.StatusConflict || resp["code"] != "replayed" {
		t.Fatalf("replay: %d %v", status, resp)
	}
	rejected, err := f.store.ListRejectedEvents(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected) != 1 || !strings.HasPrefix(rejected[0].Reason, "replayed") || !bytes.Equal(rejected[0].Payload, body) {
		t.Fatalf("rejected events after a replay = %+v, want the replayed request", rejected)
	}
}

// A flood of forged requests is refused and counted, but at most
// unauthLogBurst a minute are kept in rejected_events.
func TestIntakeKeepsABoundedShareOfForgedRequests(t *testing.T) {
	f := newIntakeFixture(t)
	for i := range 3 * unauthLogBurst {
		if status, body := f.post(t, eventBody("main", strconv.Itoa(i+1)), []byte("not-the-secret"), f.now); status != http.StatusUnauthorized {
			t.Fatalf("forged request %d: %d %v", i, status, body)
		}
	}
	rejected, err := f.store.ListRejectedEvents(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected) != unauthLogBurst {
		t.Fatalf("%d forged requests kept, want %d (one minute's share)", len(rejected), unauthLogBurst)
	}
}

func TestIntakeBodyLimit(t *testing.T) {
	f := newIntakeFixture(t)
	big := bytes.Repeat([]byte("x"), maxEventBytes+1)
	status, body := f.post(t, big, testSecret, f.now)
	if status != http.StatusRequestEntityTooLarge || body["code"] != "body_too_large" {
		t.Fatalf("got %d %v", status, body)
	}
}
