package p4_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aicr-dev/aicr/internal/p4emu"
	"github.com/aicr-dev/aicr/rundir"
)

// BenchmarkFetch reports time per Fetch and p4 processes per Fetch for
// changelists of 10, 100 and 2,000 files (edits, so describe -du runs
// too). The process count must not grow with the file count.
func BenchmarkFetch(b *testing.B) {
	for _, n := range []int{10, 100, 2000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			d := p4emu.Fixture()
			add := p4emu.BigChange(0, "alice", fmt.Sprintf("//depot/main/bench%d", n), n)
			d.Submit(add)
			edit := p4emu.BigChange(0, "bob", fmt.Sprintf("//depot/main/bench%d", n), n)
			for _, f := range edit.Files {
				f.Action = "edit"
				f.Content = append(append([]byte{}, f.Content...), "/* edited */\n"...)
			}
			c := d.Submit(edit)
			e := newEmu(b, d)
			e.cfg.Charset = "none" // the info call is once per adapter, not per fetch
			a := e.adapter(b)
			e.reset()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ch, err := a.Fetch(context.Background(), fmt.Sprint(c.Num), rundir.New(b.TempDir()))
				if err != nil || len(ch.Files) != n {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(len(e.calls()))/float64(b.N), "p4-procs/op")
		})
	}
}
