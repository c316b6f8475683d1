package daemon

import (
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkIntakeAccept measures the daemon side of one hook call: verify
// the signature, check the event, commit it to the SQLite queue (WAL,
// real file) and answer 202.
func BenchmarkIntakeAccept(b *testing.B) {
	f := newIntakeFixture(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		status, body := f.post(b, eventBody("main", strconv.Itoa(i+1)), testSecret, time.Now())
		if status != http.StatusAccepted {
			b.Fatalf("HTTP %d %v", status, body)
		}
	}
}

// BenchmarkIntakeAccept64Clients is the intake under 64 concurrent hook
// calls over keep-alive HTTP: the group commit shares each fsync among
// the requests that arrive while the previous batch commits.
func BenchmarkIntakeAccept64Clients(b *testing.B) {
	f := newIntakeFixture(b)
	var rev atomic.Int64
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			status, body := f.post(b, eventBody("main", strconv.FormatInt(rev.Add(1), 10)), testSecret, time.Now())
			if status != http.StatusAccepted {
				b.Errorf("HTTP %d %v", status, body)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
