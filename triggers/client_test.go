package triggers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var testSecret = []byte("test-secret-do-not-print")

// fakeDaemon is an intake that checks signatures like the real one and
// answers each event with what respond says.
type fakeDaemon struct {
	t       *testing.T
	srv     *httptest.Server
	guard   ReplayGuard
	respond func(ev Event) (int, any)

	mu     sync.Mutex
	events []Event
}

func newFakeDaemon(t *testing.T, respond func(ev Event) (int, any)) *fakeDaemon {
	d := &fakeDaemon{t: t, respond: respond}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *fakeDaemon) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != EventsPath {
		writeTestJSON(w, 404, ErrorBody{Error: "no such endpoint", Code: "not_found"})
		return
	}
	body, _ := io.ReadAll(r.Body)
	if err := Verify(testSecret, r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature), body, time.Now()); err != nil {
		d.t.Errorf("daemon got a badly signed request: %v", err)
		writeTestJSON(w, 401, ErrorBody{Error: err.Error(), Code: "bad_signature"})
		return
	}
	if err := d.guard.Check(r.Header.Get(HeaderSignature), time.Now()); err != nil {
		d.t.Errorf("daemon got a replayed request")
		writeTestJSON(w, 409, ErrorBody{Error: err.Error(), Code: "replayed"})
		return
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		d.t.Errorf("daemon got bad JSON: %v", err)
	}
	d.mu.Lock()
	d.events = append(d.events, ev)
	id := len(d.events)
	d.mu.Unlock()
	status, resp := 202, any(Accepted{EventID: int64(id)})
	if d.respond != nil {
		status, resp = d.respond(ev)
	}
	if s, ok := resp.(string); ok {
		w.WriteHeader(status)
		io.WriteString(w, s)
		return
	}
	writeTestJSON(w, status, resp)
}

func (d *fakeDaemon) received() []Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.events)
}

func writeTestJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func clientConfig(url, spool string) ClientConfig {
	return ClientConfig{URL: url, Secret: testSecret, SpoolDir: spool}
}

func TestNotifyDelivered(t *testing.T) {
	d := newFakeDaemon(t, nil)
	spool := t.TempDir()
	var stderr bytes.Buffer
	ev := Event{VCS: "svn", Repo: "main", Revision: "42", User: "alice"}
	out := Notify(context.Background(), clientConfig(d.srv.URL, spool), ev, &stderr)
	if !out.Delivered || out.EventID != 1 || out.Err != nil || out.Spooled != "" {
		t.Fatalf("Outcome %+v, want delivered event 1", out)
	}
	if stderr.Len() != 0 {
		t.Fatalf("stderr on success: %q", stderr.String())
	}
	got := d.received()
	if len(got) != 1 || got[0].Revision != "42" || got[0].V != ProtocolVersion || got[0].Source != SourceTrigger || got[0].SentAt.IsZero() {
		t.Fatalf("daemon received %+v", got)
	}
	if names, _ := (Spool{Dir: spool}).List(); len(names) != 0 {
		t.Fatalf("spooled %v after delivery", names)
	}
}

func TestNotifySpoolsOnFailure(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close() // nothing listens there now: connection refused

	tests := []struct {
		name     string
		url      func(t *testing.T) string
		wantCode string
	}{
		{"daemon down", func(*testing.T) string { return downURL }, "unreachable"},
		{"500", func(t *testing.T) string {
			return newFakeDaemon(t, func(Event) (int, any) { return 500, ErrorBody{Error: "store broke", Code: "store_unavailable"} }).srv.URL
		}, "store_unavailable"},
		{"400", func(t *testing.T) string {
			return newFakeDaemon(t, func(Event) (int, any) { return 400, ErrorBody{Error: "missing repo", Code: "invalid_event"} }).srv.URL
		}, "invalid_event"},
		{"429", func(t *testing.T) string {
			return newFakeDaemon(t, func(Event) (int, any) { return 429, "slow down" }).srv.URL
		}, "http_429"},
		{"202 without JSON", func(t *testing.T) string {
			return newFakeDaemon(t, func(Event) (int, any) { return 202, "<html>proxy</html>" }).srv.URL
		}, "bad_response"},
		{"200 instead of 202", func(t *testing.T) string {
			return newFakeDaemon(t, func(Event) (int, any) { return 200, Accepted{EventID: 1} }).srv.URL
		}, "http_200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spool := Spool{Dir: filepath.Join(t.TempDir(), "spool"), Secret: []byte(testSecret)}
			url := tt.url(t)
			var stderr bytes.Buffer
			out := Notify(context.Background(), clientConfig(url, spool.Dir), Event{VCS: "svn", Repo: "main", Revision: "42"}, &stderr)
			if out.Delivered {
				t.Fatal("reported delivered")
			}
			var de *PostError
			if !errors.As(out.Err, &de) || de.Code != tt.wantCode {
				t.Fatalf("Outcome.Err = %v, want a PostError with code %s", out.Err, tt.wantCode)
			}
			names, _ := spool.List()
			if len(names) != 1 || out.Spooled != spool.Path(names[0]) {
				t.Fatalf("spool holds %v, Outcome.Spooled = %q; want the one file", names, out.Spooled)
			}
			ev, _, err := spool.Read(names[0])
			if err != nil || ev.Revision != "42" || ev.Source != SourceTrigger || ev.SentAt.IsZero() {
				t.Fatalf("spooled event %+v, %v", ev, err)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, url) || !strings.Contains(msg, tt.wantCode) || !strings.Contains(msg, out.Spooled) {
				t.Fatalf("stderr %q: want one line naming the daemon, the reason and the spool file", msg)
			}
			assertNoSecret(t, msg, testSecret)
		})
	}
}

