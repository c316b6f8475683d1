package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/triggers"
)

// hookServer is a webhook receiver answering with a fixed status.
type hookServer struct {
	mu     sync.Mutex
	status int
	keys   []string
}

func (h *hookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keys = append(h.keys, r.Header.Get("Idempotency-Key"))
	w.WriteHeader(h.status)
	fmt.Fprintf(w, `{"answer":%d}`, h.status)
}

func writeCLIConfig(t *testing.T, hookURL string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AICR_CLI_TEST_HOOK", hookURL)
	t.Setenv("AICR_CLI_TEST_SECRET", "s")
	cfg := `[daemon]
data_dir = "data"
secret_env = "AICR_CLI_TEST_SECRET"

[[repo]]
name = "main"
kind = "svn"
url = "file:///nonexistent"
channels = ["hook"]

[[channel]]
name = "hook"
kind = "webhook"
url_env = "AICR_CLI_TEST_HOOK"
`
	path := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), args, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), code
}

func TestChannelTestPrintsThePlatformsAnswer(t *testing.T) {
	h := &hookServer{status: http.StatusOK}
	srv := httptest.NewServer(h)
	defer srv.Close()
	cfg := writeCLIConfig(t, srv.URL+"/x")
	out, _, code := runCLI(t, "channel", "test", "hook", "--config", cfg)
	if code != 0 || !strings.Contains(out, "channel hook (webhook): sent") || !strings.Contains(out, `response: {"answer":200}`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	h.status = http.StatusForbidden
	out, _, code = runCLI(t, "channel", "test", "hook", "--config", cfg)
	if code != 1 || !strings.Contains(out, "reason: auth (permanent)") || !strings.Contains(out, "status: 403") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, errOut, code := runCLI(t, "channel", "test", "nope", "--config", cfg); code != 2 || !strings.Contains(errOut, `no [[channel]] named "nope"`) {
		t.Fatalf("unknown channel: exit %d %s", code, errOut)
	}
}

const longDispatchError = "gave up after 6 attempts: POST https://hooks.example.com/x: 503 Service Unavailable: upstream connect error or disconnect/reset before headers, reset reason: overflow"

func TestDispatchListAndRetry(t *testing.T) {
	h := &hookServer{status: http.StatusOK}
	srv := httptest.NewServer(h)
	defer srv.Close()
	cfg := writeCLIConfig(t, srv.URL+"/x")
	ctx := context.Background()

	// A run whose delivery died.
	store, err := audit.Open(ctx, filepath.Join(filepath.Dir(cfg), "data", "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "5", User: "alice"}, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run, _ := store.ClaimNext(ctx)
	if err := store.FinishRun(ctx, run.ID, audit.Outcome{Status: audit.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	d, _ := store.PlanDispatch(ctx, run.ID, "hook", delivery.PurposeReport, delivery.StatusPending, "", nil)
	claim, err := store.ClaimDispatch(ctx, d.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.FinishAttempt(ctx, claim, delivery.AttemptResult{Status: delivery.StatusDead, Reason: "server", StatusCode: 503, Error: longDispatchError}); err != nil {
		t.Fatal(err)
	}
	store.Close()

	// The text listing prints the reason whole: its useful end (what the
	// platform said) comes last.
	if out, _, code := runCLI(t, "dispatch", "list", "--status", "dead", "--config", cfg); code != 0 || !strings.Contains(out, longDispatchError) {
		t.Fatalf("list text does not show the whole reason %q: exit %d\n%s", longDispatchError, code, out)
	}

	out, _, code := runCLI(t, "dispatch", "list", "--status", "dead", "--format", "json", "--config", cfg)
	var views []dispatchView
	if code != 0 || json.Unmarshal([]byte(out), &views) != nil || len(views) != 1 || views[0].ID != d.ID || len(views[0].AttemptLog) != 1 || views[0].AttemptLog[0].StatusCode != 503 {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "dispatch", "retry", fmt.Sprint(d.ID), "--config", cfg)
	if code != 0 || !strings.Contains(out, ": sent") {
		t.Fatalf("retry: exit %d\n%s", code, out)
	}
	if len(h.keys) != 1 || h.keys[0] != fmt.Sprintf("aicr-%d-hook", run.ID) {
		t.Fatalf("receiver got %v", h.keys)
	}
	out, _, _ = runCLI(t, "dispatch", "list", "--config", cfg)
	if !strings.Contains(out, "sent") || !strings.Contains(out, "CHANNEL") {
		t.Fatalf("list text:\n%s", out)
	}
	_, errOut, code := runCLI(t, "dispatch", "retry", fmt.Sprint(d.ID), "--config", cfg)
	if code != 1 || !strings.Contains(errOut, "only failed, dead or unknown") {
		t.Fatalf("retry of a sent dispatch: exit %d %s", code, errOut)
	}
	if _, _, code := runCLI(t, "dispatch", "list", "--status", "bogus", "--config", cfg); code != 2 {
		t.Fatalf("bad status: exit %d", code)
	}
}
