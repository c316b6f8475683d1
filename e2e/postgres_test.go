package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/audit"
	"github.com/aicr-dev/aicr/internal/pgtest"
	"github.com/aicr-dev/aicr/internal/svntest"
)

// cluster is several daemons on one PostgreSQL database behind a TCP
// load balancer, with one svn repository whose hook posts to the balancer.
type cluster struct {
	t       *testing.T
	dir     string
	repos   string
	wc      string
	reports string
	dsn     string
	lb      *balancer
	daemons []*member
}

type member struct {
	config string
	addr   string
	log    string
	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
}

func newCluster(t *testing.T, n, workers int) *cluster {
	t.Helper()
	svntest.Require(t)
	srv := pgtest.Start(t)
	dir := t.TempDir()
	c := &cluster{t: t, dir: dir, repos: filepath.Join(dir, "repos", "main"), wc: filepath.Join(dir, "wc"),
		reports: filepath.Join(dir, "reports.jsonl"), dsn: srv.NewDatabase(t)}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("cluster-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c.daemons = append(c.daemons, &member{addr: freeAddr(t), config: filepath.Join(dir, fmt.Sprintf("aicr-%d.toml", i))})
	}
	c.lb = newBalancer(t, c.daemons)
	for i, m := range c.daemons {
		// Every daemon has its own listen address and data_dir (run
		// directories, the data_dir lock) and shares the database, the
		// spool (the hook's, drained by one daemon at a time) and the
		// channel.
		cfg := fmt.Sprintf(`
[daemon]
listen = %q
data_dir = "data-%d"
workers = %d
secret_file = "secret"
spool_drain_every = "@every 1s"

[notify]
url = "http://%s"
spool_dir = "spool"
timeout = "2s"

[store]
kind = "postgres"
dsn_env = "AICR_CLUSTER_DSN"

[dispatch]
timeout = "1s"

[[repo]]
name = "main"
kind = "svn"
url = "file://%s"
local_path = %q
channels = ["reports"]
reconcile_every = "@every 5s"

[[channel]]
name = "reports"
kind = "file"
path = "reports.jsonl"
`, m.addr, i, workers, c.lb.addr, c.repos, c.repos)
		if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Dir(c.repos), 0o755)
	svntest.Run(t, dir, "svnadmin", "create", c.repos)
	cmd := exec.Command(aicrBin, "install", "svn-hook", "--repo", c.repos, "--config", c.daemons[0].config)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "installed") {
		t.Fatalf("install svn-hook: %v\n%s", err, out)
	}
	svntest.Run(t, dir, "svn", "checkout", "-q", "file://"+c.repos, c.wc)
	t.Cleanup(func() {
		for _, m := range c.daemons {
			c.stop(m)
		}
	})
	return c
}

func (c *cluster) start(m *member) {
	c.t.Helper()
	if err := c.tryStart(m); err != nil {
		c.t.Fatal(err)
	}
}

// tryStart starts m and waits until it answers; it is safe to call from
// a goroutine other than the test's.
func (c *cluster) tryStart(m *member) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = filepath.Join(c.dir, fmt.Sprintf("daemon-%s-%d.log", strings.ReplaceAll(m.addr, ":", "_"), time.Now().UnixNano()))
	logf, err := os.Create(m.log)
	if err != nil {
		return err
	}
	cmd := exec.Command(aicrBin, "daemon", "--config", m.config)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "AICR_CLUSTER_DSN="+c.dsn)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	m.cmd, m.done = cmd, done
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	for {
		select {
		case <-done:
			log, _ := os.ReadFile(m.log)
			m.cmd = nil
			return fmt.Errorf("daemon %s exited at start:\n%s", m.addr, log)
		default:
		}
		resp, err := http.Get("http://" + m.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cluster) kill(m *member) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		m.cmd.Process.Signal(syscall.SIGKILL)
		<-m.done
		m.cmd = nil
	}
}

func (c *cluster) stop(m *member) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(15 * time.Second):
			m.cmd.Process.Kill()
			<-m.done
		}
		m.cmd = nil
	}
}

func (c *cluster) commit(i int) {
	c.t.Helper()
	p := filepath.Join(c.wc, fmt.Sprintf("f%03d.txt", i))
	if err := os.WriteFile(p, []byte(fmt.Sprintf("token = \"tok-%d-abcdefgh\"\n", i)), 0o644); err != nil {
		c.t.Fatal(err)
	}
	svntest.Run(c.t, c.wc, "svn", "add", "-q", p)
	svntest.Run(c.t, c.wc, "svn", "commit", "-q", "-m", fmt.Sprintf("commit %d", i), "--username", "alice")
}

// balancer forwards each connection to the next daemon that accepts it,
// as a TCP load balancer with health checks would.
type balancer struct {
	addr    string
	ln      net.Listener
	members []*member
	next    atomic.Int64
}

func newBalancer(t *testing.T, members []*member) *balancer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{addr: ln.Addr().String(), ln: ln, members: members}
	t.Cleanup(func() { ln.Close() })
	go b.serve()
	return b
}

func (b *balancer) serve() {
	for {
		conn, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.forward(conn)
	}
}

func (b *balancer) forward(conn net.Conn) {
	defer conn.Close()
	for range len(b.members) {
		m := b.members[int(b.next.Add(1))%len(b.members)]
		up, err := net.Dial("tcp", m.addr)
		if err != nil {
			continue
		}
		defer up.Close()
		go func() { io.Copy(up, conn); up.(*net.TCPConn).CloseWrite() }()
		io.Copy(conn, up)
		return
	}
}

