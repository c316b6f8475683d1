package svn

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/aicr-dev/aicr/rundir"
)

// benchModes are the access modes the benchmarks compare: the svn client
// over file:// ("url") and svnlook on the repository ("local_path").
func benchModes() []accessMode { return []accessMode{modes()[0], modes()[2]} }

func benchLabel(m accessMode) string {
	return map[string]string{"file": "url", "svnlook": "local_path"}[m.name]
}

// benchWays are the ways of reading a revision's files: one dump per
// revision (svnadmin dump or svnrdump dump plus one batched svn cat), and
// the reference, one cat per file, which the adapter falls back to when
// svnadmin or svnrdump is not installed.
var benchWays = []struct {
	name string
	set  func(*Config)
}{
	{"dump", func(*Config) {}},
	{"per-file", func(c *Config) { c.SvnadminPath, c.SvnrdumpPath = "/nonexistent/svnadmin", "/nonexistent/svnrdump" }},
}

// BenchmarkFetch fetches the 10, 100 and 1,000-file revisions and the
// 10-line edit of the 50 MB file (default caps: too large) in each access
// mode, both ways, alternating, reporting child processes per fetch:
// "meta-procs" (metadata, dump, diff) and "cat-procs" (contents).
func BenchmarkFetch(b *testing.B) {
	for _, m := range benchModes() {
		for _, n := range []struct {
			name string
			rev  func() int64
		}{{"10", func() int64 { return fx.rTen }}, {"100", func() int64 { return fx.rHundred }},
			{"1000", func() int64 { return fx.rThousand }}, {"edit50MB", func() int64 { return fx.rHugeEdit }}} {
			for _, way := range benchWays {
				b.Run(fmt.Sprintf("%s/%s/%s", benchLabel(m), n.name, way.name), func(b *testing.B) {
					a := newModeAdapter(b, m, way.set)
					rev := strconv.FormatInt(n.rev(), 10)
					a.ResetProcessCounts()
					for i := 0; i < b.N; i++ {
						if _, err := a.Fetch(context.Background(), rev, rundir.New(b.TempDir())); err != nil {
							b.Fatal(err)
						}
					}
					meta, cats := splitCounts(a.ProcessCounts())
					b.ReportMetric(float64(meta)/float64(b.N), "meta-procs/op")
					b.ReportMetric(float64(cats)/float64(b.N), "cat-procs/op")
				})
			}
		}
	}
}

func splitCounts(counts map[string]int) (meta, cats int) {
	for name, c := range counts {
		if name == "svn cat" || name == "svnlook cat" {
			cats += c
		} else {
			meta += c
		}
	}
	return meta, cats
}

// BenchmarkFetchHuge fetches the revision that adds the 50 MB text file,
// whole (diff, content, diff.patch section), in a child process, and
// reports that process's peak RSS and its child processes.
func BenchmarkFetchHuge(b *testing.B) {
	for _, m := range benchModes() {
		b.Run(benchLabel(m), func(b *testing.B) {
			cfg := m.cfg()
			cfg.MaxFileBytes = hugeBytes + 1
			cfg.ConfigDir = fx.configDir
			benchInChild(b, cfg, fx.rHuge)
		})
	}
}

// gigFiles × gigFileBytes is the revision BenchmarkFetchGigabyte fetches.
const (
	gigFiles     = 64
	gigFileBytes = 16 << 20
)

var gigRepo struct {
	once sync.Once
	dir  string
	err  error
}

// BenchmarkFetchGigabyte fetches a revision adding 1 GiB of text files
// (64 of 16 MiB), every one of them reviewed (caps raised), in a child
// process: the peak RSS of the fetch and of the svn processes it ran,
// which streaming keeps independent of the revision's size. The
// repository is built once per run, with svnadmin load.
func BenchmarkFetchGigabyte(b *testing.B) {
	gigRepo.once.Do(func() {
		gigRepo.dir = filepath.Join(filepath.Dir(fx.repo), "gig")
		gigRepo.err = loadGigabyte(gigRepo.dir)
	})
	if gigRepo.err != nil {
		b.Fatal(gigRepo.err)
	}
	for _, m := range benchModes() {
		b.Run(benchLabel(m), func(b *testing.B) {
			cfg := Config{URL: "file://" + filepath.ToSlash(gigRepo.dir) + "/trunk", ConfigDir: fx.configDir}
			if m.name == "svnlook" {
				cfg.LocalPath = gigRepo.dir
			}
			cfg.MaxFileBytes = gigFileBytes
			cfg.MaxReviewBytes = gigFiles * gigFileBytes
			cfg.MaxFiles = gigFiles
			benchInChild(b, cfg, 2)
		})
	}
}

func benchInChild(b *testing.B, cfg Config, rev int64) {
	var rss int64
	meta, cats := 0, 0
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		res := fetchInChild(b, cfg, rev, dir, false)
		rss = max(rss, res.rss)
		m, c := splitCounts(res.procs)
		meta, cats = meta+m, cats+c
		os.RemoveAll(dir) // a gigabyte per iteration otherwise
	}
	b.ReportMetric(float64(rss)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(meta)/float64(b.N), "meta-procs/op")
	b.ReportMetric(float64(cats)/float64(b.N), "cat-procs/op")
}

// loadGigabyte creates a repository whose r1 makes trunk and r2 adds
// gigFiles text files of gigFileBytes each.
func loadGigabyte(repo string) error {
	if out, err := exec.Command("svnadmin", "create", repo).CombinedOutput(); err != nil {
		return fmt.Errorf("svnadmin create: %w: %s", err, out)
	}
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, 1<<20)
		props := "K 10\nsvn:author\nV 5\nalice\nK 7\nsvn:log\nV 2\nGB\nPROPS-END\n"
		rev := func(n int) {
			fmt.Fprintf(bw, "Revision-number: %d\nProp-content-length: %d\nContent-length: %d\n\n%s\n", n, len(props), len(props), props)
		}
		fmt.Fprintf(bw, "SVN-fs-dump-format-version: 2\n\n")
		rev(1)
		fmt.Fprintf(bw, "Node-path: trunk\nNode-kind: dir\nNode-action: add\n\n")
		rev(2)
		line := []byte("0000000 the quick brown fox jumps over the lazy dog\n")
		for f := 0; f < gigFiles; f++ {
			fmt.Fprintf(bw, "Node-path: trunk/g%02d.txt\nNode-kind: file\nNode-action: add\nText-content-length: %d\nContent-length: %d\n\n",
				f, gigFileBytes, gigFileBytes)
			for i, n := 0, 0; n < gigFileBytes; i++ {
				copy(line, fmt.Sprintf("%07d", i))
				k := min(len(line), gigFileBytes-n)
				if k < len(line) {
					line[k-1] = '\n'
				}
				bw.Write(line[:k])
				n += k
			}
			bw.WriteString("\n\n")
		}
		pw.CloseWithError(bw.Flush())
	}()
	cmd := exec.Command("svnadmin", "load", "-q", repo)
	cmd.Stdin = pr
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	pr.Close()
	if err != nil {
		return fmt.Errorf("svnadmin load: %w: %s", err, stderr.String())
	}
	return nil
}
