package daemon

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// A reload through Options.Reload applies a good file live (a new repo,
// more workers) and keeps the running config on a bad one, while
// /healthz and /metrics are served throughout (run with -race).
func TestReloadInProcess(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	other := filepath.Join(t.TempDir(), "other")
	if out, err := exec.Command("svnadmin", "create", other).CombinedOutput(); err != nil {
		t.Fatalf("svnadmin: %v %s", err, out)
	}
	reload := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		done <- Serve(ctx, Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard,
			Ready: func(a string) { ready <- a }, IdlePoll: 50 * time.Millisecond, Version: "test", Reload: reload})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("daemon did not start: %v", err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	}
	defer stop()

	health := func() Health {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h Health
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	post := func(repo, rev string) int {
		t.Helper()
		req, err := triggers.NewSignedRequest(context.Background(), "http://"+addr, testSecret,
			triggers.Event{V: 1, VCS: "svn", Repo: repo, Revision: rev}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitHealth := func(ok func(Health) bool) Health {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			h := health()
			if ok(h) {
				return h
			}
			if time.Now().After(deadline) {
				t.Fatalf("/healthz never got there: %+v", h)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// Readers during every reload.
	var readers sync.WaitGroup
	quit := make(chan struct{})
	for _, path := range []string{"/healthz", "/metrics"} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-quit:
					return
				default:
				}
				if resp, err := http.Get("http://" + addr + path); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	defer func() { close(quit); readers.Wait() }()

	first := health()
	if first.Version != "test" || first.ConfigDigest != fileDigest(cfg.Path) {
		t.Fatalf("/healthz at start: %+v", first)
	}
	if code := post("other", "1"); code != http.StatusUnprocessableEntity {
		t.Fatalf("unknown repo: HTTP %d", code)
	}
	orig, err := os.ReadFile(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	good := string(orig) + "\n[[repo]]\nname = \"other\"\nkind = \"svn\"\nlocal_path = \"" + other + "\"\nreconcile_every = \"off\"\n"
	good = strings.Replace(good, "[daemon]\n", "[daemon]\nworkers = 3\naicr_binary = \"/bin/true\"\n", 1)
	if err := os.WriteFile(cfg.Path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	reload <- struct{}{}
	h := waitHealth(func(h Health) bool { return h.ConfigDigest != first.ConfigDigest || h.LastReloadError != "" })
	if h.LastReloadError != "" || h.ConfigDigest != fileDigest(cfg.Path) {
		t.Fatalf("good reload: %+v", h)
	}
	if code := post("other", "1"); code != http.StatusAccepted {
		t.Fatalf("repo added by the reload: HTTP %d", code)
	}

	if err := os.WriteFile(cfg.Path, []byte(good+"\n[[repo]]\nname = \"other\"\nkind = \"svn\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reload <- struct{}{}
	bad := waitHealth(func(h Health) bool { return h.LastReloadError != "" })
	if bad.ConfigDigest != h.ConfigDigest {
		t.Fatalf("a refused reload changed the running config: %+v", bad)
	}
	if code := post("other", "2"); code != http.StatusAccepted {
		t.Fatalf("after a refused reload: HTTP %d", code)
	}
	stop()
}