func TestNotifyWithoutSecretSpoolsAndSaysHowToFix(t *testing.T) {
	d := newFakeDaemon(t, nil)
	spool := Spool{Dir: t.TempDir(), Secret: []byte(testSecret)}
	cfg := clientConfig(d.srv.URL, spool.Dir)
	cfg.Secret = nil
	var stderr bytes.Buffer
	out := Notify(context.Background(), cfg, Event{VCS: "svn", Repo: "main", Revision: "5"}, &stderr)
	if !errors.Is(out.Err, ErrNoSecret) || out.Spooled == "" {
		t.Fatalf("Outcome %+v, want ErrNoSecret and spooled", out)
	}
	if len(d.received()) != 0 {
		t.Fatal("sent an unsigned event")
	}
	if !strings.Contains(stderr.String(), "secret") || !strings.Contains(stderr.String(), "config") {
		t.Fatalf("stderr %q does not say how to configure the secret", stderr.String())
	}
}

func TestNotifyCannotSpoolSaysEventLost(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(file, nil, 0o600))
	var stderr bytes.Buffer
	cfg := clientConfig("http://127.0.0.1:1", filepath.Join(file, "spool")) // a file is in the way
	out := Notify(context.Background(), cfg, Event{VCS: "svn", Repo: "main", Revision: "5"}, &stderr)
	if out.Spooled != "" || out.Err == nil {
		t.Fatalf("Outcome %+v, want not spooled with an error", out)
	}
	if !strings.Contains(stderr.String(), "NOT RECORDED") {
		t.Fatalf("stderr %q does not say the event was lost", stderr.String())
	}
}

func TestNotifyHangingDaemonTimesOut(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	// Unblock the handler before Close waits for it.
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	spool := Spool{Dir: t.TempDir(), Secret: []byte(testSecret)}
	cfg := clientConfig(srv.URL, spool.Dir)
	cfg.Timeout = 200 * time.Millisecond
	var stderr bytes.Buffer
	out := Notify(context.Background(), cfg, Event{VCS: "svn", Repo: "main", Revision: "8"}, &stderr)
	<-arrived
	var de *PostError
	if !errors.As(out.Err, &de) || de.Code != "timeout" || !errors.Is(out.Err, context.DeadlineExceeded) {
		t.Fatalf("Outcome.Err = %v, want a timeout", out.Err)
	}
	if names, _ := spool.List(); len(names) != 1 {
		t.Fatalf("spool %v, want the event", names)
	}
}

func TestNotifyHangingConnectTimesOut(t *testing.T) {
	// A listener that never accepts: connect may succeed via the backlog
	// but no answer ever comes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { ln.Close() })
	spool := Spool{Dir: t.TempDir(), Secret: []byte(testSecret)}
	cfg := clientConfig("http://"+ln.Addr().String(), spool.Dir)
	cfg.Timeout = 200 * time.Millisecond
	out := Notify(context.Background(), cfg, Event{VCS: "svn", Repo: "main", Revision: "8"}, io.Discard)
	if out.Spooled == "" || !errors.Is(out.Err, context.DeadlineExceeded) {
		t.Fatalf("Outcome %+v, want spooled after a timeout", out)
	}
}

