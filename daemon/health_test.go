package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/triggers"
)

// /healthz answers within its own deadline when the store does not: 503
// with the reason. It waited 5 s on a store whose connections were all
// held and answered with the context's error, and a probe with a shorter
// timeout of its own saw no answer at all.
func TestHealthzAnswersWithinItsDeadlineWhenTheStoreIsStuck(t *testing.T) {
	t.Setenv(audit.EnvTestPool, "1")
	ctx := context.Background()
	store, err := audit.Open(ctx, filepath.Join(t.TempDir(), "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Enqueue(ctx, triggers.Event{V: triggers.ProtocolVersion, VCS: "svn", Repo: "main", Revision: "1"}, triggers.SourceTrigger, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Hold the store's one connection: an export's snapshot, paused.
	held, release := make(chan struct{}), make(chan struct{})
	exported := make(chan error, 1)
	go func() {
		exported <- store.ExportRuns(ctx, audit.ExportOptions{}, func(audit.ExportRun) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	defer func() { close(release); <-exported }()

	lc := &lifecycle{store: store, current: &generation{}, opts: Options{Now: time.Now}}
	start := time.Now()
	rec := httptest.NewRecorder()
	lc.healthz(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/healthz", nil))
	took := time.Since(start)
	var h Health
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
		t.Fatalf("/healthz body %q: %v", rec.Body, err)
	}
	if rec.Code != http.StatusServiceUnavailable || h.Status != "unhealthy" || !strings.Contains(h.Reason, "did not answer within 2s") {
		t.Errorf("/healthz on a stuck store: %d %+v, want 503 unhealthy saying the store did not answer within 2s", rec.Code, h)
	}
	if took > 3*time.Second {
		t.Errorf("/healthz took %s, want its deadline of 2s", took)
	}
}