// Three daemons on one database take 300 commits while one of them is
// SIGKILLed every few seconds and started again: every revision gets
// exactly one run, reviewed to the end, and exactly one report line.
func TestClusterOfThreeDaemonsSurvivesKills(t *testing.T) {
	commits := 300
	if v := os.Getenv("AICR_CLUSTER_COMMITS"); v != "" {
		commits, _ = strconv.Atoi(v)
	}
	c := newCluster(t, 3, 2)
	for _, m := range c.daemons {
		c.start(m)
	}
	ctx := context.Background()
	store, err := audit.OpenPostgresReadOnly(ctx, c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	stopKiller := make(chan struct{})
	killerDone := make(chan struct{})
	var kills atomic.Int32
	go func() {
		defer close(killerDone)
		for {
			select {
			case <-stopKiller:
				return
			case <-time.After(time.Duration(2000+rand.IntN(2000)) * time.Millisecond):
			}
			m := c.daemons[rand.IntN(len(c.daemons))]
			c.kill(m)
			kills.Add(1)
			time.Sleep(300 * time.Millisecond)
			if err := c.tryStart(m); err != nil {
				t.Error(err)
				return
			}
		}
	}()

	for i := 1; i <= commits; i++ {
		c.commit(i)
	}
	// Wait for every revision's run to finish and its report to land.
	deadline := time.Now().Add(15 * time.Minute)
	for {
		runs, err := store.ListRuns(ctx, audit.ListOptions{Limit: 10 * commits})
		if err != nil {
			t.Fatal(err)
		}
		finished := 0
		for _, r := range runs {
			if r.Status.Final() {
				finished++
			}
		}
		reported := map[string]bool{}
		for _, l := range reportLinesOf(t, c.reports) {
			reported[l.Revision] = true
		}
		if finished >= commits && len(reported) >= commits {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the deadline: %d of %d runs finished, %d revisions reported (%d kills)", finished, commits, len(reported), kills.Load())
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stopKiller)
	<-killerDone
	// Stopped cleanly, nothing is in flight: what is in the file and the
	// database now is final.
	for _, m := range c.daemons {
		c.stop(m)
	}
	t.Logf("%d commits, %d SIGKILLs", commits, kills.Load())
	if kills.Load() == 0 {
		t.Fatal("no daemon was killed; the test proved nothing about failover")
	}

	runs, err := store.ListRuns(ctx, audit.ListOptions{Limit: 10 * commits})
	if err != nil {
		t.Fatal(err)
	}
	perRev := map[string]int{}
	resumed := 0
	for _, r := range runs {
		perRev[r.Revision]++
		if r.Status != audit.RunSucceeded {
			t.Errorf("run %d r%s: %s %s", r.ID, r.Revision, r.Status, r.Error)
		}
		if r.Attempts > 1 {
			resumed++
		}
	}
	t.Logf("%d runs resumed after a kill", resumed)
	lines := reportLinesOf(t, c.reports)
	perReport := map[string]int{}
	for _, l := range lines {
		perReport[l.Revision]++
	}
	for i := 1; i <= commits; i++ {
		rev := strconv.Itoa(i)
		if perRev[rev] != 1 {
			t.Errorf("revision %s has %d runs, want exactly 1", rev, perRev[rev])
		}
		if perReport[rev] != 1 {
			t.Errorf("revision %s was delivered %d times, want exactly 1", rev, perReport[rev])
		}
	}
}

func reportLinesOf(t *testing.T, path string) []reportLine {
	e := &env{t: t, reports: path}
	return e.reportLines()
}

// TestBenchPostgresReviewsPerMinute is `make bench-postgres`'s review
// half: N one-file revisions are spooled by the hook while no daemon runs,
// then 1, 2 and 3 daemons (2 workers each, builtin agent) on one database
// review them; it prints reviews per minute and the ratio to one daemon.
// Only with AICR_BENCH_POSTGRES=1.
func TestBenchPostgresReviewsPerMinute(t *testing.T) {
	if os.Getenv("AICR_BENCH_POSTGRES") != "1" {
		t.Skip("a benchmark: set AICR_BENCH_POSTGRES=1 (make bench-postgres)")
	}
	commits := 120
	if v := os.Getenv("AICR_BENCH_COMMITS"); v != "" {
		commits, _ = strconv.Atoi(v)
	}
	ctx := context.Background()
	var base float64
	for n := 1; n <= 3; n++ {
		c := newCluster(t, n, 2)
		for i := 1; i <= commits; i++ {
			c.commit(i)
		}
		store, err := audit.OpenPostgres(ctx, c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for _, m := range c.daemons {
			c.start(m)
		}
		for {
			runs, err := store.ListRuns(ctx, audit.ListOptions{Limit: 10 * commits, Status: audit.RunSucceeded})
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) >= commits {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		perMin := float64(commits) / time.Since(start).Minutes()
		if n == 1 {
			base = perMin
		}
		fmt.Printf("daemons=%d workers=2 reviews=%d reviews/min=%.0f ratio_to_1=%.2f\n", n, commits, perMin, perMin/base)
		for _, m := range c.daemons {
			c.stop(m)
		}
		store.Close()
	}
}
