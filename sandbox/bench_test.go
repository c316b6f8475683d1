package sandbox_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aicr-dev/aicr/sandbox"
)

// BenchmarkPodmanRun is the sandbox's start-to-exit overhead: a trivial
// run in Podman against the same run with the none runner, alternated so
// both see the same machine load. Reports medians and their ratio.
func BenchmarkPodmanRun(b *testing.B) {
	bin, cfg := probeSetup(b)
	native := sandbox.Config{Kind: "none"}
	native.ApplyDefaults(0)
	pr, _ := sandbox.New(cfg)
	nr, _ := sandbox.New(native)
	var podman, none []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := spec(b, bin, 2000+int64(i), "write", "/workspace/agent/state.json", "{}")
		t0 := time.Now()
		if res, err := pr.Run(context.Background(), s); err != nil || res.ExitCode != 0 {
			b.Fatalf("podman: %+v %v", res, err)
		}
		podman = append(podman, time.Since(t0))
		n := spec(b, bin, 0, "write", "state.json", "{}")
		n.Args[0] = bin
		t0 = time.Now()
		if res, err := nr.Run(context.Background(), n); err != nil || res.ExitCode != 0 {
			b.Fatalf("none: %+v %v", res, err)
		}
		none = append(none, time.Since(t0))
	}
	b.StopTimer()
	mp, mn := median(podman), median(none)
	b.ReportMetric(float64(mp.Milliseconds()), "podman-ms")
	b.ReportMetric(float64(mn.Microseconds())/1000, "none-ms")
	b.ReportMetric(float64(mp)/float64(mn), "ratio")
	b.ReportMetric(float64((mp - mn).Milliseconds()), "overhead-ms")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
