package daemon

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/triggers"
)

// A paused repo's events are accepted and queued while the daemon keeps
// reviewing other repos; a resume from another process (the CLI's store)
// releases the held run to the running daemon.
func TestPausedRepoHeldByRunningDaemonUntilResumed(t *testing.T) {
	cfg, _ := newSVNConfig(t)
	cfg.Daemon.MissingRevisionGrace = time.Nanosecond
	docs := filepath.Join(t.TempDir(), "docs")
	if out, err := exec.Command("svnadmin", "create", docs).CombinedOutput(); err != nil {
		t.Fatalf("svnadmin: %v %s", err, out)
	}
	extra := fmt.Sprintf("\n[[repo]]\nname = \"docs\"\nkind = \"svn\"\nlocal_path = %q\nreconcile_every = \"off\"\n", docs)
	raw, err := os.ReadFile(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Path, append(raw, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = config.Load(cfg.Path); err != nil {
		t.Fatal(err)
	}
	cfg.Daemon.MissingRevisionGrace = time.Nanosecond
	cfg.Daemon.AicrBinary = "/bin/true"

	ctx := context.Background()
	cli, err := audit.Open(ctx, config.DBPath(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, _, err := cli.PauseRepo(ctx, "main", "alice", "maintenance"); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, cfg)
	d.send(t, "42") // main: held
	send := func(repo, rev string) {
		ev := triggers.Event{V: 1, VCS: "svn", Repo: repo, Revision: rev}
		req, err := triggers.NewSignedRequest(ctx, "http://"+d.addr, testSecret, ev, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("event %s r%s: HTTP %d", repo, rev, resp.StatusCode)
		}
	}
	send("docs", "7")
	runOf := func(repo string) audit.RunSummary {
		t.Helper()
		runs, err := cli.ListRuns(ctx, audit.ListOptions{Repo: repo})
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs of %s: %+v %v", repo, runs, err)
		}
		return runs[0]
	}
	waitFor := func(repo string) audit.RunSummary {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if r := runOf(repo); r.Status.Final() {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("run of %s never finished: %+v", repo, runOf(repo))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// docs was queued after main and is done: had main been claimable, a
	// worker would have taken it first (claims go in queue order).
	waitFor("docs")
	if held := runOf("main"); held.Status != audit.RunQueued || held.Attempts != 0 || !held.RepoPaused {
		t.Fatalf("the paused repo's run was not held: %+v", held)
	}
	if _, err := cli.ResumeRepo(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if r := waitFor("main"); r.Attempts != 1 || !strings.Contains(r.Error, "no such revision") {
		t.Fatalf("after resume: %+v", r)
	}
}
