package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/sandbox/egress"
	"github.com/aicr-dev/aicr/triggers"
)

// The proxy's decisions, recorded through the store as the daemon will,
// show in audit show as text and JSON.
func TestAuditShowListsEgress(t *testing.T) {
	configPath, dataDir, _ := writeFileChannelConfig(t)
	ctx := context.Background()
	store, err := audit.Open(ctx, filepath.Join(dataDir, "aicr.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Enqueue(ctx, triggers.Event{V: 1, VCS: "svn", Repo: "main", Revision: "7", User: "alice"}, triggers.SourceTrigger, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run, err := store.ClaimNext(ctx)
	if err != nil {
		t.Fatal(err)
	}

	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	defer model.Close()
	mu, _ := url.Parse(model.URL)
	runDir, err := os.MkdirTemp("", "run")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(runDir)
	allow, err := egress.AllowlistFromURLs(model.URL + "/v1")
	if err != nil {
		t.Fatal(err)
	}
	var recErr error
	p, _, err := egress.ForRun(runDir, allow, func(e egress.Event) {
		if err := store.RecordEgress(ctx, run.ID, audit.EgressEvent(e)); err != nil {
			recErr = err
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	client := egress.HTTPClient(p.SocketPath())
	resp, err := client.Get(model.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := client.Get("https://exfil.example.net/steal"); err == nil {
		t.Fatal("non-allowlisted host reached")
	}
	p.Close()
	store.Close()
	if recErr != nil {
		t.Fatal(recErr)
	}

	f, out, _ := testFactory(t, configPath)
	if err := auditShowRun(ctx, &AuditShowOptions{Factory: f, RunID: run.ID, Format: formatText}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"egress (2, 1 refused):", "allowed " + mu.Host + " — allowlisted", "REFUSED exfil.example.net:443 — not in the egress allowlist"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("audit show does not say %q:\n%s", want, out)
		}
	}
	f, out, _ = testFactory(t, configPath)
	if err := auditShowRun(ctx, &AuditShowOptions{Factory: f, RunID: run.ID, Format: formatJSON}); err != nil {
		t.Fatal(err)
	}
	var d audit.RunDetail
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Egress) != 2 || !d.Egress[0].Allowed || d.Egress[1].Allowed || d.Egress[1].Host != "exfil.example.net" || d.Egress[1].Port != 443 {
		t.Fatalf("json egress: %+v", d.Egress)
	}
}
