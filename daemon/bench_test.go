package daemon

import (
	"net/http"
	"strconv"
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
