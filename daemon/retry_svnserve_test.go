package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/config"
)

// A real svnserve that is down when the event arrives: the run fails for
// good once the retry window is over (here at once), and when the server is
// back a later event for the same revision (the hook resending, the
// reconciler) re-queues the run instead of counting as a duplicate.
func TestFailedRunComesBackWhenServerDoes(t *testing.T) {
	requireSVN(t)
	if _, err := exec.LookPath("svnserve"); err != nil {
		t.Skip("svnserve not installed")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "svnroot")
	repos := filepath.Join(root, "repo")
	os.MkdirAll(root, 0o755)
	if out, err := exec.Command("svnadmin", "create", repos).CombinedOutput(); err != nil {
		t.Fatalf("svnadmin: %v %s", err, out)
	}
	if out, err := exec.Command("svn", "mkdir", "-q", "-m", "trunk", "file://"+repos+"/trunk").CombinedOutput(); err != nil {
		t.Fatalf("svn mkdir: %v %s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	t.Setenv("AICR_TEST_DAEMON_SECRET", string(testSecret))
	path := filepath.Join(dir, "aicr.toml")
	os.WriteFile(path, []byte(fmt.Sprintf(`
[daemon]
listen = "127.0.0.1:0"
data_dir = "data"
secret_env = "AICR_TEST_DAEMON_SECRET"
[[repo]]
name = "main"
kind = "svn"
url = "svn://127.0.0.1:%d/repo"
reconcile_every = "off"
`, port)), 0o600)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Daemon.AicrBinary = "/bin/true"
	cfg.Daemon.RetryFor = time.Nanosecond
	d := startDaemon(t, cfg)

	failedBefore := runsFailed.Value()
	d.send(t, "1")
	run := waitRun(t, cfg, func(r audit.RunSummary) bool { return r.Status.Final() })
	if run.Status != audit.RunFailed || !strings.Contains(run.Error, "fetch main r1") {
		t.Fatalf("with the server down: %+v", run)
	}
	// The final failure is counted and served with the process counters.
	resp, err := http.Get("http://" + d.addr + "/debug/vars")
	if err != nil {
		t.Fatal(err)
	}
	var vars struct {
		Failed int64 `json:"aicr_runs_failed_total"`
	}
	json.NewDecoder(resp.Body).Decode(&vars)
	resp.Body.Close()
	if vars.Failed <= failedBefore {
		t.Fatalf("aicr_runs_failed_total = %d, want more than %d", vars.Failed, failedBefore)
	}

	srv := exec.Command("svnserve", "-d", "--foreground", "-r", root, "--listen-host", "127.0.0.1", "--listen-port", fmt.Sprint(port))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	waitListening(t, fmt.Sprintf("127.0.0.1:%d", port))

	d.send(t, "1")
	run = waitRun(t, cfg, func(r audit.RunSummary) bool { return r.Attempts == 2 && r.Status.Final() })
	if strings.Contains(run.Error, "fetch main r1") {
		t.Fatalf("the re-queued run should have fetched from the server that is back: %+v", run)
	}
	s, err := audit.Open(context.Background(), config.DBPath(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, _ := s.CountRuns(context.Background(), "main", "1"); n != 1 {
		t.Fatalf("runs for r1 = %d, want the one run re-queued", n)
	}
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("svnserve not listening on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
