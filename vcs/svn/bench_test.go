package svn

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/aicr-dev/aicr/rundir"
)

// BenchmarkFetch fetches the 10, 100 and 1,000-file revisions through the
// svn client (url, file://) and through svnlook (local_path), reporting
// child processes per fetch: "meta-procs" (log/changed, diff, info) must
// stay flat while "cat-procs" grows with the files.
func BenchmarkFetch(b *testing.B) {
	for _, m := range []accessMode{modes()[0], modes()[2]} {
		label := map[string]string{"file": "url", "svnlook": "local_path"}[m.name]
		for _, n := range []struct {
			files int
			rev   func() int64
		}{{10, func() int64 { return fx.rTen }}, {100, func() int64 { return fx.rHundred }}, {1000, func() int64 { return fx.rThousand }}} {
			b.Run(fmt.Sprintf("%s/%d", label, n.files), func(b *testing.B) {
				a := newModeAdapter(b, m, nil)
				rev := strconv.FormatInt(n.rev(), 10)
				a.ResetProcessCounts()
				for i := 0; i < b.N; i++ {
					if _, err := a.Fetch(context.Background(), rev, rundir.New(b.TempDir())); err != nil {
						b.Fatal(err)
					}
				}
				meta, cats := 0, 0
				for name, c := range a.ProcessCounts() {
					if name == "svn cat" || name == "svnlook cat" {
						cats += c
					} else {
						meta += c
					}
				}
				b.ReportMetric(float64(meta)/float64(b.N), "meta-procs/op")
				b.ReportMetric(float64(cats)/float64(b.N), "cat-procs/op")
			})
		}
	}
}

// BenchmarkFetchHuge fetches the revision that adds the 50 MB text file,
// whole (diff, content, diff.patch section), in a child process, and
// reports that process's peak RSS and its child processes: "meta-procs"
// stays as flat as for any revision.
func BenchmarkFetchHuge(b *testing.B) {
	for _, m := range []accessMode{modes()[0], modes()[2]} {
		label := map[string]string{"file": "url", "svnlook": "local_path"}[m.name]
		b.Run(label, func(b *testing.B) {
			cfg := m.cfg()
			cfg.MaxFileBytes = hugeBytes + 1
			cfg.ConfigDir = fx.configDir
			var rss int64
			meta, cats := 0, 0
			for i := 0; i < b.N; i++ {
				res := fetchInChild(b, cfg, fx.rHuge, b.TempDir(), false)
				rss = max(rss, res.rss)
				for name, c := range res.procs {
					if name == "svn cat" || name == "svnlook cat" {
						cats += c
					} else {
						meta += c
					}
				}
			}
			b.ReportMetric(float64(rss)/(1<<20), "peak-MiB")
			b.ReportMetric(float64(meta)/float64(b.N), "meta-procs/op")
			b.ReportMetric(float64(cats)/float64(b.N), "cat-procs/op")
		})
	}
}
