package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/internal/admintest"
)

// aicr repo pause holds the repo's queued runs (audit list and queue
// status say so), --dry-run changes nothing, resume releases them.
func TestRepoPauseHoldsRunsInTheCLI(t *testing.T) {
	fx := admintest.New(t)
	if _, errOut, code := runCLI(t, "repo", "pause", "nope", "--config", fx.Config); code != 1 || !strings.Contains(errOut, `no [[repo]] named "nope"`) || !strings.Contains(errOut, "use one of: main, docs") {
		t.Fatalf("unknown repo: exit %d %s", code, errOut)
	}
	out, _, code := runCLI(t, "repo", "pause", "main", "--dry-run", "--config", fx.Config)
	if code != 0 || !strings.Contains(out, "repo main: active → paused") || !strings.Contains(out, "nothing was written") {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	if list, _, _ := runCLI(t, "audit", "list", "--config", fx.Config); strings.Contains(list, "held") {
		t.Fatalf("a dry run paused the repo:\n%s", list)
	}
	out, errOut, code := runCLI(t, "repo", "pause", "main", "--reason", "dump/load", "--config", fx.Config)
	if code != 0 || !strings.Contains(out, "applied: 1 change(s)") {
		t.Fatalf("pause: exit %d\n%s%s", code, out, errOut)
	}
	list, _, _ := runCLI(t, "audit", "list", "--config", fx.Config)
	if !strings.Contains(list, "held") || !strings.Contains(list, "repo paused (aicr repo resume main)") {
		t.Fatalf("audit list does not show the held run:\n%s", list)
	}
	out, _, _ = runCLI(t, "queue", "status", "--format", "json", "--config", fx.Config)
	var q audit.QueueStatus
	if err := json.Unmarshal([]byte(out), &q); err != nil || q.Held != 1 || len(q.PausedRepos) != 2 {
		t.Fatalf("queue status: %v\n%s", err, out)
	}
	if text, _, _ := runCLI(t, "queue", "status", "--config", fx.Config); !strings.Contains(text, "dump/load") || !strings.Contains(text, "held 1") {
		t.Fatalf("queue status text:\n%s", text)
	}
	if _, _, code := runCLI(t, "repo", "resume", "main", "--config", fx.Config); code != 0 {
		t.Fatalf("resume: exit %d", code)
	}
	if list, _, _ := runCLI(t, "audit", "list", "--config", fx.Config); strings.Contains(list, "held") {
		t.Fatalf("still held after resume:\n%s", list)
	}
	// Cancel: a running run is refused (exit 1), a queued one ends skipped.
	store, err := audit.Open(context.Background(), fx.DB)
	if err != nil {
		t.Fatal(err)
	}
	run, err := store.ClaimNext(context.Background())
	store.Close()
	if err != nil || run.ID != fx.Queued {
		t.Fatalf("claim: %v %v", run, err)
	}
	if _, errOut, code := runCLI(t, "run", "cancel", fmt.Sprint(fx.Queued), "--config", fx.Config); code != 1 || !strings.Contains(errOut, "cannot be cancelled mid-review") {
		t.Fatalf("cancel a running run: exit %d %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, "run", "cancel", "x", "--config", fx.Config); code != 2 {
		t.Fatalf("cancel with a bad id: exit %d %s", code, errOut)
	}
}
