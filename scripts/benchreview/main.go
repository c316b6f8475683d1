// Command benchreview drives real `aicr daemon` processes through the
// review pipeline and prints what they did as a table of medians, a
// candidate binary against a reference binary measured in the same run,
// trials alternating so machine load falls on both alike.
//
//	benchreview pipeline -ref OLD -cand NEW   # issue 14 goal 3
//	benchreview e2e      -ref OLD -cand NEW   # issue 14 goal 6
//
// scripts/bench-pipeline.sh and scripts/bench-e2e.sh build the two
// binaries and run it; it is a program rather than a test so that the
// reference can be an aicr built from another commit.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/aicr-dev/aicr/hmacsig"

	_ "modernc.org/sqlite" // the audit database, read-only
)

const secret = "bench-secret"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchreview pipeline|e2e -ref BIN -cand BIN [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "pipeline":
		err = runPipeline(os.Args[2:])
	case "e2e":
		err = runE2E(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q (pipeline or e2e)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreview:", err)
		os.Exit(1)
	}
}

// binaries are the two aicr builds compared.
type binaries struct{ ref, cand string }

func binaryFlags(fs *flag.FlagSet) *binaries {
	b := &binaries{}
	fs.StringVar(&b.ref, "ref", "", "reference aicr binary")
	fs.StringVar(&b.cand, "cand", "", "candidate aicr binary")
	return b
}

func (b *binaries) check() error {
	for _, p := range []string{b.ref, b.cand} {
		if p == "" {
			return errors.New("-ref and -cand are required")
		}
		if _, err := os.Stat(p); err != nil {
			return err
		}
	}
	return nil
}

// order alternates which binary goes first, so neither always runs on a
// machine the other just warmed or loaded.
func (b *binaries) order(trial int) []string {
	if trial%2 == 0 {
		return []string{"ref", "cand"}
	}
	return []string{"cand", "ref"}
}

func (b *binaries) path(name string) string {
	if name == "ref" {
		return b.ref
	}
	return b.cand
}

// installation is one data directory and config for a daemon.
type installation struct {
	dir, config, addr string
	daemon            *exec.Cmd
	done              chan struct{}
	log               string
}

// newInstallation writes a config for repo (an svnadmin repository) with
// a file channel, builtin agent, no sandbox and no reconciler: what is
// measured is the hook, the queue and the pipeline, nothing else.
func newInstallation(dir, repo string, workers int) (*installation, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	in := &installation{dir: dir, config: filepath.Join(dir, "aicr.toml"), addr: addr}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte(secret+"\n"), 0o600); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`[daemon]
listen = %q
data_dir = "data"
workers = %d
secret_file = "secret"

[notify]
spool_dir = "spool"

[[repo]]
name = "main"
kind = "svn"
url = "file://%s"
local_path = %q
channels = ["reports"]
reconcile_every = "off"

[[channel]]
name = "reports"
kind = "file"
path = "reports.jsonl"
`, addr, workers, repo, repo)
	return in, os.WriteFile(in.config, []byte(cfg), 0o600)
}

func (in *installation) start(bin string) error {
	in.log = filepath.Join(in.dir, "daemon.log")
	logf, err := os.Create(in.log)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(context.Background(), bin, "daemon", "--config", in.config)
	cmd.Dir = in.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	in.daemon, in.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(in.done) }()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-in.done:
			return fmt.Errorf("daemon exited at start; see %s", in.log)
		default:
		}
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+in.addr+"/healthz", nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
	}
	in.stop()
	return fmt.Errorf("daemon did not come up on %s; see %s", in.addr, in.log)
}

// stop ends the daemon and returns the CPU it and its children used.
func (in *installation) stop() time.Duration {
	if in.daemon == nil {
		return 0
	}
	in.daemon.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
	case <-time.After(30 * time.Second):
		in.daemon.Process.Kill()
		<-in.done
	}
	st := in.daemon.ProcessState
	in.daemon = nil
	if st == nil {
		return 0
	}
	// wait4's rusage counts the children the daemon reaped (svnlook, svn,
	// any server it spawned) as well as the daemon itself.
	return st.UserTime() + st.SystemTime()
}

func (in *installation) db() (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+filepath.Join(in.dir, "data", "aicr.db")+"?mode=ro&_pragma=busy_timeout(5000)")
}

// post sends one signed event for revision rev, as a hook would.
func (in *installation) post(ctx context.Context, rev int) error {
	body, _ := json.Marshal(map[string]any{"v": 1, "vcs": "svn", "repo": "main", "revision": strconv.Itoa(rev),
		"user": "bench", "sent_at": time.Now().UTC().Format(time.RFC3339Nano)})
	ts := time.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+in.addr+"/v1/events", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Aicr-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("X-Aicr-Signature", hmacsig.Sign([]byte(secret), ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("event r%d: HTTP %d", rev, resp.StatusCode)
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// auditTime parses the audit database's fixed-width UTC timestamps.
func auditTime(s string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, s)
}

func run(dir string, name string, args ...string) error {
	cmd := exec.CommandContext(context.Background(), name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %w\n%s", name, args, err, out)
	}
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
