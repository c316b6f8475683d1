package main

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// stages are the segments of one commit's way to the file channel, in
// order; each ends where the next begins.
var stages = []struct{ name, from string }{
	{"commit", "svn commit starts → revision committed (svn:date)"},
	{"hook", "svn:date → event received (events.received_at)"},
	{"queue", "received → worker starts (runs.started_at)"},
	{"fetch", "started → change fetched (change.json written)"},
	{"review", "fetched → run recorded (runs.finished_at)"},
	{"dispatch", "recorded → message written (dispatches.sent_at)"},
	{"total", "svn commit starts → message seen in the file"},
}

// runE2E is issue 14 goal 6: commit → file-channel message with the
// builtin agent and the hook `aicr install svn-hook` writes, split into
// stages from the audit timestamps.
func runE2E(args []string) error {
	fs := flag.NewFlagSet("e2e", flag.ExitOnError)
	bins := binaryFlags(fs)
	commits := fs.Int("commits", 20, "measured commits per binary (the median is reported)")
	fs.Parse(args)
	if err := bins.check(); err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "aicr-bench-e2e-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)

	// One installation per binary, commits alternating between them.
	envs := map[string]*e2eEnv{}
	for _, name := range []string{"ref", "cand"} {
		e, err := newE2EEnv(filepath.Join(root, name), bins.path(name))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer e.in.stop()
		envs[name] = e
		// A first commit warms the page cache and the daemon's lazy
		// state; it is not counted.
		if _, err := e.commit(); err != nil {
			return fmt.Errorf("%s warm-up: %w", name, err)
		}
	}
	samples := map[string][][]float64{}
	for i := 0; i < *commits; i++ {
		for _, name := range bins.order(i) {
			s, err := envs[name].commit()
			if err != nil {
				return fmt.Errorf("%s commit %d: %w", name, i+1, err)
			}
			samples[name] = append(samples[name], s)
		}
	}

	fmt.Printf("End to end: commit → file-channel message, builtin agent, hook installed (median of %d commits, ms)\n", *commits)
	fmt.Printf("%-9s %10s %10s %7s   %s\n", "stage", "reference", "candidate", "ratio", "from → to")
	for j, st := range stages {
		r, c := column(samples["ref"], j), column(samples["cand"], j)
		ratio := "-"
		if r > 0 {
			ratio = fmt.Sprintf("%.2fx", c/r)
		}
		fmt.Printf("%-9s %10.1f %10.1f %7s   %s\n", st.name, r, c, ratio, st.from)
	}
	return nil
}

func column(rows [][]float64, j int) float64 {
	xs := make([]float64, 0, len(rows))
	for _, r := range rows {
		xs = append(xs, r[j])
	}
	return median(xs)
}

type e2eEnv struct {
	in       *installation
	repo, wc string
	rev      int
}

func newE2EEnv(dir, bin string) (*e2eEnv, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	e := &e2eEnv{repo: filepath.Join(dir, "repo"), wc: filepath.Join(dir, "wc")}
	if err := run(dir, "svnadmin", "create", e.repo); err != nil {
		return nil, err
	}
	in, err := newInstallation(dir, e.repo, 2)
	if err != nil {
		return nil, err
	}
	e.in = in
	if err := run(dir, bin, "install", "svn-hook", "--repo", e.repo, "--config", in.config); err != nil {
		return nil, err
	}
	if err := run(dir, "svn", "checkout", "-q", "file://"+e.repo, e.wc); err != nil {
		return nil, err
	}
	return e, in.start(bin)
}

// commit commits one file with a planted credential, waits for its
// message in the file channel and returns the stages in milliseconds.
func (e *e2eEnv) commit() ([]float64, error) {
	e.rev++
	name := fmt.Sprintf("e2e%03d.go", e.rev)
	src := fmt.Sprintf("package e2e\n\nfunc F%d() string {\n\tpassword := \"hunter2-e2e-%06d\"\n\treturn password\n}\n", e.rev, e.rev)
	if err := os.WriteFile(filepath.Join(e.wc, name), []byte(src), 0o644); err != nil {
		return nil, err
	}
	if err := run(e.wc, "svn", "add", "-q", name); err != nil {
		return nil, err
	}
	reports := filepath.Join(e.in.dir, "reports.jsonl")
	t0 := time.Now()
	if err := run(e.wc, "svn", "commit", "-q", "-m", "change "+name, "--username", "bench"); err != nil {
		return nil, err
	}
	seen, err := waitLines(reports, e.rev, t0.Add(2*time.Minute))
	if err != nil {
		return nil, fmt.Errorf("%w; see %s", err, e.in.log)
	}
	return e.stages(e.rev, t0, seen)
}

// waitLines polls the file channel until it holds n messages.
func waitLines(path string, n int, deadline time.Time) (time.Time, error) {
	for {
		data, _ := os.ReadFile(path)
		if bytes.Count(data, []byte("\n")) >= n {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("message %d never reached %s", n, path)
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *e2eEnv) stages(rev int, t0, seen time.Time) ([]float64, error) {
	out, err := exec.CommandContext(context.Background(), "svnlook", "propget", "--revprop", "-r", strconv.Itoa(rev), e.repo, "svn:date").Output()
	if err != nil {
		return nil, fmt.Errorf("svnlook date r%d: %w", rev, err)
	}
	committed, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(out)))
	if err != nil {
		return nil, err
	}
	db, err := e.in.db()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var received, started, finished, runDir string
	var sent sql.NullString
	// The dispatch row is marked sent just after the message is written,
	// so it may lag what the file already shows.
	for deadline := time.Now().Add(30 * time.Second); !sent.Valid; time.Sleep(5 * time.Millisecond) {
		err = db.QueryRowContext(context.Background(), `SELECT e.received_at, r.started_at, r.finished_at, r.run_dir,
				(SELECT MIN(d.sent_at) FROM dispatches d WHERE d.run_id = r.id AND d.sent_at IS NOT NULL)
			FROM runs r JOIN events e ON e.id = r.event_id WHERE r.repo = 'main' AND r.revision = ?`, strconv.Itoa(rev)).
			Scan(&received, &started, &finished, &runDir, &sent)
		if err != nil {
			return nil, fmt.Errorf("audit of r%d: %w", rev, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("audit of r%d: the dispatch is not marked sent", rev)
		}
	}
	fi, err := os.Stat(filepath.Join(runDir, "change.json"))
	if err != nil {
		return nil, err
	}
	ts := []time.Time{t0, committed}
	for _, s := range []string{received, started} {
		t, err := auditTime(s)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	ts = append(ts, fi.ModTime())
	for _, s := range []string{finished, sent.String} {
		t, err := auditTime(s)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	row := make([]float64, 0, len(stages))
	for i := 1; i < len(ts); i++ {
		row = append(row, ms(ts[i].Sub(ts[i-1])))
	}
	return append(row, ms(seen.Sub(t0))), nil
}