// spoolOlder spools events for revisions revs, oldest first.
func spoolOlder(t *testing.T, spool Spool, revs ...string) []string {
	t.Helper()
	var names []string
	for _, rev := range revs {
		ev := testEvent(rev)
		ev.Source = SourceTrigger
		name, err := spool.Write(ev)
		must(t, err)
		names = append(names, name)
	}
	return names
}

func revisions(evs []Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Revision+":"+string(ev.Source))
	}
	return out
}

func TestNotifyResendsSpooledOldestFirst(t *testing.T) {
	d := newFakeDaemon(t, nil)
	spool := Spool{Dir: t.TempDir(), Secret: []byte(testSecret)}
	spoolOlder(t, spool, "10", "11", "12")
	var stderr bytes.Buffer
	out := Notify(context.Background(), clientConfig(d.srv.URL, spool.Dir), Event{VCS: "svn", Repo: "main", Revision: "13"}, &stderr)
	if !out.Delivered || out.Resent != 3 || out.Rejected != 0 {
		t.Fatalf("Outcome %+v, want delivered and 3 re-sent", out)
	}
	want := []string{"13:trigger", "10:spool", "11:spool", "12:spool"}
	if got := revisions(d.received()); !slices.Equal(got, want) {
		t.Fatalf("daemon received %v, want %v", got, want)
	}
	// The original sent_at survives the re-send; only the signature is fresh.
	if got := d.received()[1].SentAt; !got.Equal(testEvent("10").SentAt) {
		t.Fatalf("re-sent SentAt %v, want the original", got)
	}
	if names, _ := spool.List(); len(names) != 0 {
		t.Fatalf("spool not emptied: %v", names)
	}
	if stderr.Len() != 0 {
		t.Fatalf("stderr %q", stderr.String())
	}
}

func TestNotifyResendRejectsPermanentFailure(t *testing.T) {
	d := newFakeDaemon(t, func(ev Event) (int, any) {
		if ev.Revision == "11" {
			return 400, ErrorBody{Error: `repo "main" is kind "p4" but the event says vcs "svn"`, Code: "invalid_event"}
		}
		return 202, Accepted{EventID: 1}
	})
	spool := Spool{Dir: t.TempDir(), Secret: []byte(testSecret)}
	names := spoolOlder(t, spool, "10", "11", "12")
	var stderr bytes.Buffer
	out := Notify(context.Background(), clientConfig(d.srv.URL, spool.Dir), Event{VCS: "svn", Repo: "main", Revision: "13"}, &stderr)
	if out.Resent != 2 || out.Rejected != 1 {
		t.Fatalf("Outcome %+v, want 2 re-sent, 1 rejected", out)
	}
	if left, _ := spool.List(); len(left) != 0 {
		t.Fatalf("spool %v, want empty", left)
	}
	reason, err := os.ReadFile(filepath.Join(spool.Dir, RejectedDir, names[1]+".reason"))
	must(t, err)
	if !strings.Contains(string(reason), "400") || !strings.Contains(string(reason), `is kind "p4"`) {
		t.Fatalf("reason %q, want the daemon's error", reason)
	}
	if _, err := os.Stat(filepath.Join(spool.Dir, RejectedDir, names[1])); err != nil {
		t.Fatalf("rejected event not kept: %v", err)
	}
	if !strings.Contains(stderr.String(), names[1]) {
		t.Fatalf("stderr %q does not name the rejected file", stderr.String())
	}
}

func TestNotifyResendStopsWhenDaemonStruggles(t *testing.T) {
	d := newFakeDaemon(t, func(ev Event) (int, any) {
		if ev.Revision == "11" {
			return 503, ErrorBody{Error: "busy", Code: "store_unavailable"}
		}
		return 202, Accepted{EventID: 1}
	})
	spool := Spool{Dir: t.TempDir(), Secret: []byte(testSecret)}
	names := spoolOlder(t, spool, "10", "11", "12")
	out := Notify(context.Background(), clientConfig(d.srv.URL, spool.Dir), Event{VCS: "svn", Repo: "main", Revision: "13"}, io.Discard)
	if out.Resent != 1 || out.Rejected != 0 {
		t.Fatalf("Outcome %+v, want 1 re-sent then stop", out)
	}
	if got := revisions(d.received()); !slices.Equal(got, []string{"13:trigger", "10:spool", "11:spool"}) {
		t.Fatalf("daemon received %v: re-send must stop at the 503", got)
	}
	if left, _ := spool.List(); !slices.Equal(left, names[1:]) {
		t.Fatalf("spool %v, want %v left for later", left, names[1:])
	}
}

