package audit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/triggers"
)

// Egress events are kept per run in order, capped in size, and refused
// for a run that does not exist rather than dropped.
func TestRecordEgress(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, tempDB(t))
	enq := mustEnqueue(t, s, svnEvent("main", "1"), triggers.SourceTrigger)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.RecordEgress(ctx, enq.RunID, EgressEvent{At: at, Host: "api.example.com", Port: 443, Allowed: true, Reason: "allowlisted"}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 5000)
	if err := s.RecordEgress(ctx, enq.RunID, EgressEvent{Host: long, Port: 80, Reason: long}); err != nil {
		t.Fatal(err)
	}
	d, err := s.GetRun(ctx, enq.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Egress) != 2 || !d.Egress[0].At.Equal(at) || d.Egress[0].Host != "api.example.com" || !d.Egress[0].Allowed {
		t.Fatalf("egress: %+v", d.Egress)
	}
	if e := d.Egress[1]; e.Allowed || len(e.Host) > maxEgressText+len("…") || len(e.Reason) > maxEgressText+len("…") || e.At.IsZero() {
		t.Fatalf("long event not capped or not timed: host %d bytes, reason %d bytes, at %v", len(e.Host), len(e.Reason), e.At)
	}
	if err := s.RecordEgress(ctx, enq.RunID+99, EgressEvent{Host: "x", Port: 1}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown run: %v", err)
	}
}
