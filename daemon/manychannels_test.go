package daemon

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/delivery"
	"github.com/aicr-dev/aicr/review"
)

// A report with problems routed to more channels than the store has
// connections reaches every one of them, and the daemon keeps answering.
// The dispatcher resolves one run per channel at once; GetRun held a
// read transaction and asked the pool for the repo's pause, so with four
// or more channels every connection was held by a GetRun waiting for
// another: deliveries, reviews and /healthz stopped for good.
func TestReportToSixChannelsIsDeliveredToAll(t *testing.T) {
	const channels = 8
	dir := t.TempDir()
	var conf strings.Builder
	names := make([]string, channels)
	for i := range names {
		names[i] = fmt.Sprintf("file%d", i)
		fmt.Fprintf(&conf, "\n[[channel]]\nname = %q\nkind = \"file\"\npath = \"%s.jsonl\"\n", names[i], names[i])
	}
	path := filepath.Join(dir, "aicr.toml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`
[daemon]
listen = "127.0.0.1:0"
data_dir = "data"
secret_env = "AICR_TEST_DAEMON_SECRET"
aicr_binary = "/bin/true"

[[repo]]
name = "main"
kind = "svn"
url = "file:///nowhere"
channels = ["%s"]
reconcile_every = "off"
%s`, strings.Join(names, `", "`), conf.String())), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// The production pool (audit's maxOpenConns), not the suites' one
	// connection: this is the deadlock as a daemon met it.
	t.Setenv(audit.EnvTestPool, "")
	store, err := audit.Open(context.Background(), filepath.Join(dir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := &pipelineFixture{cfg: cfg, store: store, now: time.Now()}
	deps := Deps{Store: store}
	parts, err := Build(cfg, deps, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); parts.Dispatcher.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// A report the size of a real one, so the resolutions overlap.
	var problems []review.Problem
	for i := range 300 {
		problems = append(problems, review.Problem{File: fmt.Sprintf("trunk/f%d.go", i), Line: 3, Severity: review.SeverityHigh, Category: "security", Message: "hard-coded credential"})
	}
	pipe := NewPipeline(cfg, deps, Stages{Fetch: fakeFetch{}, Review: fakeReview{review.Result{Problems: problems}},
		Publish: parts.Pipeline.stages.Publish})
	run := f.claim(t, "12")
	if _, err := pipe.Process(ctx, run, ProcessOptions{}); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		disp, err := store.RunDispatches(context.Background(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		sent := 0
		for _, d := range disp {
			if d.Status == delivery.StatusSent {
				sent++
			}
		}
		if len(disp) == channels && sent == channels {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("report sent to %d of %d channels in 60s: %+v", sent, channels, disp)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(dir, n+".jsonl")); err != nil || !strings.Contains(string(b), "hard-coded credential") {
			t.Errorf("channel %s: no report in its file (%v)", n, err)
		}
	}

	// And the daemon keeps serving: /healthz reads the store.
	lc := &lifecycle{store: store, current: &generation{}, opts: Options{Now: time.Now}}
	rec := httptest.NewRecorder()
	lc.healthz(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/healthz after the deliveries: %d %s", rec.Code, rec.Body)
	}
}
