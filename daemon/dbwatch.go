package daemon

import (
	"context"
	"expvar"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"
)

// dbWatch notices the audit database being deleted or replaced under the
// running daemon. SQLite keeps writing to the open (now unlinked) file,
// so without it reviews vanish while /healthz says ok.
type dbWatch struct {
	path   string
	opened os.FileInfo

	mu     sync.Mutex
	reason string
}

func newDBWatch(path string) (*dbWatch, error) {
	if path == "" {
		// A server database (PostgreSQL) has no file to lose.
		return &dbWatch{}, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("stat audit database: %w", err)
	}
	return &dbWatch{path: path, opened: fi}, nil
}

// check compares the file at path with the one opened; a failure sticks
// until restart, since the daemon cannot reopen under running workers.
func (w *dbWatch) check(log *slog.Logger) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reason != "" || w.path == "" {
		return
	}
	fi, err := os.Stat(w.path)
	switch {
	case err != nil && os.IsNotExist(err):
		w.reason = fmt.Sprintf("audit database %s was deleted or moved while the daemon had it open; reviews are being written to a file no one can read: restart the daemon", w.path)
	case err != nil:
		return // transient stat failures (EIO, EACCES) say nothing about identity
	case !os.SameFile(fi, w.opened):
		w.reason = fmt.Sprintf("audit database %s was replaced by another file while the daemon had it open: restart the daemon", w.path)
	}
	if w.reason != "" {
		log.Error("audit database lost", "path", w.path, "reason", w.reason)
	}
}

func (w *dbWatch) unhealthy() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

func (w *dbWatch) run(ctx context.Context, log *slog.Logger, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.check(log)
		}
	}
}

// gate answers /healthz with 503 and the reason once the database is
// lost, serves the process counters (aicr_runs_failed_total) as expvar
// JSON on GET /debug/vars, and otherwise leaves every request to next.
func (w *dbWatch) gate(next http.Handler, log *slog.Logger) http.Handler {
	vars := expvar.Handler()
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/vars" && r.Method == http.MethodGet {
			vars.ServeHTTP(rw, r)
			return
		}
		if r.URL.Path == "/healthz" {
			// Checked now, not at the next tick: the health answer reads
			// the store, and a new connection to a deleted path would
			// create an empty database there and hide what happened.
			w.check(log)
			if reason := w.unhealthy(); reason != "" {
				writeJSON(rw, http.StatusServiceUnavailable, map[string]string{"status": "unhealthy", "reason": reason})
				return
			}
		}
		next.ServeHTTP(rw, r)
	})
}
