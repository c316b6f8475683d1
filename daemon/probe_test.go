package daemon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

func newProbeServer(t *testing.T) (*httptest.Server, *config.Config, *audit.Store) {
	t.Helper()
	path := writeTemp(t, `
[daemon]
secret_env = "UNUSED"
data_dir = "data"
[[repo]]
name = "main"
kind = "svn"
url = "file:///srv/svn/main"
[[repo]]
name = "tools"
kind = "svn"
url = "file:///srv/svn/tools"
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
	in := &intake{cfg: cfg, secret: testSecret, store: store, replay: triggers.NewReplayGuard(), version: "1.2.3",
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Now, wake: func() {}}
	srv := httptest.NewServer(in.routes())
	t.Cleanup(srv.Close)
	return srv, cfg, store
}

// A probe signed with the daemon's secret learns its version, the digest
// of the config bytes it loaded and the repos it knows; nothing is queued.
func TestProbeAnswersWhatTheDaemonRuns(t *testing.T) {
	srv, cfg, store := newProbeServer(t)
	ans, err := triggers.SendProbe(context.Background(), srv.URL, testSecret, 5*time.Second, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Version != "1.2.3" || ans.ConfigPath != cfg.Path || ans.ConfigDigest != config.Digest(data) {
		t.Errorf("answer %+v; want version 1.2.3, config %s with digest %s", ans, cfg.Path, config.Digest(data))
	}
	if !ans.Knows("main") || !ans.Knows("tools") || ans.Knows("other") || len(ans.Repos) != 2 {
		t.Errorf("repos %+v, want main and tools", ans.Repos)
	}
	// Two probes within the same second are both answered (the nonce).
	if _, err := triggers.SendProbe(context.Background(), srv.URL, testSecret, 5*time.Second, time.Now()); err != nil {
		t.Errorf("second probe: %v", err)
	}
	if runs, err := store.ListRuns(context.Background(), audit.ListOptions{Limit: 5}); err != nil || len(runs) != 0 {
		t.Errorf("runs after probes: %v (err %v), want none", runs, err)
	}
}

// A probe the daemon cannot authenticate gets the 401 and the reason an
// event with the same fault gets.
func TestProbeRefusedLikeAnEvent(t *testing.T) {
	srv, _, _ := newProbeServer(t)
	_, err := triggers.SendProbe(context.Background(), srv.URL, []byte("the hook's other secret"), 5*time.Second, time.Now())
	var pe *triggers.ProbeError
	if !errors.As(err, &pe) || pe.Status != http.StatusUnauthorized || pe.Code != "bad_signature" {
		t.Fatalf("mis-signed probe: %v, want 401 bad_signature", err)
	}
	event := eventBody("main", "7")
	ts := time.Now().Unix()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+triggers.EventsPath, bytes.NewReader(event))
	req.Header.Set(triggers.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(triggers.HeaderSignature, triggers.Sign([]byte("the hook's other secret"), ts, event))
	status, body := doJSON(t, req)
	if status != pe.Status || body["code"] != pe.Code || body["error"] != pe.Message {
		t.Errorf("event got %d %v, probe got %d %s %q: want the same", status, body, pe.Status, pe.Code, pe.Message)
	}

	_, err = triggers.SendProbe(context.Background(), srv.URL, testSecret, 5*time.Second, time.Now().Add(-time.Hour))
	if !errors.As(err, &pe) || pe.Status != http.StatusUnauthorized || pe.Code != "stale_timestamp" {
		t.Errorf("stale probe: %v, want 401 stale_timestamp", err)
	}

	unsigned, _ := http.NewRequest(http.MethodPost, srv.URL+triggers.ProbePath, bytes.NewReader([]byte(`{"v":1}`)))
	if status, body := doJSON(t, unsigned); status != http.StatusUnauthorized || body["code"] != "missing_signature" {
		t.Errorf("unsigned probe: %d %v, want 401 missing_signature", status, body)
	}
}

// The same signed probe twice is a replay, refused like an event's.
func TestProbeReplayRefused(t *testing.T) {
	srv, _, _ := newProbeServer(t)
	body := []byte(`{"v":1,"nonce":"fixed"}`)
	ts := time.Now().Unix()
	send := func() int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+triggers.ProbePath, bytes.NewReader(body))
		req.Header.Set(triggers.HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(triggers.HeaderSignature, triggers.Sign(testSecret, ts, body))
		status, _ := doJSON(t, req)
		return status
	}
	if first, second := send(), send(); first != http.StatusOK || second != http.StatusConflict {
		t.Errorf("same probe twice: %d then %d, want 200 then 409", first, second)
	}
}