func TestNotifyResendStopsAtResendMax(t *testing.T) {
	d := newFakeDaemon(t, nil)
	spool := Spool{Dir: t.TempDir(), Secret: []byte(testSecret)}
	names := spoolOlder(t, spool, "1", "2", "3", "4", "5")
	cfg := clientConfig(d.srv.URL, spool.Dir)
	cfg.ResendMax = 2
	out := Notify(context.Background(), cfg, Event{VCS: "svn", Repo: "main", Revision: "6"}, io.Discard)
	if out.Resent != 2 {
		t.Fatalf("Outcome %+v, want 2 re-sent", out)
	}
	if got := revisions(d.received()); !slices.Equal(got, []string{"6:trigger", "1:spool", "2:spool"}) {
		t.Fatalf("daemon received %v", got)
	}
	if left, _ := spool.List(); !slices.Equal(left, names[2:]) {
		t.Fatalf("spool %v, want %v", left, names[2:])
	}
}

func TestNotifyResendSkipsCorruptFile(t *testing.T) {
	d := newFakeDaemon(t, nil)
	spool := Spool{Dir: t.TempDir(), Secret: []byte(testSecret)}
	must(t, os.WriteFile(spool.Path("00000000000000000001-main-1.json"), []byte("garbage"), 0o600))
	spoolOlder(t, spool, "2")
	out := Notify(context.Background(), clientConfig(d.srv.URL, spool.Dir), Event{VCS: "svn", Repo: "main", Revision: "3"}, io.Discard)
	if out.Resent != 1 || out.Rejected != 1 {
		t.Fatalf("Outcome %+v, want corrupt file rejected and the next one re-sent", out)
	}
}

func TestPostClassifiesStatus(t *testing.T) {
	tests := []struct {
		status    int
		body      any
		code      string
		permanent bool
	}{
		{400, ErrorBody{Error: "bad", Code: "invalid_event"}, "invalid_event", true},
		{401, ErrorBody{Error: "sig", Code: "bad_signature"}, "bad_signature", true},
		{408, "timeout", "http_408", false},
		// Two hooks re-sending one spooled event in the same second sign the
		// same bytes; the next attempt is signed afresh, so it is retryable.
		{409, ErrorBody{Error: "again", Code: "replayed"}, "replayed", false},
		{422, ErrorBody{Error: "who", Code: "unknown_repo"}, "unknown_repo", false}, // retryable: the daemon may not be restarted yet
		{400, ErrorBody{Error: "bad", Code: "invalid_event"}, "invalid_event", true},
		{429, ErrorBody{Error: "slow", Code: "rate_limited"}, "rate_limited", false},
		{500, "", "http_500", false},
		{503, ErrorBody{Error: "busy", Code: "store_unavailable"}, "store_unavailable", false},
		{301, "", "http_301", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			d := newFakeDaemon(t, func(Event) (int, any) { return tt.status, tt.body })
			_, err := Post(context.Background(), clientConfig(d.srv.URL, ""), testEvent("1"))
			var de *PostError
			if !errors.As(err, &de) {
				t.Fatalf("Post: %v, want *PostError", err)
			}
			if de.Status != tt.status || de.Code != tt.code || de.Permanent != tt.permanent {
				t.Fatalf("PostError %+v, want status %d code %s permanent %v", de, tt.status, tt.code, tt.permanent)
			}
		})
	}
}

func TestPostAccepted(t *testing.T) {
	d := newFakeDaemon(t, func(Event) (int, any) { return 202, Accepted{EventID: 77, Duplicate: true} })
	acc, err := Post(context.Background(), clientConfig(d.srv.URL, ""), testEvent("1"))
	if err != nil || acc != (Accepted{EventID: 77, Duplicate: true}) {
		t.Fatalf("Post = %+v, %v", acc, err)
	}
}

func TestPostRedactsURLCredentials(t *testing.T) {
	var stderr bytes.Buffer
	cfg := ClientConfig{URL: "http://admin:pa55word@127.0.0.1:1", Secret: testSecret, SpoolDir: t.TempDir()}
	out := Notify(context.Background(), cfg, testEvent("1"), &stderr)
	if out.Spooled == "" {
		t.Fatalf("not spooled: %+v", out)
	}
	assertNoSecret(t, stderr.String(), []byte("pa55word"))
	assertNoSecret(t, out.Err.Error(), []byte("pa55word"))
}

func assertNoSecret(t *testing.T, s string, secret []byte) {
	t.Helper()
	if strings.Contains(s, string(secret)) {
		t.Fatalf("secret leaked into %q", s)
	}
}
