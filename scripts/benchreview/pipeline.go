package main

import (
	"bufio"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// runPipeline is issue 14 goal 3: reviews per minute for revs queued
// 1-file SVN revisions, builtin agent, workers = 2.
func runPipeline(args []string) error {
	fs := flag.NewFlagSet("pipeline", flag.ExitOnError)
	bins := binaryFlags(fs)
	revs := fs.Int("revs", 500, "queued 1-file revisions per trial")
	trials := fs.Int("trials", 3, "trials per binary (the median is reported)")
	workers := fs.Int("workers", 2, "[daemon] workers")
	fs.Parse(args)
	if err := bins.check(); err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "aicr-bench-pipeline-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	repo := filepath.Join(root, "repo")
	if err := makeRepo(repo, *revs); err != nil {
		return err
	}

	perMin := map[string][]float64{}
	cpu := map[string][]float64{}
	for trial := 0; trial < *trials; trial++ {
		for _, name := range bins.order(trial) {
			dir := filepath.Join(root, fmt.Sprintf("%s-%d", name, trial))
			if err := os.Mkdir(dir, 0o755); err != nil {
				return err
			}
			r, c, err := pipelineTrial(bins.path(name), dir, repo, *revs, *workers)
			if err != nil {
				return fmt.Errorf("%s trial %d: %w", name, trial+1, err)
			}
			fmt.Fprintf(os.Stderr, "trial %d %-4s %7.0f reviews/min  %6.1f ms CPU/review\n", trial+1, name, r, c)
			perMin[name] = append(perMin[name], r)
			cpu[name] = append(cpu[name], c)
			os.RemoveAll(dir)
		}
	}

	ref, cand := median(perMin["ref"]), median(perMin["cand"])
	refCPU, candCPU := median(cpu["ref"]), median(cpu["cand"])
	fmt.Printf("Pipeline: %d queued 1-file SVN revisions, builtin agent, workers = %d (median of %d)\n", *revs, *workers, *trials)
	fmt.Printf("%-10s %14s %18s\n", "", "reviews/min", "CPU ms/review")
	fmt.Printf("%-10s %14.0f %18.1f\n", "reference", ref, refCPU)
	fmt.Printf("%-10s %14.0f %18.1f\n", "candidate", cand, candCPU)
	fmt.Printf("%-10s %13.2fx %17.2fx   (goal: reviews/min >= 2.00x)\n", "ratio", cand/ref, candCPU/refCPU)
	return nil
}

// pipelineTrial queues revs events at a fresh daemon and waits until
// every run is final. The rate is taken from the audit trail, first
// start to last finish, so the time the events took to arrive does not
// count; CPU is the daemon's and its children's over the whole trial.
func pipelineTrial(bin, dir, repo string, revs, workers int) (perMin, cpuPerReview float64, err error) {
	in, err := newInstallation(dir, repo, workers)
	if err != nil {
		return 0, 0, err
	}
	if err := in.start(bin); err != nil {
		return 0, 0, err
	}
	defer in.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	var wg sync.WaitGroup
	errs := make(chan error, revs)
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rev := range next {
				if err := in.post(ctx, rev); err != nil {
					errs <- err
				}
			}
		}()
	}
	for rev := 1; rev <= revs; rev++ {
		next <- rev
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, err
	}

	db, err := in.db()
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	for {
		var final, failed int
		err := db.QueryRowContext(ctx, `SELECT
			COUNT(*) FILTER (WHERE status IN ('succeeded', 'skipped', 'failed')),
			COUNT(*) FILTER (WHERE status = 'failed') FROM runs`).Scan(&final, &failed)
		if err != nil && !strings.Contains(err.Error(), "no such table") {
			return 0, 0, err
		}
		if failed > 0 {
			var msg string
			db.QueryRowContext(ctx, `SELECT error FROM runs WHERE status = 'failed' LIMIT 1`).Scan(&msg)
			return 0, 0, fmt.Errorf("%d runs failed, e.g.: %s", failed, msg)
		}
		if final >= revs {
			break
		}
		if ctx.Err() != nil {
			return 0, 0, fmt.Errorf("only %d of %d runs finished; see %s", final, revs, in.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	first, last, err := runSpan(ctx, db)
	if err != nil {
		return 0, 0, err
	}
	used := in.stop()
	return float64(revs) / last.Sub(first).Minutes(), ms(used) / float64(revs), nil
}

func runSpan(ctx context.Context, db *sql.DB) (first, last time.Time, err error) {
	var a, b string
	if err := db.QueryRowContext(ctx, `SELECT MIN(started_at), MAX(finished_at) FROM runs`).Scan(&a, &b); err != nil {
		return first, last, err
	}
	if first, err = auditTime(a); err != nil {
		return first, last, err
	}
	last, err = auditTime(b)
	return first, last, err
}

// makeRepo loads revs revisions into a new repository, each adding one
// small Go file; every tenth plants a credential so some reviews find a
// problem and publish it. A dump stream loads in a second where revs
// `svn commit`s would take minutes.
func makeRepo(repo string, revs int) error {
	if err := run("", "svnadmin", "create", repo); err != nil {
		return err
	}
	dump := repo + ".dump"
	f, err := os.Create(dump)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprint(w, "SVN-fs-dump-format-version: 2\n\n")
	date := time.Now().UTC().Add(-time.Hour)
	for rev := 1; rev <= revs; rev++ {
		revProps := props("svn:author", "bench", "svn:date", date.Add(time.Duration(rev)*time.Second).Format("2006-01-02T15:04:05.000000Z"),
			"svn:log", fmt.Sprintf("change %d", rev))
		fmt.Fprintf(w, "Revision-number: %d\nProp-content-length: %d\nContent-length: %d\n\n%s\n", rev, len(revProps), len(revProps), revProps)
		if rev == 1 {
			empty := props()
			fmt.Fprintf(w, "Node-path: src\nNode-kind: dir\nNode-action: add\nProp-content-length: %d\nContent-length: %d\n\n%s\n\n", len(empty), len(empty), empty)
		}
		text := sourceFile(rev)
		empty := props()
		fmt.Fprintf(w, "Node-path: src/file%04d.go\nNode-kind: file\nNode-action: add\nProp-content-length: %d\nText-content-length: %d\nContent-length: %d\n\n%s%s\n\n",
			rev, len(empty), len(text), len(empty)+len(text), empty, text)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return run("", "sh", "-c", `svnadmin load -q "$1" < "$2"`, "sh", repo, dump)
}

func props(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, "K %d\n%s\nV %d\n%s\n", len(kv[i]), kv[i], len(kv[i+1]), kv[i+1])
	}
	b.WriteString("PROPS-END\n")
	return b.String()
}

func sourceFile(rev int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package bench\n\n// F%d is change %d.\nfunc F%d(x int) int {\n", rev, rev, rev)
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "\tx = x*%d + %d\n", i+3, rev)
	}
	if rev%10 == 0 {
		fmt.Fprintf(&b, "\tpassword := \"hunter2-bench-%06d\"\n\t_ = password\n", rev)
	}
	b.WriteString("\treturn x\n}\n")
	return b.String()
}
